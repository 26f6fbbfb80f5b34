// Deadline: the timeout every bounded wait measures, on its owner's clock. A fake clock moves it;
// zero and negative timeouts have passed at once; a "forever" is cut to a year, never wrapped.
#include <gtest/gtest.h>

#include <chrono>

#include "staging/detail/core/clock.hpp"
#include "staging/testing/fake_queue.hpp"

namespace staging {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

TEST(Deadline, CountsDownOnItsOwnersClock) {
  FakeClock clock;
  clock.advance(5s);
  const Deadline deadline(clock, 100ms);
  EXPECT_EQ(deadline.start(), 5s);
  EXPECT_EQ(deadline.end(), 5s + 100ms);
  EXPECT_EQ(deadline.remaining(), 100ms);
  EXPECT_FALSE(deadline.passed());
  clock.advance(30ms);
  EXPECT_EQ(deadline.remaining(), 70ms);
  EXPECT_EQ(deadline.elapsed(), 30ms);
  EXPECT_EQ(deadline.remaining_at(5s + 99ms), 1ms);
  clock.advance(70ms);
  EXPECT_EQ(deadline.remaining(), 0ms);
  EXPECT_TRUE(deadline.passed());
  clock.advance(1h);
  EXPECT_EQ(deadline.remaining(), 0ms);  // never negative
  EXPECT_EQ(deadline.remaining_at(0s), 100ms + 5s);
}

TEST(Deadline, ZeroAndNegativeTimeoutsHavePassedAtOnce) {
  FakeClock clock;
  EXPECT_TRUE(Deadline(clock, 0ns).passed());
  EXPECT_TRUE(Deadline(clock, -1s).passed());
  EXPECT_EQ(Deadline(clock, -1s).end(), Deadline(clock, 0ns).start());
}

TEST(Deadline, AForeverIsCutToAYearNeverWrapped) {
  FakeClock clock;
  clock.advance(Duration::max() / 2);  // far into the clock's range
  const Deadline forever(clock, Duration::max());
  EXPECT_EQ(forever.end() - forever.start(), Deadline::kLongest);
  EXPECT_GT(forever.end(), forever.start());
  EXPECT_EQ(forever.remaining(), Deadline::kLongest);
}

}  // namespace
}  // namespace staging
