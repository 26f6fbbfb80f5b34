// Cutting uploads into pieces: see include/staging/detail/core/upload_pieces.hpp. Every image
// layout is the copy layout engine's (copy_layout.hpp); this file only decides where a piece ends.
#include "staging/detail/core/upload_pieces.hpp"

#include <algorithm>

#include "staging/detail/core/align.hpp"
#include "staging/detail/core/assert.hpp"

namespace staging {
namespace {

bool levels_out_of_range(const ImageShape& s) noexcept {
  return s.base_level >= 32 || s.levels > 32 - s.base_level;
}

// The layout of `layers` layers of a region of `extent` of shape `s`.
Expected<TextureLayout, LayoutError> region(const ImageShape& s, TexelExtent extent,
                                            uint32_t layers, const CopyLimits& limits) noexcept {
  return texture_layout(extent, layers, s.block, limits);
}

}  // namespace

Expected<LevelLayout, LayoutError> level_layout(const ImageShape& shape, uint32_t level,
                                                const CopyLimits& limits) noexcept {
  if (shape.levels == 0) return unexpected(LayoutError::Empty);
  if (levels_out_of_range(shape) || level < shape.base_level ||
      level >= shape.base_level + shape.levels) {
    return unexpected(LayoutError::OutOfRange);
  }
  uint64_t offset = 0;
  for (uint32_t l = shape.base_level; l < level; ++l) {
    const auto before = region(shape, mip_extent(shape.extent, l), shape.layers, limits);
    if (!before) return unexpected(before.error());
    const auto sum = checked_add(offset, before->packed_bytes);
    if (!sum) return unexpected(LayoutError::Overflow);
    offset = *sum;
  }
  const auto layout = region(shape, mip_extent(shape.extent, level), shape.layers, limits);
  if (!layout) return unexpected(layout.error());
  if (!checked_add(offset, layout->packed_bytes)) return unexpected(LayoutError::Overflow);
  return LevelLayout{*layout, offset};
}

Expected<uint64_t, LayoutError> image_bytes(const ImageShape& shape) noexcept {
  if (shape.levels == 0) return unexpected(LayoutError::Empty);
  if (levels_out_of_range(shape)) return unexpected(LayoutError::OutOfRange);
  const auto last = level_layout(shape, shape.base_level + shape.levels - 1);
  if (!last) return unexpected(last.error());
  return last->offset + last->layout.packed_bytes;
}

Expected<PieceCursor, LayoutError> PieceCursor::buffer(uint64_t bytes, uint64_t dst_offset,
                                                       uint64_t granule) noexcept {
  if (bytes == 0) return unexpected(LayoutError::Empty);
  if (!checked_add(dst_offset, bytes)) return unexpected(LayoutError::Overflow);
  PieceCursor c;
  c.total_ = bytes;
  c.dst_offset_ = dst_offset;
  c.granule_ = std::max<uint64_t>(granule, 1);
  return c;
}

Expected<PieceCursor, LayoutError> PieceCursor::image(const ImageShape& shape,
                                                      const CopyLimits& limits) noexcept {
  const auto total = image_bytes(shape);
  if (!total) return unexpected(total.error());
  // Every level under the limits too (a padded row pitch may overflow where packed rows do not).
  const auto last = level_layout(shape, shape.base_level + shape.levels - 1, limits);
  if (!last) return unexpected(last.error());
  PieceCursor c;
  c.shape_ = shape;
  c.limits_ = limits;
  c.total_ = *total;
  c.image_ = true;
  c.alignment_ = last->layout.offset_alignment;
  c.level_ = shape.base_level;
  return c;
}

std::optional<UploadPiece> PieceCursor::next(uint64_t budget) noexcept {
  if (done()) return std::nullopt;
  auto piece = image_ ? next_image(budget) : next_buffer(budget);
  if (piece) {
    piece->first = piece->source_offset == 0;
    cut_ += piece->bytes;
    piece->last = done();
  }
  return piece;
}

uint64_t PieceCursor::smallest_next() const noexcept {
  if (done()) return 0;
  if (!image_) return std::min(granule_, total_ - cut_);
  return level_layout(shape_, level_, limits_)->layout.row_bytes;
}

std::optional<UploadPiece> PieceCursor::next_buffer(uint64_t budget) noexcept {
  const uint64_t left = total_ - cut_;
  uint64_t bytes = left;
  if (budget < left) {
    bytes = budget / granule_ * granule_;
    if (bytes == 0) return std::nullopt;
  }
  UploadPiece p;
  p.source_offset = cut_;
  p.bytes = bytes;
  p.staging_bytes = bytes;
  p.dst_offset = dst_offset_ + cut_;
  return p;
}

std::optional<UploadPiece> PieceCursor::next_image(uint64_t budget) noexcept {
  const LevelLayout ll = *level_layout(shape_, level_, limits_);
  const TextureLayout& l = ll.layout;
  const TexelBlock& b = shape_.block;
  const TexelExtent e = l.extent;
  // How many of something (a layer, a slice, a row) of `pitch` bytes apart fit, the last one
  // taking `one` bytes: 0 when not even one does, else at most `left`.
  const auto fitting = [budget](uint64_t one, uint64_t pitch, uint64_t left) -> uint32_t {
    if (budget < one) return 0;
    return static_cast<uint32_t>(std::min<uint64_t>(left, 1 + (budget - one) / pitch));
  };
  const auto clip = [](uint32_t first, uint32_t count, uint32_t block, uint32_t edge) {
    return std::min(edge - first * block, count * block);
  };
  UploadPiece p;
  p.source_offset = cut_;
  p.image.level = level_;
  p.image.width = e.width;
  p.image.base_layer = shape_.base_layer + layer_;
  p.image.y = row_ * b.height;
  p.image.z = slice_ * b.depth;
  // The staging bytes of one layer and of one slice: their pitch less the last row's padding.
  const uint64_t pad = l.row_pitch - l.row_bytes;
  bool next_level = false;
  uint32_t layers = 1;
  TexelExtent extent = e;
  if (layer_ == 0 && slice_ == 0 && row_ == 0 && l.copy_bytes <= budget) {
    layers = shape_.layers;  // the whole level, every layer
    next_level = true;
  } else if (uint32_t n = 0;
             slice_ == 0 && row_ == 0 &&
             (n = fitting(l.layer_pitch - pad, l.layer_pitch, shape_.layers - layer_)) > 0) {
    layers = n;  // whole layers
    layer_ += n;
  } else if (n = row_ == 0 ? fitting(l.slice_pitch - pad, l.slice_pitch, l.slices - slice_) : 0;
             n > 0) {
    extent.depth = clip(slice_, n, b.depth, e.depth);  // whole depth slices of this layer
    slice_ += n;
  } else {
    n = std::min(rows_that_fit(l, budget), l.rows - row_);  // a band of rows of this slice
    if (n == 0) return std::nullopt;
    extent.height = clip(row_, n, b.height, e.height);
    extent.depth = clip(slice_, 1, b.depth, e.depth);
    row_ += n;
  }
  p.image.layers = layers;
  p.image.height = extent.height;
  p.image.depth = extent.depth;
  p.image.layout = *texture_layout(extent, layers, b, limits_);
  p.bytes = p.image.layout.packed_bytes;
  p.staging_bytes = p.image.layout.copy_bytes;
  STAGING_ASSERT(p.staging_bytes <= budget, "a piece larger than its budget");
  // Carry: rows into slices, slices into layers, layers into levels.
  if (row_ == l.rows) {
    row_ = 0;
    ++slice_;
  }
  if (slice_ == l.slices) {
    slice_ = 0;
    ++layer_;
  }
  if (layer_ == shape_.layers || next_level) {
    layer_ = slice_ = row_ = 0;
    ++level_;
  }
  return p;
}

}  // namespace staging
