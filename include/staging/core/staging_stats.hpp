// StagingStats: what a StagingRing has done so far — a diagnostic, never a decision input.
#pragma once

#include <cstdint>
#include <string>

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
  /// begin() refusals: every slot was Recording or InFlight after one poll (AllInFlight).
  uint64_t refusals_all_in_flight = 0;
  /// begin() refusals: creating, growing or replacing a buffer failed (AllocationFailed).
  uint64_t refusals_allocation_failed = 0;
  /// Times begin() polled the completion source because every slot was in flight.
  uint64_t polls = 0;
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

/// A readable multi-line table of every counter ("frames begun ......... 12"), for logs and the
/// demo. Allocates; not for a hot path.
[[nodiscard]] std::string format_stats(const StagingStats& stats);

}  // namespace staging
