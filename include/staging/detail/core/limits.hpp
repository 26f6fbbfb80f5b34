// The slot ring's default sizes and bounds, and the copy-alignment limits a backend fills from
// its device.
//
// The constants are the defaults of a ring's configuration (StagingRingConfig, CopyLimits); a
// backend overrides the alignments with what its API and device demand, so no alignment rule is
// scattered through the code as a literal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace staging {

/// How many slots a ring keeps: the swapchain's two frames in flight plus the one being recorded.
inline constexpr std::size_t STAGING_SLOTS = 3;

/// The smallest buffer a slot is ever created at (64 KiB), so a ring whose frames grow a little
/// at a time does not reallocate on every one of them. A power of two.
inline constexpr uint64_t MIN_SLOT_BYTES = uint64_t{64} << 10;

/// The largest buffer a slot is grown to (64 MiB). A frame needing more gets no slot and falls
/// back to the other route (queue writes), rather than every slot of the ring being held at a
/// size one outlier frame asked for. A power of two.
inline constexpr uint64_t MAX_SLOT_BYTES = uint64_t{64} << 20;

/// The most slots a StagingRingConfig may ask for (validate() answers TooManySlots above it). A
/// ring keeps a few words of bookkeeping per slot, and slots beyond the frames in flight only hold
/// memory; the bound keeps every total of slot bytes within 64 bits.
inline constexpr std::size_t STAGING_SLOTS_LIMIT = 256;

/// The largest slot buffer a StagingRingConfig may name (2^48 bytes, 256 TiB; validate() answers
/// SlotTooLarge above it). With at most STAGING_SLOTS_LIMIT slots, every sum of slot capacities
/// (one more buffer during a growth included) stays below 2^57.
inline constexpr uint64_t SLOT_BYTES_LIMIT = uint64_t{1} << 48;

/// The alignment a buffer-to-buffer copy's source offset is placed at by default: 4 bytes, the
/// strictest common rule (WebGPU's COPY_BUFFER_ALIGNMENT; Vulkan needs none for buffer copies).
inline constexpr uint64_t BUFFER_COPY_ALIGNMENT = 4;

/// The alignment a buffer-to-texture copy's source offset is placed at by default: 512 bytes,
/// D3D12's placement alignment, a multiple of every texel block size (1, 2, 4, 8, 16 bytes) and
/// of WebGPU's 4-byte rule. Backends lower it to what their device needs.
inline constexpr uint64_t TEXTURE_COPY_ALIGNMENT = 512;

/// Copy-alignment rules of one device, filled by a backend from the API and the device's limits.
/// Every placement the library makes for a copy is aligned by these values.
/// Plain data; the defaults are the constants above. Every field is >= 1 (a backend fills them
/// with max(1, the device's value)).
struct CopyLimits {
  /// Source-offset alignment of buffer-to-buffer copies (>= 1).
  uint64_t buffer_copy_alignment = BUFFER_COPY_ALIGNMENT;
  /// Source-offset alignment of buffer-to-texture copies before the texel-block rule (>= 1).
  uint64_t texture_copy_alignment = TEXTURE_COPY_ALIGNMENT;
  /// Row-pitch alignment of buffer-to-texture copies (WebGPU 256, D3D12 256, Vulkan 1 + optimal).
  uint64_t texture_row_pitch_alignment = 1;
  /// Flush granularity of non-coherent mapped memory (Vulkan nonCoherentAtomSize); 1 when the
  /// memory is coherent.
  uint64_t non_coherent_atom_size = 1;
};

/// The alignment a buffer-to-texture copy's source offset must have for a format whose texel
/// block is `block_bytes` bytes (4 for depth/stencil formats): lcm(texture_copy_alignment,
/// block_bytes), or none when that overflows. A `block_bytes` of 0 is treated as 1 (lcm()).
/// Pure; safe from any thread.
[[nodiscard]] std::optional<uint64_t> texture_offset_alignment(const CopyLimits& limits,
                                                               uint64_t block_bytes) noexcept;

/// The capacity a slot is created or grown at to hold `needed` bytes: the next power of two,
/// never below MIN_SLOT_BYTES; none when that exceeds MAX_SLOT_BYTES. Pure; safe from any thread.
///   slot_capacity(0) == MIN_SLOT_BYTES, slot_capacity(MIN_SLOT_BYTES + 1) == 2 * MIN_SLOT_BYTES,
///   slot_capacity(MAX_SLOT_BYTES) == MAX_SLOT_BYTES, slot_capacity(MAX_SLOT_BYTES + 1) == none.
[[nodiscard]] std::optional<uint64_t> slot_capacity(uint64_t needed) noexcept;

/// slot_capacity() with a ring's own bounds: the next power of two of `needed`, never below
/// `min_bytes`; none when the result exceeds `max_bytes`. So when max_bytes is not a power of
/// two, the largest capacity is the largest power of two <= max_bytes (or min_bytes), and a
/// `needed` between that and max_bytes gets none. Preconditions (checked by StagingRingConfig
/// validation, not here): min_bytes is a power of two and min_bytes <= max_bytes.
[[nodiscard]] std::optional<uint64_t> slot_capacity(uint64_t needed, uint64_t min_bytes,
                                                    uint64_t max_bytes) noexcept;

}  // namespace staging
