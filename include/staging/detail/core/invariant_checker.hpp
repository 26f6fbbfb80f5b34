// InvariantChecker: proves invariants I1–I5 of docs/safety.md on a stream of reservations, with a
// model of its own — never with the allocator's bookkeeping.
//
// The model: per region, the byte intervals the GPU may still read. An interval enters with
// on_reserve() and stays live until a completed value >= its token has been reported
// (on_completed) or it is cancelled (on_cancel) — whatever the ring believes. Against that model
// it checks:
//   I1  a new reservation overlaps no live interval (after wraparound, under any queue delay), and
//       no region is destroyed while an interval in it is live;
//   I2  offset % alignment == 0, size > 0, and offset + size does not overflow 64 bits;
//   I3  a reservation is reclaimed (on_reclaim) only once the completed value >= its token (or
//       after it was cancelled);
//   I4  offset + size <= the region's bytes (a reservation never extends into its neighbour or
//       past its region), and the region exists;
//   I5  the bytes of all live regions stay <= the cap.
// (I6, the bounded exhaustion policy, is a property of the ring's answers, proven by tests.)
//
// Usable on its own: backend tests feed it the reservations a real ring hands out and the
// completed values their queue reports; staging-sim runs it in Record mode and counts violations.
// ByteRing feeds one on every operation when ByteRingConfig::check_invariants is set (or
// ByteRingDeps::checker is given).
//
// Modes: Abort prints the violation (naming both reservations where two are involved) and aborts
// — for tests and debug builds. Record keeps the same message and continues — for the simulator
// and for tests that prove a violation is detected.
//
// Cost: a map lookup or two per call and a scan of the overlapping neighbours; allocates. Not for
// a release hot path. Threading: not synchronised; one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/checker_region.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging {

/// The invariants the checker proves (docs/safety.md).
enum class Invariant : uint8_t {
  /// I1: no reservation overlaps bytes the GPU may still read; no region is destroyed under one.
  I1_NoOverlap,
  /// I2: offset % alignment == 0, size > 0, offset + size does not overflow.
  I2_AlignedNoOverflow,
  /// I3: bytes are reclaimed only once their token has completed (or they were cancelled).
  I3_ReclaimAfterCompletion,
  /// I4: a reservation lies inside an existing region (and a live region is not re-created).
  I4_InBounds,
  /// I5: the bytes of all regions stay <= the cap.
  I5_UnderCap,
};

/// Names of Invariant's values, in order: "I1", "I2", ... (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<Invariant>) noexcept {
  return std::to_array<std::string_view>({"I1", "I2", "I3", "I4", "I5"});
}
static_assert(enum_names_complete<Invariant>(), "Invariant: a value has no name");

/// One violation: which invariant, and a message naming the reservation(s) involved, e.g.
/// "I1 violated: reservation #12 (region 0, bytes [64, 128), align 16, token 7, owner 3) overlaps
/// live reservation #9 (region 0, bytes [100, 200), align 1, token 5, owner 1); completed 4".
struct Violation {
  /// The invariant broken.
  Invariant invariant = Invariant::I1_NoOverlap;
  /// "I1 violated: ..." as printed in Abort mode.
  std::string message;
};

/// The checker. See the file comment for the model, the modes, the cost and the threading.
/// Ownership: a plain value (copyable); owns its model and messages, references nothing.
class InvariantChecker {
 public:
  /// What a violation does.
  enum class Mode : uint8_t {
    /// Print the message to stderr and abort.
    Abort,
    /// Keep the message in violations() and continue.
    Record,
  };

  /// A checker with the given mode and cap on the bytes of all regions (I5; UINT64_MAX: none).
  explicit InvariantChecker(Mode mode = Mode::Abort, uint64_t cap = UINT64_MAX);

  /// Sets the cap (I5), checked at the next region creation.
  void set_cap(uint64_t cap) noexcept { cap_ = cap; }

