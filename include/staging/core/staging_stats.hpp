// StagingStats: what a StagingRing has done so far — a diagnostic, never a decision input.
#pragma once

#include <cstdint>
#include <string>

namespace staging {

/// Counters of one StagingRing since it was created. Plain data, copied out by
/// StagingRing::stats(); the ring never reads them to decide anything.
struct StagingStats {
  /// Frames given a slot by begin(), and frames handed back with finish().
  uint64_t frames_begun = 0;
  uint64_t frames_finished = 0;
  /// Placements made by finished frames, the bytes they placed (without alignment padding),
  /// and placements refused because they did not fit or were invalid.
  uint64_t placements = 0;
  uint64_t bytes_placed = 0;
  uint64_t placements_refused = 0;
  /// Slot buffers created for Empty slots, grown for Ready slots too small for the frame, and
  /// replaced for Abandoned or Failed slots.
  uint64_t slots_created = 0;
  uint64_t slots_grown = 0;
  uint64_t slots_replaced = 0;
  /// Abandoned and Failed slots found by begin() (each then replaced, or still pending).
  uint64_t abandoned_seen = 0;
  uint64_t failed_seen = 0;
  /// begin() answers of "no slot", by reason: the frame exceeds the largest slot, every slot is
  /// in flight (after one poll), or creating a buffer failed.
  uint64_t refusals_too_large = 0;
  uint64_t refusals_all_in_flight = 0;
  uint64_t refusals_allocation_failed = 0;
  /// Times begin() polled the completion source because every slot was in flight.
  uint64_t polls = 0;
  /// Sum of all slot buffers' capacities now, and the highest it has been.
  uint64_t bytes_allocated = 0;
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
