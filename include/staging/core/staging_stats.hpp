// StagingStats: what a StagingRing has done so far — a diagnostic, never a decision input.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "staging/detail/core/counters.hpp"

namespace staging {

/// Counters of one StagingRing since it was created. Plain data, read through
/// StagingRing::stats() (a reference: read it on the ring's thread); the ring never reads them to
/// decide anything. Counters only grow, except bytes_allocated.
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
  /// begin() refusals: the frame exceeds the largest slot (Refusal::TooLarge).
  uint64_t refusals_too_large = 0;
  /// begin() refusals: every slot was Recording or InFlight (AllInFlight).
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
