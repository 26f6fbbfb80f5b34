// WebGPU's copy rules as plain arithmetic: where an upload is placed in a slot and how texture
// rows are laid out there. No dependency on webgpu.h, so host tests (g++) check it too.
//
// A texture upload arrives tightly packed (row after row, image after image). WebGPU's
// buffer-to-texture copy wants every row to start at a multiple of 256 bytes, so the rows are
// repacked into the slot with padding:
//
//   source (row_bytes = 12):     slot (padded_row_bytes = 256):
//   [r0 r0 r0][r1 r1 r1]...  ─►  [r0 r0 r0 ........ 244 pad][r1 r1 r1 ........][r2 r2 r2]
//                                                                               └ last row unpadded
//
// The last row of the last image is not padded (WebGPU requires only that it fits), so a one-row
// upload takes row_bytes, not 256. Everything is overflow-checked; all functions are pure and safe
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "staging/core/expected.hpp"

namespace staging::webgpu {

/// WebGPU's COPY_BUFFER_ALIGNMENT: buffer-copy offsets and sizes, and queue-write sizes, are
/// multiples of 4.
inline constexpr uint64_t COPY_BUFFER_ALIGNMENT = 4;
/// WebGPU's COPY_BYTES_PER_ROW_ALIGNMENT: bytesPerRow of a buffer-texture copy is a multiple of
/// 256.
inline constexpr uint64_t COPY_BYTES_PER_ROW_ALIGNMENT = 256;
/// getMappedRange's rule: a mapped range starts at a multiple of 8 ...
inline constexpr uint64_t MAP_OFFSET_ALIGNMENT = 8;
/// ... and its size is a multiple of 4.
inline constexpr uint64_t MAP_SIZE_ALIGNMENT = 4;

/// One texel block of a texture format: its bytes and its size in texels (1×1 for uncompressed
/// formats, 4×4 for BC/ETC2/ASTC 4x4).
struct TexelBlock {
  uint32_t bytes = 4;   ///< bytes per block (> 0)
  uint32_t width = 1;   ///< block width in texels (> 0)
  uint32_t height = 1;  ///< block height in texels (> 0)
};

/// How a width × height × layers texture region is laid out, tightly packed and in the slot.
struct TextureLayout {
  /// Bytes of one row of blocks, tightly packed: ceil(width / block.width) * block.bytes.
  uint64_t row_bytes = 0;
  /// Rows of blocks per image: ceil(height / block.height).
  uint64_t rows = 0;
  /// Images (depth slices or array layers).
  uint64_t layers = 0;
  /// The caller's tightly packed size: row_bytes * rows * layers.
  uint64_t packed_bytes = 0;
  /// bytesPerRow in the slot: row_bytes rounded up to the row alignment.
  uint64_t padded_row_bytes = 0;
  /// Bytes the copy reads from the slot: padded rows, the very last row unpadded.
  uint64_t staged_bytes = 0;
};

/// Why a layout or placement cannot be made.
enum class LayoutError : uint8_t {
  /// A zero width, height, layer count or block dimension, or a zero-byte block.
  Empty,
  /// A size computation overflows 64 bits.
  Overflow,
};

/// The error's name, e.g. "Overflow". Never null; "?" for values outside the enum.
[[nodiscard]] std::string_view to_string(LayoutError error) noexcept;

/// The layout of a width × height × layers region (in texels) of a format with `block`, with
/// rows padded to `row_alignment` (0 is treated as 1; WebGPU uses 256).
/// Errors: Empty, Overflow.
///   texture_layout(37, 19, 1, {4,1,1}) == {row_bytes 148, rows 19, layers 1, packed 2812,
///                                          padded_row 256, staged 256*18 + 148 = 4756}
[[nodiscard]] Expected<TextureLayout, LayoutError> texture_layout(
    uint64_t width, uint64_t height, uint64_t layers, TexelBlock block,
    uint64_t row_alignment = COPY_BYTES_PER_ROW_ALIGNMENT) noexcept;

/// The alignment a texture upload is placed at in a slot: lcm(getMappedRange's 8, block bytes).
/// None on overflow (never for real formats). `block_bytes` 0 is treated as 1.
[[nodiscard]] std::optional<uint64_t> texture_placement_alignment(uint64_t block_bytes) noexcept;

/// The alignment a buffer upload is placed at in a slot: lcm(COPY_BUFFER_ALIGNMENT,
/// MAP_OFFSET_ALIGNMENT) == 8.
inline constexpr uint64_t BUFFER_PLACEMENT_ALIGNMENT = 8;

/// The most slot bytes one upload of `size` bytes at `alignment` can take in a frame, padding
/// for the worst-case cursor included: size rounded to MAP_SIZE_ALIGNMENT, plus alignment - 1.
/// Sum these to size StagingRing::begin()'s `needed`. None on overflow.
[[nodiscard]] std::optional<uint64_t> upload_footprint(uint64_t size, uint64_t alignment) noexcept;

/// Copies `layout.packed_bytes` tightly packed bytes from `src` into `dst` with rows
/// `layout.padded_row_bytes` apart (writing `layout.staged_bytes` bytes at most; padding bytes
/// are left as they were). Preconditions: `layout` came from texture_layout(); `src` holds
/// packed_bytes and `dst` staged_bytes; they do not overlap.
void repack_rows(std::byte* dst, const std::byte* src, const TextureLayout& layout) noexcept;

}  // namespace staging::webgpu
