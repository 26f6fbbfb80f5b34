// A fake GPU queue in virtual time, for host tests and staging-sim.
//
// FakeClock is a Clock that moves only when told. FakeQueue is a CompletionSource over it: each
// submit() is one value on the queue's timeline, completing after a delay drawn from a
// DelayModel; wait() advances the clock to the completion or to the timeout, whichever is first —
// so a test or a simulation of seconds of GPU time runs instantly and deterministically.
//
// The queue is in order, like a GPU queue signalling a timeline semaphore: a value completes only
// once every earlier value has, so completed() only ever increases.
//
// Delay models (DelayModel):
//   fixed(d)                  every submission completes d after it was submitted;
//   seeded_random(lo, hi, s)  uniform in [lo, hi], from a seeded generator (same seed, same run);
//   bursty(fast, slow, n)     n submissions at `fast`, then one at `slow` — which, in order, holds
//                             back everything behind it, so completions arrive in bursts;
//   stalled()                 nothing completes until release() (a hung or lost queue).
// stall() stops a running queue at any time (everything pending included); release() resumes it.
//
// Threading: not synchronised; the ring's thread only. Header-only.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <type_traits>

#include "staging/core/timeline.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/clock.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging::testing {

/// A Clock that moves only when told (advance, advance_to, or FakeQueue::wait). Starts at 0.
/// A plain value; threading as the file comment says.
class FakeClock final : public Clock {
 public:
  /// The virtual time now. Never decreases.
  [[nodiscard]] Duration now() override { return now_; }
  /// Moves time forward by `d` (a negative `d` is ignored: time never goes back). Precondition:
  /// now() + d does not overflow Duration (the simulator's hours are far from it).
  void advance(Duration d) noexcept {
    if (d > Duration{0}) now_ += d;
  }
  /// Moves time forward to `t` (ignored when `t` is in the past).
  void advance_to(Duration t) noexcept { now_ = std::max(now_, t); }

 private:
  Duration now_{0};
};

/// How long a submission takes to complete. Value type; build one with the named constructors.
/// Delays are >= 0 (a negative delay completes at once).
struct DelayModel {
  /// Which model (see the file comment).
  enum class Kind : uint8_t {
    /// Every submission takes `base`.
    Fixed,
    /// Uniform in [base, high], from `seed`.
    SeededRandom,
    /// `burst` submissions take `base`, then one takes `high`, and again.
    Bursty,
    /// Nothing completes (until FakeQueue::release()).
    Stalled,
  };
  /// The model.
  Kind kind = Kind::Fixed;
  /// Fixed: the delay. SeededRandom: the shortest. Bursty: the fast delay.
  Duration base{0};
  /// SeededRandom: the longest. Bursty: the slow delay.
  Duration high{0};
  /// Bursty: fast submissions between two slow ones.
  uint32_t burst = 0;
  /// SeededRandom: the generator's seed.
  uint64_t seed = 0;

  /// Every submission completes `delay` after it was submitted.
  static DelayModel fixed(Duration delay) { return {Kind::Fixed, delay, delay, 0, 0}; }
  /// Uniform in [shortest, longest] (a `longest` below `shortest` is raised to it), drawn from a
  /// generator seeded with `seed`: the same seed gives the same delays on every platform.
  static DelayModel seeded_random(Duration shortest, Duration longest, uint64_t seed) {
    return {Kind::SeededRandom, shortest, std::max(shortest, longest), 0, seed};
  }
  /// `burst` submissions at `fast`, then one at `slow`, repeating (burst 0: every one at
  /// `slow`). In order, the slow one holds back everything behind it.
  static DelayModel bursty(Duration fast, Duration slow, uint32_t burst) {
    return {Kind::Bursty, fast, slow, burst, 0};
  }
  /// Nothing completes until FakeQueue::release().
  static DelayModel stalled() { return {Kind::Stalled, Duration{0}, Duration{0}, 0, 0}; }
};

/// Names of DelayModel::Kind's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<DelayModel::Kind>) noexcept {
  return std::to_array<std::string_view>({"Fixed", "SeededRandom", "Bursty", "Stalled"});
}
static_assert(enum_names_complete<DelayModel::Kind>(), "DelayModel::Kind: a value has no name");

/// A CompletionSource in virtual time. See the file comment.
/// Ownership: references its FakeClock, which must outlive it.
class FakeQueue final : public CompletionSource {
 public:
  /// A queue on `clock` (which must outlive it) whose first submission is value `first` (>= 1;
  /// the completed value starts at first - 1).
  explicit FakeQueue(FakeClock& clock, DelayModel model = DelayModel::fixed(Duration{0}),
                     TimelineValue first = 1)
      : clock_(&clock), next_(first), completed_(first - 1) {
    STAGING_ASSERT(first >= 1, "a FakeQueue's first value must be >= 1");
    set_model(model);
  }

  /// The value the next submit() will signal: what a reservation recorded into that submission
  /// uses as its token.
  [[nodiscard]] TimelineValue next_value() const noexcept { return next_; }
  /// The last value submitted (first - 1 before any).
  [[nodiscard]] TimelineValue submitted() const noexcept { return next_ - 1; }

  /// Submits the next value; it completes after the model's delay, and after every earlier one.
  /// Returns the value.
  TimelineValue submit() {
    const TimelineValue value = next_++;
    Duration at = later(clock_->now(), draw());
    if (!pending_.empty()) at = std::max(at, pending_.back().at);  // in order
    pending_.push_back({value, at});
    return value;
  }

