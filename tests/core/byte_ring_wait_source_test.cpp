// A CompletionSource may answer a wait early, below the value asked for, when it knows waiting
// cannot reach it (timeline.hpp) — e.g. the Vulkan backend, asked for a frame still being
// recorded on the waiting thread. reserve_waiting() then gives up at once with Timeout instead
// of calling the source again and again until its deadline.
#include <gtest/gtest.h>

#include "staging/core/byte_ring.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/testing/fake_queue.hpp"
#include "staging/testing/fake_region_allocator.hpp"

namespace staging {
namespace {

// Completes nothing; every wait returns at once (1 µs later), below the value asked for.
class HopelessSource final : public CompletionSource {
 public:
  explicit HopelessSource(testing::FakeClock& clock) : clock_(&clock) {}
  TimelineValue completed() override { return 0; }
  TimelineValue wait(TimelineValue /*value*/, Duration /*timeout*/) override {
    ++waits;
    clock_->advance(std::chrono::microseconds(1));  // time passes: not a contract-breaking spin
    return 0;
  }
  int waits = 0;

 private:
  testing::FakeClock* clock_;
};

//   [ A A A A A A - - - - ]   A (token 1) never completes; B (6 bytes) must wait for it.
TEST(ByteRingWait, ASourceThatAnswersBelowTheTargetEndsTheWaitAtOnce) {
  testing::FakeClock clock;
  HopelessSource source(clock);
  testing::FakeRegionAllocator memory;
  ByteRingConfig config;
  config.capacity = 10;
  config.policy = ExhaustionPolicy::Wait;
  config.wait_timeout = std::chrono::seconds(10);
  staging::detail::ByteRingDeps deps;
  deps.allocator = &memory;
  deps.clock = &clock;
  ByteRing ring = std::move(staging::detail::create_byte_ring(config, deps).value());
  const auto request = [](uint64_t token) {
    ReserveRequest r;
    r.size = 6;
    r.token = token;
    return r;
  };
  ASSERT_TRUE(reserve_waiting(ring, source, request(1)));
  const auto b = reserve_waiting(ring, source, request(2));
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().kind, UploadError::Timeout);
  EXPECT_EQ(b.error().oldest_pending, TimelineValue{1});
  EXPECT_EQ(source.waits, 1);  // not 10 s / 1 µs of calls
  EXPECT_LT(b.error().waited, std::chrono::milliseconds(1));
}

}  // namespace
}  // namespace staging
