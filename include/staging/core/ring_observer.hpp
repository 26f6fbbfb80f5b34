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
  Duration time{0};
  /// What the caller got: id, region, offset, size, alignment, skipped, token, owner, fallback.
  Reservation reservation;
  /// The policy in force for the call, and the size the caller asked for (> reservation.size
  /// for a Split chunk).
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;
  uint64_t asked = 0;
  /// Bytes charged to it: alignment padding + skipped tail + size (a fallback: its region).
  uint64_t charged = 0;
};

/// A reservation's bytes were reclaimed: its token completed, or it was cancelled.
struct RetireEvent {
  Duration time{0};
  uint64_t id = 0;
  uint32_t region = 0;
  TimelineValue token = 0;
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
  Duration time{0};
  uint64_t id = 0;
};

/// A reservation wrapped to the start of its region, skipping the region's tail.
struct WrapEvent {
  Duration time{0};
  uint64_t id = 0;
  uint32_t region = 0;
  /// Where the skipped tail began (the head before the wrap) and how long it is.
  uint64_t from = 0;
  uint64_t skipped = 0;
};

/// A Wait or Split reservation starts waiting on the queue.
struct WaitBeginEvent {
  Duration time{0};
  BlockCause cause = BlockCause::InFlight;
  /// The token whose completion frees enough bytes (what the ring waits for first).
  TimelineValue token = 0;
  /// Bytes the request needs (padding and skip included) and the caller's tag.
  uint64_t needed = 0;
  uint64_t owner = 0;
};

/// The wait of one reservation ended (placed, or timed out).
struct WaitEndEvent {
  Duration time{0};
  BlockCause cause = BlockCause::InFlight;
  /// The token waited for last.
  TimelineValue token = 0;
  /// Time spent waiting (<= the timeout).
  Duration waited{0};
  /// The completed value when the wait ended.
  TimelineValue completed = 0;
  bool timed_out = false;
  uint64_t owner = 0;
};

/// Split placed a chunk smaller than asked.
struct SplitEvent {
  Duration time{0};
  BlockCause cause = BlockCause::InFlight;
  uint64_t id = 0;
  uint64_t asked = 0;
  uint64_t placed = 0;
  uint64_t owner = 0;
};

/// Grow added a region, or an idle grown region was trimmed (released).
struct RegionEvent {
  Duration time{0};
  uint32_t region = 0;
  uint64_t bytes = 0;
  /// Grow: why the existing regions could not take the request. Trim: InFlight (unused).
  BlockCause cause = BlockCause::InFlight;
};

/// Fallback placed a reservation in a dedicated region.
struct FallbackEvent {
  Duration time{0};
  BlockCause cause = BlockCause::InFlight;
  uint64_t id = 0;
  uint32_t region = 0;
  uint64_t bytes = 0;
  uint64_t owner = 0;
};

/// A reservation was answered WouldBlock.
struct WouldBlockEvent {
  Duration time{0};
  BlockCause cause = BlockCause::InFlight;
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;
  uint64_t needed = 0;
  uint64_t free_total = 0;
  uint64_t free_contiguous = 0;
  uint64_t owner = 0;
};

/// A Wait or Split reservation was answered Timeout.
struct TimeoutEvent {
  Duration time{0};
  BlockCause cause = BlockCause::InFlight;
  /// The oldest token not yet retired, and the token the ring was waiting for.
  TimelineValue oldest_pending = 0;
  TimelineValue waited_for = 0;
  Duration waited{0};
  uint64_t owner = 0;
};

/// The cap refused a request: for good (CapExceeded: it can never fit) or for now (a Grow or
/// Fallback that would take the ring above its cap, answered WouldBlock with cause Cap).
struct CapRefusalEvent {
  Duration time{0};
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;
  uint64_t asked = 0;
  /// Bytes of all regions now, and the cap.
  uint64_t held = 0;
  uint64_t cap = 0;
  /// True for CapExceeded (never fits), false for a WouldBlock until bytes are released.
  bool permanent = false;
  uint64_t owner = 0;
};

/// Receives a ByteRing's timeline. Every method has an empty default: override what you need.
///
/// Threading: called on the ring's thread, synchronously, from inside the ring's call. An
/// observer must not call back into the ring that reports to it.
class RingObserver {
 public:
  virtual ~RingObserver() = default;
  virtual void on_reserve(const ReserveEvent& /*event*/) {}
  virtual void on_retire(const RetireEvent& /*event*/) {}
  virtual void on_cancel(const CancelEvent& /*event*/) {}
  virtual void on_wrap(const WrapEvent& /*event*/) {}
  virtual void on_wait_begin(const WaitBeginEvent& /*event*/) {}
  virtual void on_wait_end(const WaitEndEvent& /*event*/) {}
  virtual void on_split(const SplitEvent& /*event*/) {}
  virtual void on_grow(const RegionEvent& /*event*/) {}
  virtual void on_trim(const RegionEvent& /*event*/) {}
  virtual void on_fallback(const FallbackEvent& /*event*/) {}
  virtual void on_would_block(const WouldBlockEvent& /*event*/) {}
  virtual void on_timeout(const TimeoutEvent& /*event*/) {}
  virtual void on_cap_refusal(const CapRefusalEvent& /*event*/) {}
};

}  // namespace staging
