// Looking inside a Vulkan Ring's strategy: which slot is in which state, the byte ring itself.
// For the library's tests and tools; an application reads Ring::stats() instead, which answers
// for either strategy.
//
// Threading: as the Ring's own const members (the thread that owns the ring, or under its lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "staging/core/byte_ring.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan::detail {

/// One slot of a slot-ring Ring, as it is now.
struct SlotInfo {
  SlotState state = SlotState::Empty;  ///< its state
  uint64_t capacity = 0;               ///< its buffer's bytes (0 without a buffer)
};

/// A slot ring: the number of slots (StagingRingConfig::slots); 0 for a byte ring.
[[nodiscard]] std::size_t slot_count(const Ring& ring) noexcept;
/// A slot ring: slot `index`'s state and capacity now; none for a byte ring or an index >=
/// slot_count(ring).
[[nodiscard]] std::optional<SlotInfo> slot(const Ring& ring, std::size_t index);
/// A byte ring: the byte ring itself (free bytes, live reservations, ...); null for a slot ring.
[[nodiscard]] const ByteRing* byte_ring(const Ring& ring) noexcept;

}  // namespace staging::vulkan::detail
