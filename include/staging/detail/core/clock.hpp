// Clock: the monotonic clock a ring or streamer reads, injectable so that the library's tests and
// simulator control time; SteadyClock, std::chrono::steady_clock as a Clock, for those given none.
#pragma once

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

}  // namespace staging
