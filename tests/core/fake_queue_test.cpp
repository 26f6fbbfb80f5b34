// The fakes the byte-ring tests and staging-sim stand on: FakeClock, FakeQueue (delay models,
// in-order completion, waits in virtual time, stall/release), FakeRegionAllocator (real host
// memory, guards, failure injection) and FakeSlotAllocator's failure injection.
#include "staging/testing/fake_queue.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "staging/testing/fake_region_allocator.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

namespace staging::testing {
namespace {

using namespace std::chrono_literals;

TEST(FakeClock, MovesOnlyForwardAndOnlyWhenTold) {
  FakeClock clock;
  EXPECT_EQ(clock.now(), Duration{0});
  clock.advance(5us);
  clock.advance(-3us);
  clock.advance_to(2us);
  EXPECT_EQ(clock.now(), 5us);
  clock.advance_to(9us);
  EXPECT_EQ(clock.now(), 9us);
}

TEST(FakeQueue, FixedDelayCompletesEachSubmissionAfterTheDelay) {
  FakeClock clock;
  FakeQueue q(clock, DelayModel::fixed(10us));
  EXPECT_EQ(q.next_value(), 1u);
  EXPECT_EQ(q.completed(), 0u);
  EXPECT_EQ(q.submit(), 1u);
  clock.advance(4us);
  EXPECT_EQ(q.submit(), 2u);  // completes at 14us
  EXPECT_EQ(q.completion_time(2), 14us);
  clock.advance(6us);
  EXPECT_EQ(q.completed(), 1u);
  clock.advance(4us);
  EXPECT_EQ(q.completed(), 2u);
  EXPECT_EQ(q.pending(), 0u);
}

TEST(FakeQueue, WaitAdvancesVirtualTimeToTheCompletionOrTheTimeout) {
  FakeClock clock;
  FakeQueue q(clock, DelayModel::fixed(10us));
  q.submit();
  EXPECT_EQ(q.wait(1, 3us), 0u);  // timed out
  EXPECT_EQ(clock.now(), 3us);
  EXPECT_EQ(q.wait(1, 1ms), 1u);  // completes at 10us: no further
  EXPECT_EQ(clock.now(), 10us);
  EXPECT_EQ(q.wait(1, 1ms), 1u);  // already done: no time passes
  EXPECT_EQ(clock.now(), 10us);
  EXPECT_EQ(q.wait(7, 2us), 1u);  // never submitted: the whole timeout
  EXPECT_EQ(clock.now(), 12us);
  EXPECT_EQ(q.wait(7, Duration{0}), 1u);  // a timeout of 0 polls
  EXPECT_EQ(clock.now(), 12us);
  EXPECT_EQ(q.wait(7, Duration::max()), 1u);  // saturates, never overflows
  EXPECT_EQ(q.wait_calls(), 6u);
}

TEST(FakeQueue, CompletionIsInOrderSoTheCompletedValueOnlyIncreases) {
  FakeClock clock;
  FakeQueue q(clock, DelayModel::seeded_random(Duration{0}, 100us, 1));
  TimelineValue last = 0;
  for (int i = 0; i < 1000; ++i) {
    q.submit();
    clock.advance(7us);
    const TimelineValue now = q.completed();
    EXPECT_GE(now, last);
    // A later submission never completes before an earlier one.
    for (TimelineValue v = now + 2; v <= q.submitted(); ++v)
      EXPECT_GE(*q.completion_time(v), *q.completion_time(v - 1));
    last = now;
  }
}

TEST(FakeQueue, SeededRandomDelaysAreReproducibleAndInRange) {
  const auto run = [](uint64_t seed) {
    FakeClock clock;
    FakeQueue q(clock, DelayModel::seeded_random(20us, 80us, seed));
    std::vector<Duration> times;
    for (int i = 0; i < 200; ++i) {
      const TimelineValue v = q.submit();
      times.push_back(*q.completion_time(v));
      clock.advance(100us);  // each completes before the next is submitted
    }
    return times;
  };
  const std::vector<Duration> a = run(5), b = run(5), c = run(6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Duration delay = a[i] - Duration{static_cast<Duration::rep>(i) * 100'000};
    EXPECT_GE(delay, 20us);
    EXPECT_LE(delay, 80us);
  }
}

// bursty(fast 1us, slow 50us, 3): three fast submissions, then a slow one that holds back
// everything behind it — completions arrive in a burst.
TEST(FakeQueue, BurstyHoldsLaterSubmissionsBehindTheSlowOne) {
  FakeClock clock;
  FakeQueue q(clock, DelayModel::bursty(1us, 50us, 3));
  for (int i = 0; i < 6; ++i)
    q.submit();
  EXPECT_EQ(q.completion_time(3), 1us);
  EXPECT_EQ(q.completion_time(4), 50us);
  EXPECT_EQ(q.completion_time(5), 50us);  // fast, but after 4: in order
  clock.advance(2us);
  EXPECT_EQ(q.completed(), 3u);
  clock.advance(48us);
  EXPECT_EQ(q.completed(), 6u);  // the burst
}

TEST(FakeQueue, AStalledQueueCompletesNothingUntilReleased) {
  FakeClock clock;
  FakeQueue q(clock, DelayModel::stalled());
  q.submit();
  q.submit();
  EXPECT_TRUE(q.stalled());
  EXPECT_EQ(q.wait(1, 1ms), 0u);
  EXPECT_EQ(clock.now(), 1ms);  // waited exactly the timeout, never hung
  q.release(DelayModel::fixed(5us));
  EXPECT_FALSE(q.stalled());
  EXPECT_EQ(q.wait(2, 1ms), 2u);
  EXPECT_EQ(clock.now(), 1ms + 5us);
}

TEST(FakeQueue, StallStopsARunningQueueIncludingWhatIsPending) {
  FakeClock clock;
  FakeQueue q(clock, DelayModel::fixed(10us));
  q.submit();  // done at 10us
  q.submit();  // done at 10us
  clock.advance(10us);
  q.submit();  // would be done at 20us
  q.stall();   // 1 and 2 were due: they completed; 3 stops
  EXPECT_EQ(q.completed(), 2u);
  clock.advance(1ms);
  EXPECT_EQ(q.completed(), 2u);
  q.release();  // resumes with the model before the stall: 10us from now
  EXPECT_EQ(q.completion_time(3), 1ms + 20us);
  EXPECT_EQ(q.model().kind, DelayModel::Kind::Fixed);
}

TEST(FakeQueue, CompleteThroughFinishesSubmissionsNow) {
  FakeClock clock;
  FakeQueue q(clock, DelayModel::fixed(1ms));
  q.submit();
  q.submit();
  q.submit();
  q.complete_through(2);
  EXPECT_EQ(q.completed(), 2u);
  EXPECT_EQ(q.completion_time(3), 1ms);
}

TEST(FakeRegionAllocator, RegionsAreRealMemoryWithGuardsAndAPattern) {
  FakeRegionAllocator a;
  ASSERT_TRUE(a.create_region(2, 100));
  EXPECT_TRUE(a.live(2));
  EXPECT_FALSE(a.live(0));
  EXPECT_EQ(a.size(2), 100u);
  EXPECT_EQ(a.data(2)[0], FakeRegionAllocator::kFill);  // never zeros
  a.data(2)[99] = std::byte{1};
  EXPECT_TRUE(a.guards_intact(2));
  a.data(2)[100] = std::byte{1};  // one byte past the end
  EXPECT_FALSE(a.guards_intact(2));
  EXPECT_FALSE(a.all_guards_intact());
  a.destroy_region(2);
  EXPECT_EQ(a.log().guard_violations, 1u);
  EXPECT_EQ(a.log().live_bytes, 0u);
  EXPECT_EQ(a.log().peak_live_bytes, 100u);
}

TEST(FakeRegionAllocator, FailuresCanBeInjected) {
  FakeRegionAllocator a;
  a.fail_next(2, AllocError::MapFailed);
  EXPECT_EQ(a.create_region(0, 8).error(), AllocError::MapFailed);
  EXPECT_EQ(a.create_region(0, 8).error(), AllocError::MapFailed);
  EXPECT_TRUE(a.create_region(0, 8));
  a.set_budget(16);
  EXPECT_EQ(a.create_region(1, 9).error(), AllocError::OutOfMemory);
  EXPECT_TRUE(a.create_region(1, 8));
  a.set_max_region_bytes(4);
  a.set_budget(std::nullopt);
  EXPECT_EQ(a.create_region(2, 5).error(), AllocError::OutOfMemory);
  EXPECT_EQ(a.log().failed, 4u);
  EXPECT_EQ(a.log().sizes, (std::vector<uint64_t>{8, 8}));
}

// fail_next(n, error) and set_budget() are independent: armed failures keep the error they were
// armed with whatever the budget, and budget refusals are OutOfMemory whatever was armed.
TEST(FakeSlotAllocator, ArmedFailuresAndTheBudgetKeepTheirOwnErrors) {
  FakeSlotAllocator a;
  a.fail_next(1, AllocError::DeviceLost);
  a.set_budget(100);  // must not change the armed failure's error
  EXPECT_EQ(a.create(8).error(), AllocError::DeviceLost);
  a.fail_next(0, AllocError::MapFailed);  // disarmed, but the last error given is MapFailed
  EXPECT_EQ(a.create(101).error(), AllocError::OutOfMemory);  // over the budget
  EXPECT_TRUE(a.create(100));
  EXPECT_EQ(a.log().failed, 2u);
  EXPECT_EQ(a.log().capacities, (std::vector<uint64_t>{100}));
}

}  // namespace
}  // namespace staging::testing
