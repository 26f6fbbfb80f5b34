// StagingRing's slot: one staging buffer, the fence that tracks its state, and the completion
// value its retirement waits for.
//
// Threading: the ring's owner reads and writes a slot; the fence is shared with whoever signals it
// (SlotFence's own rules).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "staging/core/timeline.hpp"
#include "staging/detail/core/slot_fence.hpp"

namespace staging::detail {

/// One slot of a StagingRing<Buffer>.
template <class Buffer>
struct RingSlot {
  std::shared_ptr<SlotFence> fence = std::make_shared<SlotFence>();
  std::optional<Buffer> buffer;
  uint64_t capacity = 0;
  FenceToken held;          ///< finish(lease, value): the token retire() fires
  TimelineValue value = 0;  ///< ... once the completed value reaches this
};

}  // namespace staging::detail
