// RingObserver: the ByteRing's timeline. Every placement, reclamation, wrap, wait, split, grow,
// trim, fallback and refusal is reported as one event, stamped with the ring's Clock (so a fake
// clock gives a deterministic timeline). staging-sim turns these into a Chrome trace and an SVG
// plot; a backend can forward them to its own profiler.
//
// Every event that says "the bytes were not there" (would-block, wait, split, fallback, timeout,
// cap refusal) carries its BlockCause: InFlight (the GPU still holds the bytes), Fragmentation
// (enough bytes are free, but not contiguous) or Cap (the cap, or the request's size, forbids it).
//
// Cost: the ring calls an observer only when one is given (ByteRing::Deps::observer); without
// one, no event is built and the clock is not read on the hot path.
#pragma once

#include <cstdint>

#include "staging/core/byte_ring.hpp"
#include "staging/core/timeline.hpp"

namespace staging {

/// A reservation was placed (including each Split chunk and each Fallback reservation).
struct ReserveEvent {
  Duration time{0};  ///< the ring's clock when it was placed
  /// What the caller got: id, region, offset, size, alignment, skipped, token, owner, fallback.
  Reservation reservation;
  /// The policy in force for the call.
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;
  /// The size the caller asked for (> reservation.size for a Split chunk).
  uint64_t asked = 0;
  /// Bytes charged to it: alignment padding + skipped tail + size (a fallback: its region).
  uint64_t charged = 0;
};

/// A reservation's bytes were reclaimed: its token completed, or it was cancelled.
struct RetireEvent {
  Duration time{0};         ///< the ring's clock when they were reclaimed
  uint64_t id = 0;          ///< the reservation's id
  uint32_t region = 0;      ///< its region (a fallback region is destroyed with it)
  TimelineValue token = 0;  ///< its token
  /// The completed value that reclaimed it (the ring's highest seen; for a cancelled one, the
  /// value at the time).
  TimelineValue completed = 0;
  /// Bytes given back (what was charged).
  uint64_t bytes = 0;
  /// True when it was cancelled rather than retired by the queue.
  bool cancelled = false;
};

/// cancel() accepted a live reservation (its bytes are reclaimed now or in FIFO order, reported
/// by a RetireEvent with cancelled set).
struct CancelEvent {
  Duration time{0};  ///< the ring's clock at the cancel() call
  uint64_t id = 0;   ///< the reservation cancelled
};

/// A reservation wrapped to the start of its region, skipping the region's tail. Reported just
/// before that reservation's ReserveEvent.
struct WrapEvent {
  Duration time{0};     ///< the ring's clock at the placement
  uint64_t id = 0;      ///< the reservation that wrapped
  uint32_t region = 0;  ///< the region it wrapped in
  /// Where the skipped tail began (the head before the wrap).
  uint64_t from = 0;
  /// How long the skipped tail is (charged to the reservation, freed with it).
  uint64_t skipped = 0;
};

/// A Wait or Split reservation starts waiting on the queue.
struct WaitBeginEvent {
  Duration time{0};                         ///< the ring's clock when the wait began
  BlockCause cause = BlockCause::InFlight;  ///< why the bytes were not there
  /// The token whose completion frees enough bytes (what the ring waits for first).
  TimelineValue token = 0;
  /// Bytes the request needs in region 0, padding and skip included (Split: its smallest
  /// acceptable chunk).
  uint64_t needed = 0;
  uint64_t owner = 0;  ///< the caller's tag (ReserveRequest::owner)
};

/// The wait of one reservation ended (placed, or timed out).
struct WaitEndEvent {
  Duration time{0};                         ///< the ring's clock when the wait ended
  BlockCause cause = BlockCause::InFlight;  ///< the cause the wait began with
  /// The token waited for last.
  TimelineValue token = 0;
  /// Time spent waiting: about the timeout at most (longer only by however late the
  /// CompletionSource returned).
  Duration waited{0};
  /// The completed value when the wait ended.
  TimelineValue completed = 0;
  bool timed_out = false;  ///< true when nothing was placed (a TimeoutEvent follows)
  uint64_t owner = 0;      ///< the caller's tag
};

/// Split placed a chunk smaller than asked.
struct SplitEvent {
  Duration time{0};                         ///< the ring's clock at the placement
  BlockCause cause = BlockCause::InFlight;  ///< why the whole request did not fit
  uint64_t id = 0;                          ///< the chunk's reservation id
  uint64_t asked = 0;                       ///< the size asked for
  uint64_t placed = 0;                      ///< the chunk's size (< asked)
  uint64_t owner = 0;                       ///< the caller's tag
};

/// Grow added a region, or an idle grown region was trimmed (released).
struct RegionEvent {
  Duration time{0};     ///< the ring's clock when the region was added or released
  uint32_t region = 0;  ///< the region's id (reused later)
  uint64_t bytes = 0;   ///< the region's bytes
  /// Grow: why the existing regions could not take the request. Trim: InFlight (unused).
  BlockCause cause = BlockCause::InFlight;
};

/// Fallback placed a reservation in a dedicated region.
struct FallbackEvent {
  Duration time{0};                         ///< the ring's clock at the placement
  BlockCause cause = BlockCause::InFlight;  ///< why the ring regions could not take it
  uint64_t id = 0;                          ///< the reservation's id
  uint32_t region = 0;                      ///< the dedicated region's id
  uint64_t bytes = 0;                       ///< the region's bytes (== the request's size)
  uint64_t owner = 0;                       ///< the caller's tag
};

/// A reservation was answered WouldBlock.
struct WouldBlockEvent {
  Duration time{0};                                   ///< the ring's clock at the answer
  BlockCause cause = BlockCause::InFlight;            ///< as ReserveError::cause
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;  ///< the policy in force for the call
  uint64_t needed = 0;                                ///< as ReserveError::needed
  uint64_t free_total = 0;                            ///< as ReserveError::free_total
  uint64_t free_contiguous = 0;                       ///< as ReserveError::free_contiguous
  uint64_t owner = 0;                                 ///< the caller's tag
};

/// A Wait or Split reservation was answered Timeout.
struct TimeoutEvent {
  Duration time{0};                         ///< the ring's clock at the answer
  BlockCause cause = BlockCause::InFlight;  ///< as ReserveError::cause
  /// The oldest token not yet retired (the waited-for token when none is pending any more).
  TimelineValue oldest_pending = 0;
  /// The token the ring waited for last (ReserveError::waited_for).
  TimelineValue waited_for = 0;
  Duration waited{0};  ///< as ReserveError::waited
  uint64_t owner = 0;  ///< the caller's tag
};

/// The cap refused a request: for good (CapExceeded: it can never fit) or for now (a Grow or
/// Fallback that would take the ring above its cap, answered WouldBlock with cause Cap).
struct CapRefusalEvent {
  Duration time{0};                                   ///< the ring's clock at the answer
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;  ///< the policy in force for the call
  uint64_t asked = 0;                                 ///< the size asked for
  /// Bytes of all regions now.
  uint64_t held = 0;
  /// The ring's effective cap (ByteRing::cap()).
  uint64_t cap = 0;
  /// True for CapExceeded (never fits), false for a WouldBlock until bytes are released.
  bool permanent = false;
  uint64_t owner = 0;  ///< the caller's tag
};

/// Receives a ByteRing's timeline. Every method has an empty default: override what you need.
///
/// Threading: called on the ring's thread, synchronously, from inside the ring's call. An
/// observer must not call back into the ring that reports to it, and must not throw (several
/// ring calls are noexcept: an exception would terminate). Ownership: the ring only references
/// its observer, which must outlive it (ByteRing::Deps::observer).
class RingObserver {
 public:
  virtual ~RingObserver() = default;
  /// A reservation (or Split chunk, or Fallback reservation) was placed.
  virtual void on_reserve(const ReserveEvent& /*event*/) {}
  /// A reservation's bytes were reclaimed (retired or cancelled).
  virtual void on_retire(const RetireEvent& /*event*/) {}
  /// cancel() accepted a live reservation.
  virtual void on_cancel(const CancelEvent& /*event*/) {}
  /// A reservation wrapped to its region's start (before its on_reserve).
  virtual void on_wrap(const WrapEvent& /*event*/) {}
  /// A Wait or Split reservation starts waiting.
  virtual void on_wait_begin(const WaitBeginEvent& /*event*/) {}
  /// That wait ended, placed or not.
  virtual void on_wait_end(const WaitEndEvent& /*event*/) {}
  /// Split placed a chunk smaller than asked (after its on_reserve).
  virtual void on_split(const SplitEvent& /*event*/) {}
  /// Grow added a region (before the reservation's on_reserve).
  virtual void on_grow(const RegionEvent& /*event*/) {}
  /// An idle grown region was released.
  virtual void on_trim(const RegionEvent& /*event*/) {}
  /// Fallback placed a reservation in a dedicated region (after its on_reserve).
  virtual void on_fallback(const FallbackEvent& /*event*/) {}
  /// A reservation was answered WouldBlock.
  virtual void on_would_block(const WouldBlockEvent& /*event*/) {}
  /// A Wait or Split reservation was answered Timeout (after its on_wait_end).
  virtual void on_timeout(const TimeoutEvent& /*event*/) {}
  /// The cap refused a request, for good or for now (before its would-block, when for now).
  virtual void on_cap_refusal(const CapRefusalEvent& /*event*/) {}
};

}  // namespace staging
