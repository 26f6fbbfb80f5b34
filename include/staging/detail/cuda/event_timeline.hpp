// EventTimeline: the core's monotonic completion timeline (timeline.hpp) over a fixed pool of
// CUDA events.
//
// Every staging reservation gets a *point*: a TimelineValue 1, 2, 3, ... handed out in order by
// open(). Once the copies that read the reservation are enqueued on a stream, record() records
// the point's event there; a reservation that no copy will read is released() instead. completed()
// is the highest N such that every point <= N has completed (recorded and its event reached, or
// released) — the value the byte ring retires against (invariant I3). Points on different streams
// may finish out of order; completed() then waits for the slowest, never skips one.
//
// Pooling: point N uses event N mod `events`, created once by create() and destroyed by the
// destructor: no event is created or destroyed per point. At most `events` points are pending
// (opened and not yet completed) at once; open() waits, bounded, for the oldest to complete when
// all are taken.
//
//   points:    completed_        pending (open / recorded / released)         next
//                  v   v------------------------------------------------v      v
//   ... 5 6 7 [8]  9:recorded  10:open  11:recorded(done)  12:released       13
//   completed() == 8 until 9's event is reached and 10 is recorded and reached; then 12.
//
// Lost device / sticky errors: a failing event query or record stops the timeline for good
// (fail closed): completed() no longer advances (bytes a copy might still read are never reused),
// error() reports the first failure, and wait() returns at once, below the value waited for (a
// ring waiting for room gives up; the Uploader reports Failed).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "staging/core/errors.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/cuda/device_api.hpp"

namespace staging::cuda {

/// What an EventTimeline has done. Plain data; a diagnostic.
struct EventTimelineStats {
  uint32_t events = 0;          ///< events in the pool (created once)
  uint64_t opened = 0;          ///< points handed out
  uint64_t recorded = 0;        ///< points whose event was recorded
  uint64_t released = 0;        ///< points released without GPU work
  uint64_t queries = 0;         ///< cudaEventQuery calls made
  uint64_t pool_waits = 0;      ///< open() calls that had to wait for a free event
  uint32_t peak_pending = 0;    ///< most points pending at once
  TimelineValue completed = 0;  ///< completed() when the stats were taken
};

/// EventTimelineStats' counters, in declaration order.
constexpr auto counters_of(std::type_identity<EventTimelineStats>) noexcept {
  using S = EventTimelineStats;
  return std::tuple{counter("events", "events", &S::events),
                    counter("opened", "points opened", &S::opened),
                    counter("recorded", "points recorded", &S::recorded),
                    counter("released", "points released", &S::released),
                    counter("queries", "event queries", &S::queries),
                    counter("pool_waits", "waits for a free event", &S::pool_waits),
                    counter("peak_pending", "most points pending", &S::peak_pending),
                    counter("completed", "completed point", &S::completed)};
}
static_assert(counters_complete<EventTimelineStats>(), "EventTimelineStats: counters_of is stale");

/// See the file comment.
///
/// Ownership: owns its events; references the DeviceApi, which must outlive it. Destroying it
/// destroys the events; the owner first makes sure no point is still pending on a stream (wait()
/// for the newest point), as with any CUDA event.
/// Threading: every method is safe from any thread (one internal mutex, never held while
/// sleeping). CUDA calls are made from the calling thread.
class EventTimeline final : public CompletionSource {
 public:
  /// Creates `events` (>= 1) events. Errors: cudaErrorInvalidValue for 0 events, or the first
  /// failing cudaEventCreate (the events made so far are destroyed).
  static Expected<std::unique_ptr<EventTimeline>, cudaError_t> create(DeviceApi& api,
                                                                      uint32_t events);
  /// Destroys the pooled events (see Ownership: no point may still be pending on a stream).
  ~EventTimeline() override;
  EventTimeline(const EventTimeline&) = delete;
  EventTimeline& operator=(const EventTimeline&) = delete;

  /// Hands out the next point (pending until record() or release()). When `events` points are
  /// pending, waits up to `timeout` for the oldest to complete (a timeout <= 0 tries once); then
  /// cudaErrorNotReady. Once the timeline has stopped: error(). The caller must record() or
  /// release() every point it opens — an open point holds back completed() for every later
  /// point.
  Expected<TimelineValue, cudaError_t> open(Duration timeout);
  /// Records `point`'s event on `stream`, after the work enqueued there so far: the point
  /// completes when the stream gets there. Precondition: `point` is open (aborts otherwise).
  /// On failure the point never completes (the copies before it may still run), the timeline
  /// stops (error()), and the error is returned.
  cudaError_t record(TimelineValue point, cudaStream_t stream);
  /// Completes an open `point` that no GPU work will ever read (a cancelled reservation).
  /// Precondition: `point` is open (aborts otherwise).
  void release(TimelineValue point);

  /// The highest N such that every point <= N has completed; never decreases. Queries the events
  /// of the oldest pending points (cudaEventQuery, no waiting).
  [[nodiscard]] TimelineValue completed() override;
  /// Polls until completed() >= value or `timeout` passes; returns completed(). Polls every few
  /// µs for the first 200 µs (a copy about to finish is seen at once), then sleeps between polls,
  /// backing off to 100 µs; never hangs. Once the timeline has stopped (error()) it returns at
  /// once: nothing completes any more.
  TimelineValue wait(TimelineValue value, Duration timeout) override;
  /// True once `point`'s own work has completed: its event reached, or it was released, or
  /// completed() >= point — whatever the points before it do (unlike completed()). False for an
  /// open point, one never handed out, or once the timeline has stopped (and not yet completed).
  /// Queries the point's event (cudaEventQuery, no waiting); a failing query stops the timeline
  /// (error()), as in completed().
  [[nodiscard]] bool reached(TimelineValue point);
  /// Makes `stream` wait (cudaStreamWaitEvent) until `point`'s own event is reached; nothing when
  /// it has already completed or was released. Errors: cudaErrorInvalidValue for a point never
  /// handed out, cudaErrorNotReady for a point not yet recorded, error() once the timeline has
  /// stopped, or cudaStreamWaitEvent's error. Note: this waits for `point`'s stream work only,
  /// not for every earlier point (use wait() for that).
  cudaError_t stream_wait(cudaStream_t stream, TimelineValue point);

  /// The failure that stopped the timeline (cudaSuccess while healthy): the first failed event
  /// record (any error) or event query (any error but cudaErrorNotReady), sticky or not.
  [[nodiscard]] cudaError_t error() const noexcept;
  /// The newest point handed out (0 before the first).
  [[nodiscard]] TimelineValue last_opened() const noexcept;
  /// A snapshot of the counters (takes the internal mutex).
  [[nodiscard]] EventTimelineStats stats() const;

 private:
  struct Impl;
  explicit EventTimeline(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace staging::cuda
