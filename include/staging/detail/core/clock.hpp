// Clock: the monotonic clock a ring or streamer reads, injectable so that the library's tests and
// simulator control time; SteadyClock, std::chrono::steady_clock as a Clock, for those given none;
// Deadline, how every bounded wait of the library measures its timeout on its owner's clock.
#pragma once

#include <algorithm>
#include <chrono>

#include "staging/core/timeline.hpp"

namespace staging {

/// A monotonic clock. Threading: called from the ring's thread.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Time since an arbitrary, fixed origin. Never decreases.
  [[nodiscard]] virtual Duration now() = 0;
};

/// std::chrono::steady_clock as a Clock. Stateless; safe from any thread.
class SteadyClock final : public Clock {
 public:
  /// std::chrono::steady_clock::now() since its epoch. Never decreases.
  [[nodiscard]] Duration now() override {
    return std::chrono::duration_cast<Duration>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
  /// A process-wide instance, for rings given no clock. Lives until the process exits.
  static SteadyClock& instance() noexcept {
    static SteadyClock clock;
    return clock;
  }
};

/// A deadline `timeout` after it was made, on a Clock: the one way the library's bounded waits
/// (reserve_waiting(), a Vulkan ring's begin() under Wait, a shared frame's wait_drained(), the
/// stream scheduler's and the CUDA uploader's and timeline's waits) measure their timeout, so
/// that each runs on its owner's clock and none overflows; waits the driver carries out
/// (vkWaitSemaphores) are given the timeout cut to kLongest the same way. A timeout of 0 or less
/// has passed at once; one above kLongest is kLongest (a "forever" of Duration::max() waits a
/// year rather than wrapping around).
///
/// Threading: a plain value, read by the thread that waits; the clock must outlive it.
class Deadline {
 public:
  /// The longest timeout a deadline keeps (longer ones are cut to it).
  static constexpr Duration kLongest = std::chrono::hours(24 * 365);

  /// Starts now, on `clock`.
  Deadline(Clock& clock, Duration timeout)
      : clock_(&clock),
        start_(clock.now()),
        end_(start_ + std::clamp(timeout, Duration{0}, kLongest)) {}

  /// When the deadline was made (clock time).
  [[nodiscard]] Duration start() const noexcept { return start_; }
  /// When it passes (clock time): start() plus the timeout as kept.
  [[nodiscard]] Duration end() const noexcept { return end_; }
  /// The time left at clock time `now` (0 once passed).
  [[nodiscard]] Duration remaining_at(Duration now) const noexcept {
    return end_ > now ? end_ - now : Duration{0};
  }
  /// The time left, read now (0 once passed).
  [[nodiscard]] Duration remaining() const { return remaining_at(clock_->now()); }
  /// Whether no time is left.
  [[nodiscard]] bool passed() const { return remaining() == Duration{0}; }
  /// The time since start(), read now.
  [[nodiscard]] Duration elapsed() const { return clock_->now() - start_; }

 private:
  Clock* clock_;
  Duration start_;
  Duration end_;
};

}  // namespace staging
