#include "staging/detail/cuda/event_timeline.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/clock.hpp"
#include "staging/detail/core/spin_lock.hpp"

namespace staging::cuda {
namespace {

enum class PointState : uint8_t {
  Open,      // handed out, no event recorded yet
  Recorded,  // event recorded; complete once the event is reached
  Released,  // no GPU work; complete
  Failed,    // record failed: never completes
};

struct Slot {
  cudaEvent_t event = nullptr;
  PointState state = PointState::Released;
};

using SteadyTime = std::chrono::steady_clock;

}  // namespace

struct EventTimeline::Impl {
  explicit Impl(DeviceApi& a) : api(a) {}

  DeviceApi& api;
  // Every call takes it for a few instructions (and an event query or two): producers committing
  // spans, uploads recording points and waiters polling at once. A SpinLock, so that they never
  // queue up asleep in the kernel behind each other (see spin_lock.hpp).
  mutable SpinLock mu;
  std::vector<Slot> slots;  // point p uses slots[p % slots.size()]
  TimelineValue next = 1;   // the next point open() hands out
  TimelineValue done = 0;   // completed(): every point <= done has completed
  cudaError_t error = cudaSuccess;
  EventTimelineStats stats;

  Slot& slot(TimelineValue p) { return slots[p % slots.size()]; }
  uint64_t pending() const { return next - 1 - done; }

  // Advances `done` over the completed prefix. Caller holds mu.
  void advance() {
    while (error == cudaSuccess && done + 1 < next) {
      Slot& s = slot(done + 1);
      if (s.state == PointState::Released) {
        ++done;
        continue;
      }
      if (s.state != PointState::Recorded) return;  // Open, or Failed (never completes)
      ++stats.queries;
      const cudaError_t q = api.event_query(s.event);
      if (q == cudaErrorNotReady) return;
      if (q != cudaSuccess) {
        error = q;  // a query can only fail when the context is broken: stop here for good
        return;
      }
      ++done;
    }
  }

  TimelineValue completed() {
    std::lock_guard lock(mu);
    advance();
    return done;
  }

  // Between polls. For the first 200 µs since `start`: a few microseconds of pause, then a yield
  // (a waiter for ring room usually waits for a copy that is about to finish, and sees it within
  // microseconds, without querying the driver a million times a second while other threads issue
  // copies; a sleep would cost ~60 µs of timer slack). Then sleeps a little more on each call,
  // 5 → 100 µs.
  static void back_off(int& round, const Deadline& deadline) {
    const auto now = SteadyTime::now();
    if (deadline.elapsed() < std::chrono::microseconds(200)) {
      const auto until = now + std::chrono::microseconds(3);
      while (SteadyTime::now() < until)
        cpu_relax();
      std::this_thread::yield();
      return;
    }
    const int shift = std::min(round, 5);  // 5, 10, 20, 40, 80, 100 µs
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(5 << shift, 100)));
    ++round;
  }
};

Expected<std::unique_ptr<EventTimeline>, cudaError_t> EventTimeline::create(DeviceApi& api,
                                                                            uint32_t events) {
  if (events == 0) return unexpected(cudaErrorInvalidValue);
  auto impl = std::make_unique<Impl>(api);
  impl->slots.resize(events);
  for (uint32_t i = 0; i < events; ++i) {
    const cudaError_t err = api.event_create(&impl->slots[i].event);
    if (err != cudaSuccess) {
      for (uint32_t j = 0; j < i; ++j)
        api.event_destroy(impl->slots[j].event);
      return unexpected(err);
    }
  }
  impl->stats.events = events;
  return std::unique_ptr<EventTimeline>(new EventTimeline(std::move(impl)));
}

