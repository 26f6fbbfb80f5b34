// SlotState: where one slot of a StagingRing is in its frame cycle.
//
//            begin()            finish()            signal()
//   Ready ───────────► Recording ───────► InFlight ─────────► Ready
//     ▲                    │ lease dropped      │ token dropped unfired / abandon()
//     │                    ▼ (no copy recorded) ▼
//     │                  Ready               Abandoned ──┐
//     │                                                  │ next pick: fresh buffer
//     │  create on first use     fail() (lost device,    ▼
//   Empty ──────────────────►    failed mapping) ──►  Failed ──► replaced on next pick ──► Ready
//
// Only a Ready slot is ever handed to a frame, grown, or (when Abandoned/Failed/Empty) given a
// fresh buffer; a slot InFlight is never touched by the ring.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "staging/detail/core/enum_names.hpp"

namespace staging {

/// Where one slot is in its frame cycle.
enum class SlotState : uint8_t {
  /// No buffer yet: the slot is created on first use, at slot_capacity() of what the frame needs.
  Empty,
  /// Has a buffer nothing reads; the CPU may write it. The only state a frame is given.
  Ready,
  /// A frame holds the slot's lease and writes uploads into it; no copy reads it yet.
  Recording,
  /// The frame finished: copies reading the slot are (or will be) submitted; the slot waits for
  /// its FenceToken to be signalled.
  InFlight,
  /// The frame's work was dropped rather than submitted (its FenceToken was destroyed unfired or
  /// abandon() was called). Nothing reads the slot; its buffer is replaced the next time the slot
  /// is picked.
  Abandoned,
  /// Allocation or mapping failed, or the device was lost. Replaced the next time it is picked.
  Failed,
};

/// Names of SlotState's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<SlotState>) noexcept {
  return std::to_array<std::string_view>(
      {"Empty", "Ready", "Recording", "InFlight", "Abandoned", "Failed"});
}
static_assert(enum_names_complete<SlotState>(), "SlotState: a value has no name");

}  // namespace staging