  /// Completes every due submission (in order) and returns the highest completed value.
  [[nodiscard]] TimelineValue completed() override {
    const Duration t = clock_->now();
    while (!pending_.empty() && pending_.front().at <= t) {
      completed_ = pending_.front().value;
      pending_.pop_front();
    }
    return completed_;
  }

  /// Advances the clock to when `value` completes or by `timeout`, whichever is first, and returns
  /// completed(). A value never submitted, or stalled, waits the whole timeout. Timeout 0 polls.
  TimelineValue wait(TimelineValue value, Duration timeout) override {
    ++wait_calls_;
    const Duration start = clock_->now();
    if (completed() >= value) return completed_;
    Duration target = later(start, std::max(timeout, Duration{0}));
    if (const std::optional<Duration> at = completion_time(value)) target = std::min(target, *at);
    clock_->advance_to(target);
    waited_ += clock_->now() - start;
    return completed();
  }

  /// When `value` will complete, if it is submitted and not stalled (none when already completed
  /// or unknown).
  [[nodiscard]] std::optional<Duration> completion_time(TimelineValue value) const {
    if (pending_.empty() || value < pending_.front().value || value > pending_.back().value) {
      return std::nullopt;
    }
    const Duration at = pending_[static_cast<std::size_t>(value - pending_.front().value)].at;
    if (at == kNever) return std::nullopt;
    return at;
  }

  /// The model for later submissions (a SeededRandom model restarts from its seed, a Bursty one
  /// from the start of a burst). Switching to stalled() does not stop what is pending (use
  /// stall() for that), and switching away from it does not resume what stall() stopped (use
  /// release() for that).
  void set_model(DelayModel model) {
    model_ = model;
    if (model_.kind == DelayModel::Kind::SeededRandom) rng_ = model_.seed;
    bursty_count_ = 0;
  }
  /// The model in force (stalled() while the queue is stalled).
  [[nodiscard]] const DelayModel& model() const noexcept { return model_; }

  /// Stops the queue now: nothing pending completes (what was due before now does), and later
  /// submissions wait too, until release().
  void stall() {
    (void)completed();
    for (Pending& p : pending_)
      p.at = kNever;
    if (model_.kind != DelayModel::Kind::Stalled) resume_model_ = model_;
    model_ = DelayModel::stalled();
  }
  /// Resumes a stalled queue with `after` (default: the model before stall(), or fixed(0)):
  /// every stalled submission is rescheduled from now with that model's delays, in order. On a
  /// queue that is not stalled it still switches to that model (for later submissions).
  void release(std::optional<DelayModel> after = std::nullopt) {
    set_model(after.value_or(resume_model_));
    const Duration t = clock_->now();
    Duration prev{0};
    for (Pending& p : pending_) {
      if (p.at == kNever) p.at = later(t, draw());
      p.at = std::max(p.at, prev);
      prev = p.at;
    }
  }
  /// True while the model is stalled() (from stall() until release() or set_model()).
  [[nodiscard]] bool stalled() const noexcept { return model_.kind == DelayModel::Kind::Stalled; }

  /// Completes every submission up to `value` now (a test's "the GPU has finished these").
  void complete_through(TimelineValue value) {
    (void)completed();
    const Duration t = clock_->now();
    for (Pending& p : pending_) {
      if (p.value > value) break;
      p.at = t;
    }
    (void)completed();
  }

  /// Submissions not yet completed (as of the last completed() or wait()).
  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }
  /// wait() calls made so far.
  [[nodiscard]] uint64_t wait_calls() const noexcept { return wait_calls_; }
  /// The virtual time wait() calls advanced the clock by, in total.
  [[nodiscard]] Duration waited() const noexcept { return waited_; }
  /// The clock the queue runs on.
  [[nodiscard]] FakeClock& clock() noexcept { return *clock_; }

 private:
  static constexpr Duration kNever = Duration::max();
  // t + d, saturating at kNever.
  static Duration later(Duration t, Duration d) noexcept {
    return d >= kNever - t ? kNever : t + d;
  }
  struct Pending {
    TimelineValue value;
    Duration at;  // completion time; kNever while stalled
  };

  // splitmix64: small, fast, and the same sequence on every platform (unlike <random>'s
  // distributions).
  uint64_t next_random() noexcept {
    uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  Duration draw() {
    switch (model_.kind) {
      case DelayModel::Kind::Fixed:
        return model_.base;
      case DelayModel::Kind::SeededRandom: {
        const uint64_t span = static_cast<uint64_t>((model_.high - model_.base).count()) + 1;
        return model_.base + Duration{static_cast<Duration::rep>(next_random() % span)};
      }
      case DelayModel::Kind::Bursty:
        if (bursty_count_++ < model_.burst) return model_.base;
        bursty_count_ = 0;
        return model_.high;
      case DelayModel::Kind::Stalled:
        return kNever;
    }
    return model_.base;
  }

  FakeClock* clock_;
  DelayModel model_;
  DelayModel resume_model_ = DelayModel::fixed(Duration{0});
  TimelineValue next_;
  TimelineValue completed_;
  std::deque<Pending> pending_;
  uint64_t rng_ = 0;
  uint32_t bursty_count_ = 0;
  uint64_t wait_calls_ = 0;
  Duration waited_{0};
};

}  // namespace staging::testing
