// StagingObserver: sees every range of staging memory a Ring hands to the CPU, the point after
// which the GPU no longer reads it, and when the ring considers it free again. The validation
// layer cannot see host writes into memory a queued copy still reads; an observer can check
// exactly that (invariants I1, I4) against the semaphore's real value.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>

#include "staging/detail/core/enum_names.hpp"

namespace staging::vulkan {

struct RetirementPoint;

/// Why the ring released a frame's staging memory.
enum class Release : uint8_t {
  /// Its point was reached (or superseded by a later value on the same semaphore).
  Retired,
  /// Reported with Ring::abandon().
  Abandoned,
  /// The device was lost.
  Failed,
  /// The frame was destroyed unfinished (nothing was recorded).
  Dropped,
};

/// Names of Release's values, in order (staging::to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<Release>) noexcept {
  return std::to_array<std::string_view>({"Retired", "Abandoned", "Failed", "Dropped"});
}
static_assert(enum_names_complete<Release>(), "Release: a value has no name");

/// Receives a Ring's staging events. A passive observer: implementations must not call the ring.
/// Threading: called on the ring's thread, inside the ring's calls.
class StagingObserver {
 public:
  virtual ~StagingObserver() = default;
  /// Frame `frame` is about to let the CPU write bytes [offset, offset + size) of staging buffer
  /// `buffer` (of `capacity` bytes: a slot, a byte-ring region, or a one-off buffer). Not
  /// called for vkCmdUpdateBuffer data (it lives in host memory, not staging memory).
  virtual void on_write(uint64_t frame, VkBuffer buffer, uint64_t capacity, uint64_t offset,
                        uint64_t size) = 0;
  /// Frame `frame` was recorded; the GPU reads its staging bytes until `point` is reached.
  virtual void on_finish(uint64_t frame, const RetirementPoint& point) = 0;
  /// The ring no longer holds frame `frame`'s staging bytes for it and may hand them out again.
  virtual void on_release(uint64_t frame, Release why) = 0;
};

}  // namespace staging::vulkan
