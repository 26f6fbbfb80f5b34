// The one texture copy layout engine: how a region of texel blocks is laid out in staging memory
// for a buffer-to-image copy, under an API's limits (CopyLimits), and how tightly packed rows are
// repacked into it. Every backend asks it; none computes a row pitch itself.
//
// A region is `extent` texels (width × height × depth) of `layers` array layers, in blocks of
// `block` (1×1×1 for uncompressed formats, 4×4×1 for BC/ETC2/ASTC 4x4). The caller's data is
// tightly packed: rows of ceil(width / block.width) blocks, ceil(height / block.height) rows per
// depth slice, ceil(depth / block.depth) slices per layer, then layers. In staging memory every
// row starts `row_pitch` bytes after the previous one (row_bytes rounded up to the API's row
// pitch alignment), every slice `slice_pitch` after the previous, every layer `layer_pitch`:
//
//   packed (row_bytes = 12):    staging (row_pitch = 256):
//   [r0 r0 r0][r1 r1 r1]...  ─► [r0 r0 r0 ...... pad][r1 r1 r1 ...... pad][r2 r2 r2]
//                                                                          └ copy_bytes ends
//                                                                            after the last row
//
// A copy reads `copy_bytes`: everything up to the end of the last row, whose padding it never
// reads (WebGPU and Vulkan both require only that the last row fits); `padded_bytes` also counts
// the last row's padding (a whole number of layers). For streaming a region larger than the
// staging memory at hand, a region splits by mip levels (mip_extent) and by bands of whole rows
// of blocks (rows_that_fit, row_band), each copied on its own.
//
// Everything is overflow-checked; all functions are pure and safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "staging/core/errors.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/limits.hpp"

namespace staging {

/// One texel block of a format.
struct TexelBlock {
  /// Bytes per block (> 0).
  uint32_t bytes = 4;
  /// Block extent in texels (> 0; 1 for uncompressed formats, e.g. 4 for BC).
  uint32_t width = 1;
  uint32_t height = 1;  ///< see width
  uint32_t depth = 1;   ///< see width
  /// The alignment a copy's buffer offset needs for this format before the API's own rule: 0
  /// means `bytes` (colour formats); Vulkan depth/stencil formats need 4.
  uint32_t offset_alignment = 0;
};

/// A size in texels.
struct TexelExtent {
  uint32_t width = 0;   ///< texels (> 0 for a region)
  uint32_t height = 1;  ///< texels (> 0 for a region)
  uint32_t depth = 1;   ///< texels (> 0 for a region); 1 for 2D images
};

/// Why a layout or a band cannot be made.
enum class LayoutError : uint8_t {
  /// A zero extent, layer count or block dimension, or a zero-byte block.
  Empty,
  /// A size computation overflows 64 bits (or a pitch 32 bits, where an API passes it so).
  Overflow,
  /// A band outside the region (an image or a row past its end, or no rows).
  OutOfRange,
};

/// Names of LayoutError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<LayoutError>) noexcept {
  return std::to_array<std::string_view>({"Empty", "Overflow", "OutOfRange"});
}
static_assert(enum_names_complete<LayoutError>(), "LayoutError: a value has no name");

/// Where a region's texel blocks are in staging memory. Plain data, from texture_layout().
struct TextureLayout {
  TexelBlock block;     ///< the format's block
  TexelExtent extent;   ///< the region, in texels
  uint32_t layers = 1;  ///< array layers
  /// Bytes of texel data in one row of blocks: ceil(width / block.width) * block.bytes.
  uint64_t row_bytes = 0;
  /// Rows of blocks per depth slice: ceil(height / block.height).
  uint32_t rows = 0;
  /// Depth slices of blocks per layer: ceil(depth / block.depth).
  uint32_t slices = 0;
  /// Images (a slice of a layer; what WebGPU's rowsPerImage counts rows of): slices * layers.
  uint64_t images = 0;
  /// Bytes from one row to the next in staging memory: row_bytes rounded up to
  /// lcm(limits.texture_row_pitch_alignment, block.bytes).
  uint64_t row_pitch = 0;
  /// The row pitch in texels (row_pitch / block.bytes * block.width): Vulkan's bufferRowLength.
  uint64_t row_length = 0;
  uint64_t slice_pitch = 0;  ///< row_pitch * rows
  uint64_t layer_pitch = 0;  ///< slice_pitch * slices
  /// The caller's tightly packed bytes: row_bytes * rows * images.
  uint64_t packed_bytes = 0;
  /// Staging bytes with every row padded: layer_pitch * layers.
  uint64_t padded_bytes = 0;
  /// Staging bytes a copy reads: padded_bytes less the last row's padding.
  uint64_t copy_bytes = 0;
  /// The alignment the region's staging offset needs: lcm(limits.texture_copy_alignment,
  /// block.offset_alignment, or block.bytes when that is 0).
  uint64_t offset_alignment = 1;

