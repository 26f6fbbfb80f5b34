// WebGPU's copy rules: the alignments, as the core's CopyLimits, that place uploads in a slot and
// lay texture rows out there (the layout itself is the core's one engine, copy_layout.hpp). No
// dependency on webgpu.h, so host tests (g++) check it too.
//
// A texture upload arrives tightly packed; WebGPU's buffer-to-texture copy wants every row to
// start at a multiple of 256 bytes, so the rows are repacked into the slot with padding, and the
// copy reads TextureLayout::copy_bytes (the last row unpadded). All functions are pure and safe
// from any thread.
#pragma once

#include <cstdint>
#include <optional>

#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/core/limits.hpp"

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

/// The alignment a buffer upload is placed at in a slot: lcm(COPY_BUFFER_ALIGNMENT,
/// MAP_OFFSET_ALIGNMENT) == 8.
inline constexpr uint64_t BUFFER_PLACEMENT_ALIGNMENT = 8;

/// WebGPU's rules as the core's CopyLimits: buffer uploads at 8, texture uploads at
/// lcm(8, block bytes) (a mapped range's start and the texel block), rows 256 bytes apart.
/// texture_layout(extent, layers, block, COPY_LIMITS) is a texture upload's slot layout.
inline constexpr CopyLimits COPY_LIMITS{
    .buffer_copy_alignment = BUFFER_PLACEMENT_ALIGNMENT,
    .texture_copy_alignment = MAP_OFFSET_ALIGNMENT,
    .texture_row_pitch_alignment = COPY_BYTES_PER_ROW_ALIGNMENT,
    .non_coherent_atom_size = 1,
};

/// The most slot bytes one upload of `size` bytes at `alignment` can take in a frame, padding
/// for the worst-case cursor included: size rounded to MAP_SIZE_ALIGNMENT, plus alignment - 1.
/// Sum these to size StagingRing::begin()'s `needed`. None on overflow.
[[nodiscard]] std::optional<uint64_t> upload_footprint(uint64_t size, uint64_t alignment) noexcept;

}  // namespace staging::webgpu
