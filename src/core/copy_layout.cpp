#include "staging/detail/core/copy_layout.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "staging/detail/core/align.hpp"

namespace staging {
namespace {

uint64_t ceil_div(uint64_t value, uint64_t divisor) noexcept {
  return value / divisor + (value % divisor != 0 ? 1 : 0);
}

// a * b * c, or none on overflow.
std::optional<uint64_t> product(uint64_t a, uint64_t b, uint64_t c) noexcept {
  const std::optional<uint64_t> ab = checked_mul(a, b);
  return ab ? checked_mul(*ab, c) : std::nullopt;
}

// The pitches and sizes of `l` (block counts and row_bytes set).
bool fill_pitches(TextureLayout& l, const CopyLimits& limits) noexcept {
  const std::optional<uint64_t> pitch_alignment =
      lcm(limits.texture_row_pitch_alignment, l.block.bytes);
  const std::optional<uint64_t> row_pitch =
      pitch_alignment ? align_up(l.row_bytes, *pitch_alignment) : std::nullopt;
  const uint32_t offset_rule =
      l.block.offset_alignment != 0 ? l.block.offset_alignment : l.block.bytes;
  const std::optional<uint64_t> alignment = texture_offset_alignment(limits, offset_rule);
  if (!row_pitch || !alignment) return false;
  l.row_pitch = *row_pitch;
  l.offset_alignment = *alignment;
  // In texels: row_pitch / bytes * width may pass 2^64 (a huge row pitch alignment).
  const std::optional<uint64_t> row_length =
      checked_mul(l.row_pitch / l.block.bytes, l.block.width);
  if (!row_length || *row_length > UINT32_MAX) return false;
  l.row_length = *row_length;
  const std::optional<uint64_t> slice = checked_mul(l.row_pitch, l.rows);
  const std::optional<uint64_t> layer = slice ? checked_mul(*slice, l.slices) : std::nullopt;
  const std::optional<uint64_t> padded = layer ? checked_mul(*layer, l.layers) : std::nullopt;
  const std::optional<uint64_t> packed = product(l.row_bytes, l.rows, l.images);
  if (!padded || !packed) return false;
  l.slice_pitch = *slice;
  l.layer_pitch = *layer;
  l.padded_bytes = *padded;
  l.packed_bytes = *packed;
  l.copy_bytes = l.padded_bytes - (l.row_pitch - l.row_bytes);
  return true;
}

}  // namespace

Expected<TextureLayout, LayoutError> texture_layout(TexelExtent extent, uint32_t layers,
                                                    TexelBlock block,
                                                    const CopyLimits& limits) noexcept {
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0 || layers == 0 ||
      block.bytes == 0 || block.width == 0 || block.height == 0 || block.depth == 0) {
    return unexpected(LayoutError::Empty);
  }
  TextureLayout l;
  l.block = block;
  l.extent = extent;
  l.layers = layers;
  l.row_bytes = ceil_div(extent.width, block.width) * block.bytes;  // < 2^32 * 2^32: no overflow
  l.rows = static_cast<uint32_t>(ceil_div(extent.height, block.height));
  l.slices = static_cast<uint32_t>(ceil_div(extent.depth, block.depth));
  l.images = uint64_t{l.slices} * layers;
  if (!fill_pitches(l, limits)) return unexpected(LayoutError::Overflow);
  return l;
}

TexelExtent mip_extent(TexelExtent base, uint32_t level) noexcept {
  const auto halve = [level](uint32_t v) -> uint32_t {
    return level >= 32 ? 1 : std::max<uint32_t>(1, v >> level);
  };
  return TexelExtent{halve(base.width), halve(base.height), halve(base.depth)};
}

uint32_t rows_that_fit(const TextureLayout& layout, uint64_t bytes) noexcept {
  if (bytes < layout.row_bytes || layout.row_pitch == 0) return 0;
  // (rows - 1) * row_pitch + row_bytes <= bytes
  const uint64_t rows = (bytes - layout.row_bytes) / layout.row_pitch + 1;
  return static_cast<uint32_t>(std::min<uint64_t>(rows, layout.rows));
}

Expected<RowBand, LayoutError> row_band(const TextureLayout& layout, uint64_t image,
                                        uint32_t first_row, uint32_t rows) noexcept {
  if (image >= layout.images || rows == 0 || first_row >= layout.rows ||
      rows > layout.rows - first_row) {
    return unexpected(LayoutError::OutOfRange);
  }
  const TexelBlock& b = layout.block;
  RowBand band;
  band.image = image;
  band.layer = static_cast<uint32_t>(image / layout.slices);
  band.slice = static_cast<uint32_t>(image % layout.slices);
  band.first_row = first_row;
  band.rows = rows;
  band.y = first_row * b.height;  // < rows * block.height <= height + block.height
  band.height = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{rows} * b.height, layout.extent.height - band.y));
  band.z = band.slice * b.depth;
  band.depth = std::min(b.depth, layout.extent.depth - band.z);
  // Inside the packed data (packed_bytes did not overflow): no overflow here.
  band.source_offset = (image * layout.rows + first_row) * layout.row_bytes;
  band.source_bytes = uint64_t{rows} * layout.row_bytes;
  band.copy_bytes = uint64_t{rows - 1} * layout.row_pitch + layout.row_bytes;
  return band;
}

void copy_rows(std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
               uint64_t row_bytes, uint64_t rows) noexcept {
  if (dst_pitch == row_bytes && src_pitch == row_bytes) {
    std::memcpy(dst, src, static_cast<std::size_t>(row_bytes * rows));
    return;
  }
  for (uint64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * dst_pitch, src + r * src_pitch, static_cast<std::size_t>(row_bytes));
  }
}

void repack_rows(std::byte* dst, const std::byte* src, const TextureLayout& layout) noexcept {
  // Slices follow each other at row_pitch * rows: every image's rows are one run of rows.
  copy_rows(dst, layout.row_pitch, src, layout.row_bytes, layout.row_bytes,
            uint64_t{layout.rows} * layout.images);
}

void repack_rows(std::byte* dst, const std::byte* src, const TextureLayout& layout,
                 const RowBand& band) noexcept {
  copy_rows(dst, layout.row_pitch, src + band.source_offset, layout.row_bytes, layout.row_bytes,
            band.rows);
}

}  // namespace staging