  /// True when the rows in staging memory are packed as tightly as the caller's.
  [[nodiscard]] bool tight() const noexcept { return row_pitch == row_bytes; }
};

/// The layout of `extent` texels × `layers` layers of a format with `block` under `limits`.
/// Errors: Empty, Overflow (also when the row pitch in texels exceeds 2^32 - 1).
///   texture_layout({37, 19, 1}, 1, {4, 1, 1}, limits with row pitch alignment 256) ==
///   {row_bytes 148, rows 19, row_pitch 256, packed 2812, padded 4864, copy 256 * 18 + 148}
[[nodiscard]] Expected<TextureLayout, LayoutError> texture_layout(
    TexelExtent extent, uint32_t layers, TexelBlock block, const CopyLimits& limits) noexcept;

/// The extent of mip level `level` of an image whose level 0 is `base`: each dimension halved
/// per level, never below 1 (a level >= 32 is 1×1×1).
[[nodiscard]] TexelExtent mip_extent(TexelExtent base, uint32_t level) noexcept;

/// A band of whole rows of blocks of one image of a region: what a streamer copies as one piece
/// when the region does not fit the staging memory at hand. Plain data, from row_band().
struct RowBand {
  uint64_t image = 0;      ///< which image: layer * slices + slice
  uint32_t layer = 0;      ///< its layer (image / slices)
  uint32_t slice = 0;      ///< its depth slice of blocks (image % slices)
  uint32_t first_row = 0;  ///< the first row of blocks, from the region's top
  uint32_t rows = 0;       ///< rows of blocks (>= 1)
  /// The band's top in texels from the region's top (first_row * block.height) and its height
  /// in texels (rows * block.height, clipped to the region's height for the last band).
  uint32_t y = 0;
  uint32_t height = 0;  ///< see y
  /// The band's depth offset in texels from the region's front (slice * block.depth) and its
  /// depth (block.depth, clipped to the region's depth).
  uint32_t z = 0;
  uint32_t depth = 0;          ///< see z
  uint64_t source_offset = 0;  ///< where its first row starts in the tightly packed data
  uint64_t source_bytes = 0;   ///< its bytes there: rows * row_bytes
  uint64_t copy_bytes = 0;     ///< its staging bytes: (rows - 1) * row_pitch + row_bytes
};

/// Rows of blocks a band of one image can hold in `bytes` of staging memory laid out as
/// `layout` (rows `row_pitch` apart, the last one unpadded): 0 when not even one row fits; at
/// most layout.rows.
[[nodiscard]] uint32_t rows_that_fit(const TextureLayout& layout, uint64_t bytes) noexcept;

/// The band of `rows` rows of blocks from `first_row` of image `image` of `layout`.
/// Errors: OutOfRange (image >= images, rows == 0, or first_row + rows > layout.rows).
[[nodiscard]] Expected<RowBand, LayoutError> row_band(const TextureLayout& layout, uint64_t image,
                                                      uint32_t first_row, uint32_t rows) noexcept;

/// Copies `rows` rows of `row_bytes` bytes from `src` (rows `src_pitch` apart) to `dst` (rows
/// `dst_pitch` apart); padding bytes in `dst` are left as they were. Preconditions: both ranges
/// hold what they are asked for, and they do not overlap.
void copy_rows(std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
               uint64_t row_bytes, uint64_t rows) noexcept;

/// Copies a region's tightly packed data (`layout.packed_bytes` at `src`) into staging memory at
/// `dst` laid out as `layout` (writing `layout.copy_bytes` at most). One memcpy when the layout
/// is tight(). Preconditions as copy_rows().
void repack_rows(std::byte* dst, const std::byte* src, const TextureLayout& layout) noexcept;

/// The same for one band: `src` is the region's packed data (the band starts at
/// band.source_offset), `dst` the band's staging memory (band.copy_bytes).
void repack_rows(std::byte* dst, const std::byte* src, const TextureLayout& layout,
                 const RowBand& band) noexcept;

}  // namespace staging
