// The slot ring's vocabulary: how it is sized (StagingRingConfig, validate()) and what it has
// done (StagingStats). When it gives a frame no slot, it says why with the shared UploadError
// (errors.hpp): TooLarge (the frame needs more than the largest slot), RingFull (every slot is
// Recording or InFlight) or AllocationFailed (creating, growing or replacing the picked slot's
// buffer failed; a failed creation or replacement leaves the slot Failed, to be retried by a
// later frame; a failed growth leaves the old buffer in place and the slot Ready). The slot ring —
// a handful of persistently reused staging buffers ("slots"), one frame's uploads at a time in one
// slot, reused only once the GPU is done with it — is the engine under vulkan::Ring
// (a slot ring, the default) and webgpu::StagingRing; its states are SlotState's (Empty, Ready,
// Recording, InFlight, Abandoned, Failed).
//
// SlotState: where one slot is in its frame cycle.
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
// fresh buffer; a slot InFlight is never touched by the ring. Replacing an Abandoned or Failed
// slot's buffer releases the old one, which the ring takes as read by nothing: a backend drops
// a token unfired (or abandons it) only for a frame nothing submitted reads, or where its
// buffers' release is deferred until the GPU is done with them (WebGPU); otherwise it keeps the
// token until the frame is done.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "staging/core/errors.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/limits.hpp"

namespace staging {

/// Where one slot is in its frame cycle.
enum class SlotState : uint8_t {
  /// No buffer yet: the slot is created on first use, at slot_capacity() of what the frame needs.
  Empty,
  /// Has a buffer nothing reads; the CPU may write it. The only state a frame is given.
  Ready,
  /// A frame holds the slot's lease and writes uploads into it; no copy reads it yet.
  Recording,
  /// The frame finished: copies reading the slot are (or will be) submitted; the slot waits until
  /// the GPU is done reading it (its frame's value retired by its ring, or, on WebGPU, its
  /// buffer's map callback).
  InFlight,
  /// The frame's work was dropped rather than submitted (its FenceToken was destroyed unfired or
  /// abandon() was called). The slot is taken as read by nothing: its buffer is replaced (the old
  /// one released) the next time the slot is picked. A backend lets a token go unfired only for
  /// such a frame, or where its release of a buffer waits until the GPU is done with it.
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

/// How a slot ring is sized. Defaults are the constants of limits.hpp. Plain data; validate()
/// checks it.
struct StagingRingConfig {
  /// Number of slots (1 .. STAGING_SLOTS_LIMIT): frames in flight plus the one being recorded.
  std::size_t slots = STAGING_SLOTS;
  /// Smallest slot buffer (a power of two, >= 1, <= max_slot_bytes).
  uint64_t min_slot_bytes = MIN_SLOT_BYTES;
  /// Largest slot buffer (>= min_slot_bytes, <= SLOT_BYTES_LIMIT). Slots are powers of two, so the
  /// largest slot is the largest power of two <= max_slot_bytes (or min_slot_bytes when that is
  /// larger); a frame needing more than that is refused with TooLarge, even when it needs <=
  /// max_slot_bytes.
  uint64_t max_slot_bytes = MAX_SLOT_BYTES;
};

/// Checks a StagingRingConfig; returns it unchanged when usable. Errors (CreateError), in this
/// order: NoSlots, TooManySlots, MinNotPowerOfTwo, MaxBelowMin, SlotTooLarge. Pure; safe from any
/// thread.
[[nodiscard]] Expected<StagingRingConfig, CreateError> validate(
    const StagingRingConfig& config) noexcept;

/// Counters of one slot ring since it was created. Plain data, read through
/// vulkan::Ring::stats().strategy or webgpu::StagingRing::stats() (on the ring's thread); the ring
/// never reads them to decide anything. Counters only grow, except bytes_allocated.
struct StagingStats {
  /// Frames given a slot by begin().
  uint64_t frames_begun = 0;
  /// Frames handed back with finish() (a lease dropped unfinished is not counted).
  uint64_t frames_finished = 0;
  /// Placements made by finished frames (counted at finish()).
  uint64_t placements = 0;
  /// The bytes those placements placed, without alignment padding.
  uint64_t bytes_placed = 0;
  /// Placements finished frames had refused (ZeroSize, Overflow, DoesNotFit; not Inactive).
  uint64_t placements_refused = 0;
  /// Slot buffers created for Empty slots.
  uint64_t slots_created = 0;
  /// Slot buffers grown (replaced by a larger one) for Ready slots too small for the frame.
  uint64_t slots_grown = 0;
  /// Slot buffers replaced for Abandoned or Failed slots.
  uint64_t slots_replaced = 0;
  /// Abandoned slots begin() picked (each then replaced, or left Failed if that failed).
  uint64_t abandoned_seen = 0;
  /// Failed slots begin() picked (each then replaced, or left Failed if that failed).
  uint64_t failed_seen = 0;
  /// begin() refusals: the frame exceeds the largest slot (UploadError::TooLarge).
  uint64_t refusals_too_large = 0;
  /// begin() refusals: every slot was Recording or InFlight (RingFull).
  uint64_t refusals_all_in_flight = 0;
  /// begin() refusals: creating, growing or replacing a buffer failed (AllocationFailed).
  uint64_t refusals_allocation_failed = 0;
  /// Sum of all slot buffers' capacities now.
  uint64_t bytes_allocated = 0;
  /// The highest bytes_allocated has been, counting the moment begin() holds a slot's new
  /// buffer and its old one together (growth, replacement).
  uint64_t peak_bytes_allocated = 0;

  /// All refusals together.
  [[nodiscard]] uint64_t refusals() const noexcept {
    return refusals_too_large + refusals_all_in_flight + refusals_allocation_failed;
  }
};

/// StagingStats' counters, in declaration order: the one list that formatting, comparison and
/// serialisation use (counters.hpp).
constexpr auto counters_of(std::type_identity<StagingStats>) noexcept {
  using S = StagingStats;
  constexpr CounterUnit bytes = CounterUnit::Bytes;
  return std::tuple{
      counter("frames_begun", "frames begun", &S::frames_begun),
      counter("frames_finished", "frames finished", &S::frames_finished),
      counter("placements", "placements", &S::placements),
      counter("bytes_placed", "bytes placed", &S::bytes_placed, bytes),
      counter("placements_refused", "placements refused", &S::placements_refused),
      counter("slots_created", "slots created", &S::slots_created),
      counter("slots_grown", "slots grown", &S::slots_grown),
      counter("slots_replaced", "slots replaced", &S::slots_replaced),
      counter("abandoned_seen", "abandoned slots seen", &S::abandoned_seen),
      counter("failed_seen", "failed slots seen", &S::failed_seen),
      counter("refusals_too_large", "refusals: too large", &S::refusals_too_large),
      counter("refusals_all_in_flight", "refusals: all in flight", &S::refusals_all_in_flight),
      counter("refusals_allocation_failed", "refusals: allocation failed",
              &S::refusals_allocation_failed),
      counter("bytes_allocated", "bytes allocated", &S::bytes_allocated, bytes),
      counter("peak_bytes_allocated", "peak bytes allocated", &S::peak_bytes_allocated, bytes)};
}
static_assert(counters_complete<StagingStats>(),
              "StagingStats: a member is missing from counters_of");

/// A readable multi-line table of every counter ("frames begun ......... 12"), for logs and the
/// demo: format_counters(stats). Allocates; not for a hot path.
[[nodiscard]] std::string format_stats(const StagingStats& stats);

}  // namespace staging