EventTimeline::EventTimeline(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

EventTimeline::~EventTimeline() {
  for (Slot& s : impl_->slots)
    impl_->api.event_destroy(s.event);
}

Expected<TimelineValue, cudaError_t> EventTimeline::open(Duration timeout) {
  Impl& m = *impl_;
  const Deadline deadline(SteadyClock::instance(), timeout);
  int round = 0;
  bool counted = false;
  for (;;) {
    {
      std::lock_guard lock(m.mu);
      m.advance();
      if (m.error != cudaSuccess) return unexpected(m.error);
      if (m.pending() < m.slots.size()) {
        const TimelineValue p = m.next++;
        m.slot(p).state = PointState::Open;
        ++m.stats.opened;
        m.stats.peak_pending =
            std::max<uint32_t>(m.stats.peak_pending, static_cast<uint32_t>(m.pending()));
        return p;
      }
      if (!counted) {
        ++m.stats.pool_waits;
        counted = true;
      }
    }
    if (deadline.passed()) return unexpected(cudaErrorNotReady);
    Impl::back_off(round, deadline);
  }
}

cudaError_t EventTimeline::record(TimelineValue point, cudaStream_t stream) {
  Impl& m = *impl_;
  cudaEvent_t event;
  {
    std::lock_guard lock(m.mu);
    STAGING_ASSERT(point > m.done && point < m.next && m.slot(point).state == PointState::Open,
                   "EventTimeline::record: the point is not open");
    event = m.slot(point).event;
  }
  // Recorded outside the lock: the slot stays Open (never queried) until the record returned,
  // and cannot be handed out again before `point` completes.
  const cudaError_t err = m.api.event_record(event, stream);
  std::lock_guard lock(m.mu);
  if (err == cudaSuccess) {
    m.slot(point).state = PointState::Recorded;
    ++m.stats.recorded;
  } else {
    // The copies enqueued before the record may still run: the point must never complete.
    m.slot(point).state = PointState::Failed;
    if (m.error == cudaSuccess) m.error = err;
  }
  return err;
}

void EventTimeline::release(TimelineValue point) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  STAGING_ASSERT(point > m.done && point < m.next && m.slot(point).state == PointState::Open,
                 "EventTimeline::release: the point is not open");
  m.slot(point).state = PointState::Released;
  ++m.stats.released;
}

TimelineValue EventTimeline::completed() {
  return impl_->completed();
}

TimelineValue EventTimeline::wait(TimelineValue value, Duration timeout) {
  Impl& m = *impl_;
  const Deadline deadline(SteadyClock::instance(), timeout);
  int round = 0;
  for (;;) {
    TimelineValue done;
    {
      std::lock_guard lock(m.mu);
      m.advance();
      done = m.done;
      // After a failure nothing completes any more: the timeline knows `value` cannot be reached
      // by waiting and says so at once (CompletionSource::wait allows it; a waiting ring then
      // gives up instead of running out its timeout on a lost device).
      if (done >= value || m.error != cudaSuccess) return done;
    }
    if (deadline.passed()) return done;
    Impl::back_off(round, deadline);
  }
}

bool EventTimeline::reached(TimelineValue point) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  m.advance();
  if (point <= m.done) return true;
  if (m.error != cudaSuccess || point >= m.next) return false;
  const Slot& s = m.slot(point);
  if (s.state == PointState::Released) return true;
  if (s.state != PointState::Recorded) return false;
  ++m.stats.queries;
  const cudaError_t q = m.api.event_query(s.event);
  // As in advance(): a query can only fail when the context is broken, so the timeline stops
  // (the caller, polling for this point, sees error() instead of polling on).
  if (q != cudaSuccess && q != cudaErrorNotReady) m.error = q;
  return q == cudaSuccess;
}

cudaError_t EventTimeline::stream_wait(cudaStream_t stream, TimelineValue point) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (m.error != cudaSuccess) return m.error;
  if (point <= m.done) return cudaSuccess;
  if (point >= m.next) return cudaErrorInvalidValue;
  const Slot& s = m.slot(point);
  switch (s.state) {
    case PointState::Released:
      return cudaSuccess;
    case PointState::Open:
      return cudaErrorNotReady;
    case PointState::Failed:
      return cudaErrorInvalidResourceHandle;  // unreachable: a failed record sets m.error
    case PointState::Recorded:
      // Under the lock: the slot cannot be reused (re-recorded) before `point` completes, and
      // completion only advances under this lock.
      return m.api.stream_wait_event(stream, s.event);
  }
  return cudaErrorInvalidValue;
}

cudaError_t EventTimeline::error() const noexcept {
  std::lock_guard lock(impl_->mu);
  return impl_->error;
}

TimelineValue EventTimeline::last_opened() const noexcept {
  std::lock_guard lock(impl_->mu);
  return impl_->next - 1;
}

EventTimelineStats EventTimeline::stats() const {
  std::lock_guard lock(impl_->mu);
  EventTimelineStats s = impl_->stats;
  s.completed = impl_->done;
  return s;
}

}  // namespace staging::cuda
