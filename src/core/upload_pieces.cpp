// Cutting uploads into pieces: see include/staging/core/upload_pieces.hpp.
#include "staging/core/upload_pieces.hpp"

#include <algorithm>

#include "staging/core/align.hpp"

namespace staging {
namespace {

uint32_t blocks(uint32_t texels, uint32_t block) noexcept {
  return texels / block + (texels % block != 0 ? 1 : 0);
}

uint32_t level_extent(uint32_t extent, uint32_t level) noexcept {
  return std::max<uint32_t>(1, extent >> level);
}

bool shape_empty(const ImageShape& s) noexcept {
  return s.block.bytes == 0 || s.block.width == 0 || s.block.height == 0 || s.block.depth == 0 ||
         s.width == 0 || s.height == 0 || s.depth == 0 || s.levels == 0 || s.layers == 0;
}

// Level `level`'s layout without its offset.
Expected<LevelLayout, ShapeError> level_size(const ImageShape& s, uint32_t level) noexcept {
  LevelLayout l;
  l.width = level_extent(s.width, level);
  l.height = level_extent(s.height, level);
  l.depth = level_extent(s.depth, level);
  l.rows = blocks(l.height, s.block.height);
  l.slices = blocks(l.depth, s.block.depth);
  const auto row = checked_mul(blocks(l.width, s.block.width), s.block.bytes);
  const auto slice = row ? checked_mul(*row, l.rows) : std::nullopt;
  const auto layer = slice ? checked_mul(*slice, l.slices) : std::nullopt;
  const auto all = layer ? checked_mul(*layer, s.layers) : std::nullopt;
  if (!all) return unexpected(ShapeError::OutOfRange);
  l.row_bytes = *row;
  l.slice_bytes = *slice;
  l.layer_bytes = *layer;
  l.bytes = *all;
  return l;
}

}  // namespace

Expected<LevelLayout, ShapeError> level_layout(const ImageShape& shape, uint32_t level) noexcept {
  if (shape_empty(shape)) return unexpected(ShapeError::Empty);
  if (shape.base_level >= 32 || shape.levels > 32 - shape.base_level || level < shape.base_level ||
      level >= shape.base_level + shape.levels) {
    return unexpected(ShapeError::OutOfRange);
  }
  uint64_t offset = 0;
  for (uint32_t l = shape.base_level; l < level; ++l) {
    const auto size = level_size(shape, l);
    if (!size) return size;
    const auto sum = checked_add(offset, size->bytes);
    if (!sum) return unexpected(ShapeError::OutOfRange);
    offset = *sum;
  }
  auto layout = level_size(shape, level);
  if (!layout) return layout;
  if (!checked_add(offset, layout->bytes)) return unexpected(ShapeError::OutOfRange);
  layout->offset = offset;
  return layout;
}

Expected<uint64_t, ShapeError> image_bytes(const ImageShape& shape) noexcept {
  if (shape_empty(shape)) return unexpected(ShapeError::Empty);
  if (shape.base_level >= 32 || shape.levels > 32 - shape.base_level) {
    return unexpected(ShapeError::OutOfRange);
  }
  const auto last = level_layout(shape, shape.base_level + shape.levels - 1);
  if (!last) return unexpected(last.error());
  return last->offset + last->bytes;
}

Expected<PieceCursor, ShapeError> PieceCursor::buffer(uint64_t bytes, uint64_t dst_offset,
                                                      uint64_t granule) noexcept {
  if (bytes == 0) return unexpected(ShapeError::Empty);
  if (!checked_add(dst_offset, bytes)) return unexpected(ShapeError::OutOfRange);
  PieceCursor c;
  c.total_ = bytes;
  c.dst_offset_ = dst_offset;
  c.granule_ = std::max<uint64_t>(granule, 1);
  return c;
}

Expected<PieceCursor, ShapeError> PieceCursor::image(const ImageShape& shape) noexcept {
  const auto total = image_bytes(shape);
  if (!total) return unexpected(total.error());
  PieceCursor c;
  c.shape_ = shape;
  c.total_ = *total;
  c.image_ = true;
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
  return level_size(shape_, level_)->row_bytes;
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
  p.dst_offset = dst_offset_ + cut_;
  return p;
}

std::optional<UploadPiece> PieceCursor::next_image(uint64_t budget) noexcept {
  const LevelLayout l = *level_layout(shape_, level_);
  const BlockShape& b = shape_.block;
  UploadPiece p;
  p.source_offset = cut_;
  p.image.level = level_;
  p.image.width = l.width;
  p.image.base_layer = shape_.base_layer + layer_;
  p.image.layers = 1;
  p.image.z = slice_ * b.depth;
  p.image.y = row_ * b.height;
  const auto rows_to_texels = [&](uint32_t first, uint32_t count) {
    return std::min(l.height - first * b.height, count * b.height);
  };
  const auto slices_to_texels = [&](uint32_t first, uint32_t count) {
    return std::min(l.depth - first * b.depth, count * b.depth);
  };
  bool next_level = false;
  if (layer_ == 0 && slice_ == 0 && row_ == 0 && l.bytes <= budget) {
    // The whole level, every layer.
    p.bytes = l.bytes;
    p.image.layers = shape_.layers;
    p.image.height = l.height;
    p.image.depth = l.depth;
    next_level = true;
  } else if (slice_ == 0 && row_ == 0 && l.layer_bytes <= budget) {
    // Whole layers of this level.
    const auto n =
        static_cast<uint32_t>(std::min<uint64_t>(budget / l.layer_bytes, shape_.layers - layer_));
    p.bytes = n * l.layer_bytes;
    p.image.layers = n;
    p.image.height = l.height;
    p.image.depth = l.depth;
    layer_ += n;
  } else if (row_ == 0 && l.slice_bytes <= budget) {
    // Whole depth slices of this layer.
    const auto n =
        static_cast<uint32_t>(std::min<uint64_t>(budget / l.slice_bytes, l.slices - slice_));
    p.bytes = n * l.slice_bytes;
    p.image.height = l.height;
    p.image.depth = slices_to_texels(slice_, n);
    slice_ += n;
  } else if (l.row_bytes <= budget) {
    // Rows of blocks of this slice.
    const auto n = static_cast<uint32_t>(std::min<uint64_t>(budget / l.row_bytes, l.rows - row_));
    p.bytes = n * l.row_bytes;
    p.image.height = rows_to_texels(row_, n);
    p.image.depth = std::min(l.depth - slice_ * b.depth, b.depth);
    row_ += n;
  } else {
    return std::nullopt;
  }
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
    layer_ = 0;
    slice_ = 0;
    row_ = 0;
    ++level_;
  }
  return p;
}

}  // namespace staging
