#include "sim_queue.hpp"

#include <algorithm>

#include "units.hpp"

namespace staging::sim {
namespace {

Duration saturating_add(Duration a, Duration b) {
  if (b.count() > 0 && a > Duration::max() - b) return Duration::max();
  return a + b;
}

}  // namespace

SimQueue::SimQueue(testing::FakeClock& clock, testing::DelayModel model,
                   std::vector<StallWindow> stalls, uint64_t bandwidth, bool early_completion)
    : clock_(&clock), queue_(clock, model), lie_(early_completion), bandwidth_(bandwidth) {
  std::sort(stalls.begin(), stalls.end(),
            [](const StallWindow& a, const StallWindow& b) { return a.at < b.at; });
  for (const StallWindow& w : stalls) {
    if (w.length <= Duration{0}) continue;
    if (!windows_.empty() && w.at <= windows_.back().at + windows_.back().length) {
      StallWindow& last = windows_.back();
      last.length = std::max(last.at + last.length, w.at + w.length) - last.at;
    } else {
      windows_.push_back(w);
    }
  }
  for (const StallWindow& w : windows_) {
    events_.push_back({w.at, true});
    events_.push_back({w.at + w.length, false});
  }
  apply_due();
}

void SimQueue::apply_due() {
  bool changed = false;
  while (next_event_ < events_.size() && events_[next_event_].at <= clock_->now()) {
    if (events_[next_event_].stall) {
      queue_.stall();
    } else {
      queue_.release();
    }
    ++next_event_;
    changed = true;
  }
  if (changed) refresh_schedule();
}

std::optional<Duration> SimQueue::completion_of(TimelineValue value) const {
  const Logged& e = log_[static_cast<std::size_t>(value - 1)];
  if (!e.fake_done) return std::nullopt;
  return std::max(*e.fake_done, e.engine_done);
}

// Re-reads the fake queue's completion times of every submission it has not completed (they
// change only at a stall or a release).
void SimQueue::refresh_schedule() {
  const TimelineValue done = queue_.completed();
  for (auto it = log_.rbegin(); it != log_.rend() && it->value > done; ++it) {
    it->fake_done = queue_.completion_time(it->value);
    it->completes = completion_of(it->value);
  }
}

std::optional<Duration> SimQueue::next_stall_event() const {
  if (next_event_ >= events_.size()) return std::nullopt;
  return events_[next_event_].at;
}

TimelineValue SimQueue::truth_completed() {
  apply_due();
  const TimelineValue fake = queue_.completed();
  const Duration now = clock_->now();
  while (truth_ < fake && engine_done(truth_ + 1) <= now)
    ++truth_;
  return truth_;
}

TimelineValue SimQueue::completed() {
  const TimelineValue truth = truth_completed();
  if (!lie_) return truth;
  return std::min(truth + 1, queue_.submitted());
}

TimelineValue SimQueue::wait_truth(TimelineValue value, Duration timeout) {
  apply_due();
  const Duration deadline = saturating_add(clock_->now(), std::max(timeout, Duration{0}));
  for (;;) {
    if (truth_completed() >= value) break;
    const Duration now = clock_->now();
    if (now >= deadline) {
      (void)queue_.wait(value, Duration{0});  // a poll, as a timeout of 0 asks
      break;
    }
    Duration step_end = deadline;
    if (const std::optional<Duration> e = next_stall_event(); e && *e < step_end) step_end = *e;
    if (value <= queue_.submitted() && queue_.completed() >= value) {
      // The fake queue is done; the copy engine still moves the bytes.
      clock_->advance_to(std::min(engine_done(value), step_end));
    } else {
      (void)queue_.wait(value, step_end - now);
    }
    apply_due();
  }
  return truth_completed();
}

TimelineValue SimQueue::wait(TimelineValue value, Duration timeout) {
  if (!lie_) return wait_truth(value, timeout);
  const TimelineValue truth = wait_truth(value > 0 ? value - 1 : 0, timeout);
  return std::min(truth + 1, queue_.submitted());
}

TimelineValue SimQueue::submit(uint64_t bytes) {
  apply_due();
  const Duration t = clock_->now();
  const TimelineValue v = queue_.submit();
  Logged entry;
  entry.value = v;
  entry.submitted = t;
  entry.bytes = bytes;
  engine_free_ = std::max(engine_free_, t);
  if (bandwidth_ > 0) {
    // The copy's time, checked before it becomes an integer (2^64 bytes at 1 B/s overflows).
    const double ns = static_cast<double>(bytes) * 1e9 / static_cast<double>(bandwidth_);
    const double room = static_cast<double>((kClockLimit - engine_free_).count());
    past_limit_ = past_limit_ || ns > room;
    engine_free_ +=
        ns > room ? kClockLimit - engine_free_ : Duration{static_cast<Duration::rep>(ns)};
  }
  entry.engine_done = engine_free_;
  entry.fake_done = queue_.completion_time(v);
  if (entry.fake_done && *entry.fake_done > kClockLimit) {
    past_limit_ = true;
    entry.fake_done = kClockLimit;
  }
  log_.push_back(entry);
  log_.back().completes = completion_of(v);
  return v;
}

void SimQueue::advance_to(Duration t) {
  apply_due();
  while (clock_->now() < t) {
    Duration step = t;
    if (const std::optional<Duration> e = next_stall_event(); e && *e < step) step = *e;
    clock_->advance_to(step);
    apply_due();
  }
}

std::optional<Duration> SimQueue::next_event() {
  const TimelineValue done = truth_completed();
  std::optional<Duration> next = next_stall_event();
  if (done < queue_.submitted()) {
    const std::optional<Duration> at = completion_of(done + 1);
    if (at && (!next || *at < *next)) next = at;
  }
  return next;
}

bool SimQueue::can_complete(TimelineValue value) {
  if (value > queue_.submitted()) return false;
  if (truth_completed() >= value) return true;
  if (!queue_.stalled()) return true;
  // Stalled: only a release still ahead helps.
  for (std::size_t i = next_event_; i < events_.size(); ++i) {
    if (!events_[i].stall) return true;
  }
  return false;
}

std::vector<Submission> SimQueue::submissions() const {
  return std::vector<Submission>(log_.begin(), log_.end());
}

}  // namespace staging::sim
