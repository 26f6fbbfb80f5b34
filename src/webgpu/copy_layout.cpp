#include "staging/webgpu/copy_layout.hpp"

#include <cstring>

#include "staging/core/align.hpp"

namespace staging::webgpu {

std::string_view to_string(LayoutError error) noexcept {
  switch (error) {
    case LayoutError::Empty:
      return "Empty";
    case LayoutError::Overflow:
      return "Overflow";
  }
  return "?";
}

namespace {

std::optional<uint64_t> ceil_div(uint64_t value, uint64_t divisor) noexcept {
  const std::optional<uint64_t> rounded = align_up(value, divisor);
  if (!rounded) return std::nullopt;
  return *rounded / divisor;
}

}  // namespace

Expected<TextureLayout, LayoutError> texture_layout(uint64_t width, uint64_t height,
                                                    uint64_t layers, TexelBlock block,
                                                    uint64_t row_alignment) noexcept {
  if (width == 0 || height == 0 || layers == 0 || block.bytes == 0 || block.width == 0 ||
      block.height == 0) {
    return unexpected(LayoutError::Empty);
  }
  TextureLayout out;
  out.layers = layers;
  const std::optional<uint64_t> blocks_wide = ceil_div(width, block.width);
  const std::optional<uint64_t> rows = ceil_div(height, block.height);
  if (!blocks_wide || !rows) return unexpected(LayoutError::Overflow);
  out.rows = *rows;
  const std::optional<uint64_t> row_bytes = checked_mul(*blocks_wide, block.bytes);
  if (!row_bytes) return unexpected(LayoutError::Overflow);
  out.row_bytes = *row_bytes;
  const std::optional<uint64_t> padded = align_up(out.row_bytes, row_alignment);
  const std::optional<uint64_t> all_rows = checked_mul(out.rows, layers);
  if (!padded || !all_rows) return unexpected(LayoutError::Overflow);
  out.padded_row_bytes = *padded;
  const std::optional<uint64_t> packed = checked_mul(out.row_bytes, *all_rows);
  // All rows but the last are padded: padded * (all_rows - 1) + row_bytes.
  const std::optional<uint64_t> leading = checked_mul(out.padded_row_bytes, *all_rows - 1);
  if (!packed || !leading) return unexpected(LayoutError::Overflow);
  const std::optional<uint64_t> staged = checked_add(*leading, out.row_bytes);
  if (!staged) return unexpected(LayoutError::Overflow);
  out.packed_bytes = *packed;
  out.staged_bytes = *staged;
  return out;
}

std::optional<uint64_t> texture_placement_alignment(uint64_t block_bytes) noexcept {
  return lcm(MAP_OFFSET_ALIGNMENT, block_bytes);
}

std::optional<uint64_t> upload_footprint(uint64_t size, uint64_t alignment) noexcept {
  const std::optional<uint64_t> rounded = align_up(size, MAP_SIZE_ALIGNMENT);
  if (!rounded) return std::nullopt;
  return checked_add(*rounded, alignment == 0 ? 0 : alignment - 1);
}

void repack_rows(std::byte* dst, const std::byte* src, const TextureLayout& layout) noexcept {
  if (layout.padded_row_bytes == layout.row_bytes) {
    std::memcpy(dst, src, static_cast<std::size_t>(layout.packed_bytes));
    return;
  }
  const uint64_t all_rows = layout.rows * layout.layers;
  for (uint64_t r = 0; r < all_rows; ++r) {
    std::memcpy(dst + r * layout.padded_row_bytes, src + r * layout.row_bytes,
                static_cast<std::size_t>(layout.row_bytes));
  }
}

}  // namespace staging::webgpu
