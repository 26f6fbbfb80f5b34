// The retirement model shared by every strategy and backend.
//
// Every reservation carries a retirement token: a value on a queue's monotonic completion
// timeline (a Vulkan timeline semaphore value, a CUDA event sequence number, a WebGPU
// submission). Memory is reclaimed only once the queue reports a completed value >= the token —
// never by counting frames (invariant I3).
//
// Completion reaches a ring one way only: its owner reads the queue's completed value and hands
// it to the ring (ByteRing::retire(completed), StagingRing::retire(completed); a FenceToken is
// the same model with a timeline of one step). A ring never asks for it: no ring call calls a
// CompletionSource or anything else that could call back into the ring's caller.
#pragma once

#include <chrono>
#include <cstdint>

namespace staging {

/// A point on a queue's monotonic completion timeline. 0 is "before anything": a completed value
/// of 0 retires nothing but reservations with token 0.
using TimelineValue = uint64_t;

/// Durations and timestamps of the library (nanoseconds).
using Duration = std::chrono::nanoseconds;

/// A read-only view of one queue's completion timeline, implemented by a backend (a timeline
/// semaphore, a pool of CUDA events) or a fake. Read by the code that owns a ring —
/// reserve_waiting() and the backends — which hands the values to the ring's retire(). It never
/// touches a ring itself, and no ring ever calls it.
///
/// Threading: called only from the thread that owns the ring fed from it, unless the backend
/// says otherwise. Both calls must be safe while the device is lost (they then report what they
/// can: a lost device completes nothing more, so waits time out and the caller sees Timeout).
class CompletionSource {
 public:
  virtual ~CompletionSource() = default;
  /// The highest value known to be completed, without waiting. Never decreases. Must not call
  /// any ring.
  [[nodiscard]] virtual TimelineValue completed() = 0;
  /// Blocks until completed() >= value or `timeout` has passed, whichever is first, and returns
  /// completed(). Must return within about `timeout` (never hang); a timeout of 0 (or a
  /// negative one) polls. Must not call any ring.
  /// May return sooner, with a value below `value`, when the source knows `value` cannot be
  /// reached by waiting (it names work not submitted yet, e.g. a frame still being recorded on
  /// the waiting thread); a waiter that sees no progress then gives up at once.
  virtual TimelineValue wait(TimelineValue value, Duration timeout) = 0;
};

}  // namespace staging