  /// A region of `bytes` bytes now exists. Checks I5 (held <= cap). Re-creating a live region is
  /// reported as I4 (its old intervals would dangle) and replaces it.
  void on_region_created(uint32_t region, uint64_t bytes);
  /// A region's memory is released. Checks I1: no live interval is in it (the GPU would read freed
  /// memory). Its intervals are dropped. An unknown region is ignored.
  void on_region_destroyed(uint32_t region);
  /// Drops a region and its intervals without any check (the owner guarantees the GPU is done,
  /// e.g. a ring destroyed after waiting for its newest token). An unknown region is ignored.
  void forget_region(uint32_t region) noexcept;

  /// A reservation was handed out. Checks I2, I4 and I1 against every live interval; then the
  /// reservation is live until on_completed(>= token) or on_cancel — unless its token has
  /// already completed (token <= completed(): never live). A reservation that overlaps or ends
  /// past its region is still recorded as live (the caller will write it, the GPU will read
  /// it); one whose end overflows or whose region does not exist is not (there is no interval
  /// to record). An id already live is reported (I1) and replaced.
  void on_reserve(const Reservation& reservation);
  /// The queue reports `completed` (a lower value than one seen before is ignored). Every live
  /// interval with token <= completed is no longer read by the GPU.
  void on_completed(TimelineValue completed);
  /// The reservation will never be read (never submitted): it is no longer live.
  void on_cancel(uint64_t id);
  /// The ring reclaimed a reservation's bytes. Checks I3: it is no longer live (its token has
  /// completed, or it was cancelled). A reclaimed live interval stays live in the model — the GPU
  /// still reads it — so later overlaps with it are reported as I1 too. Unknown ids (already
  /// completed) are fine.
  void on_reclaim(uint64_t id);

  /// Reports a violation found elsewhere (e.g. by a backend's own check) in the checker's mode.
  void report(Invariant invariant, std::string message);

  /// The mode given at construction.
  [[nodiscard]] Mode mode() const noexcept { return mode_; }
  /// The cap checked by I5 (UINT64_MAX: none).
  [[nodiscard]] uint64_t cap() const noexcept { return cap_; }
  /// Bytes of all regions known to exist now (saturating at 2^64 - 1, which is above any cap).
  [[nodiscard]] uint64_t held_bytes() const noexcept { return held_; }
  /// Live (GPU-referenced) intervals now.
  [[nodiscard]] uint64_t live() const noexcept { return live_.size(); }
  /// The highest completed value reported.
  [[nodiscard]] TimelineValue completed() const noexcept { return completed_; }
  /// Reservations checked so far.
  [[nodiscard]] uint64_t checks() const noexcept { return checks_; }
  /// Record mode: every violation so far, oldest first.
  [[nodiscard]] const std::vector<Violation>& violations() const noexcept { return violations_; }
  /// Record mode: the number of violations of one invariant (0 in Abort mode: none survives).
  [[nodiscard]] uint64_t count(Invariant invariant) const noexcept;

  /// "reservation #12 (region 0, bytes [64, 128), align 16, token 7, owner 3)" (plus "skipped N"
  /// and "fallback" when they apply). Allocates.
  [[nodiscard]] static std::string describe(const Reservation& reservation);

 private:
  using RegionModel = detail::CheckerRegion;
  void remove_live(uint64_t id);
  void violate(Invariant invariant, std::string message);

  Mode mode_;
  uint64_t cap_;
  uint64_t held_ = 0;
  TimelineValue completed_ = 0;
  uint64_t checks_ = 0;
  std::map<uint32_t, RegionModel> regions_;
  std::unordered_map<uint64_t, Reservation> live_;
  std::multimap<TimelineValue, uint64_t> by_token_;  // token -> id of live intervals
  std::vector<Violation> violations_;
  uint64_t counts_[enum_count<Invariant>] = {};
};

}  // namespace staging
