// SimQueue: the simulated GPU queue — the fake queue (FakeQueue over a FakeClock) plus a schedule
// of stall windows, a log of every submission's submit and completion time, and an optional
// injected fault. It is the CompletionSource the ring under test waits on.
//
// Two views of completion:
//   * the ring's view — completed() and wait(), the CompletionSource interface. With the
//     early-completion fault these lie by one value (the queue claims the next submission is
//     done before it is), which is how a self-check plants a "retired one reservation early" bug
//     without touching the core;
//   * the truth — truth_completed() and wait_truth(), what the GPU has really finished. The
//     invariant checker and the byte checks are fed only the truth.
//
// Copy bandwidth: the fake queue's delay models know nothing of bytes. SimQueue adds a copy
// engine: a submission of B bytes also needs B / bandwidth of the engine, which copies one
// submission at a time, in order — so a submission completes at the later of the fake queue's
// completion and the engine finishing its bytes. A bandwidth of 0 turns the engine off (the delay
// model alone decides).
//
// Stall windows: the clock never jumps over a window's start or end; advance_to() and both waits
// stop there and stall or release the fake queue at exactly that time.
//
// Time limit: a submission that would complete after kClockLimit (units.hpp) — a copy of huge
// bytes at a tiny bandwidth — is clamped there and raises past_clock_limit(); the simulator stops
// the run with an error. So every time the queue computes stays far from overflowing.
//
// Threading: not synchronised; the simulator's single thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "staging/testing/fake_queue.hpp"
#include "upload.hpp"

namespace staging::sim {

/// One submission of the simulated queue.
struct Submission {
  TimelineValue value = 0;
  Duration submitted{0};
  /// Payload bytes its copies move.
  uint64_t bytes = 0;
  /// When it completed (or will, as scheduled now); none while stalled or never completed.
  std::optional<Duration> completes;
};

class SimQueue final : public CompletionSource {
 public:
  /// A queue on `clock` (which must outlive it) with delay model `model` and stall windows
  /// `stalls` (any order; overlapping windows are merged). `early_completion` plants the fault
  /// described in the file comment.
  SimQueue(testing::FakeClock& clock, testing::DelayModel model, std::vector<StallWindow> stalls,
           uint64_t bandwidth, bool early_completion);

  // --- the ring's view (CompletionSource) ---
  [[nodiscard]] TimelineValue completed() override;
  TimelineValue wait(TimelineValue value, Duration timeout) override;

  // --- the truth ---
  /// The highest value the GPU has really finished.
  [[nodiscard]] TimelineValue truth_completed();
  /// Advances the clock until `value` really completes or `timeout` passes (stall windows are
  /// honoured on the way). Returns truth_completed().
  TimelineValue wait_truth(TimelineValue value, Duration timeout);

  /// The value the next submit() signals: the token of everything recorded into it.
  [[nodiscard]] TimelineValue next_value() const noexcept { return queue_.next_value(); }
  /// The last value submitted (0 before any).
  [[nodiscard]] TimelineValue submitted() const noexcept { return queue_.submitted(); }
  /// Submits the next value, whose copies move `bytes` bytes, and logs it. Returns the value.
  TimelineValue submit(uint64_t bytes);

  /// Moves the clock forward to `t` (no-op when `t` is not later), applying stall windows on the
  /// way.
  void advance_to(Duration t);
  /// The next time anything changes: the oldest pending submission's completion or a stall
  /// window's start or end. None when nothing will ever change (nothing pending, or stalled with
  /// no release ahead).
  [[nodiscard]] std::optional<Duration> next_event();
  /// True when `value` is submitted and will complete some day (not stalled for good).
  [[nodiscard]] bool can_complete(TimelineValue value);
  /// True while the queue is stalled.
  [[nodiscard]] bool stalled() const noexcept { return queue_.stalled(); }

  [[nodiscard]] Duration now() { return clock_->now(); }
  /// Every submission so far, in value order.
  [[nodiscard]] std::vector<Submission> submissions() const;
  /// The stall windows after merging.
  [[nodiscard]] const std::vector<StallWindow>& stalls() const noexcept { return windows_; }
  /// wait() and wait_truth() calls the fake queue saw.
  [[nodiscard]] uint64_t wait_calls() const noexcept { return queue_.wait_calls(); }
  /// True once a submission would have completed after kClockLimit (see the file comment).
  [[nodiscard]] bool past_clock_limit() const noexcept { return past_limit_; }

 private:
  struct Event {
    Duration at;
    bool stall;  // true: stall; false: release
  };
  void apply_due();
  void refresh_schedule();
  [[nodiscard]] std::optional<Duration> next_stall_event() const;
  // When `value` completes (or completed): the fake queue's time and the copy engine's, the
  // later; none while the fake queue has no time for it (stalled).
  [[nodiscard]] std::optional<Duration> completion_of(TimelineValue value) const;
  [[nodiscard]] Duration engine_done(TimelineValue value) const {
    return log_[static_cast<std::size_t>(value - 1)].engine_done;
  }

  testing::FakeClock* clock_;
  testing::FakeQueue queue_;
  std::vector<StallWindow> windows_;
  std::vector<Event> events_;
  std::size_t next_event_ = 0;
  bool lie_;
  uint64_t bandwidth_;
  Duration engine_free_{0};
  bool past_limit_ = false;
  TimelineValue truth_ = 0;  // the highest value really completed so far
  struct Logged : Submission {
    Duration engine_done{0};
    std::optional<Duration> fake_done;  // the fake queue's completion time, as last scheduled
  };
  std::vector<Logged> log_;
};

}  // namespace staging::sim
