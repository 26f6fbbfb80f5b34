// EventTimeline on the fake device: points complete in order as a contiguous prefix, the pool of
// events is fixed, a full pool waits (bounded), stream_wait orders another stream, and a failing
// query (lost device) stops the timeline instead of reusing anything.
#include "staging/detail/cuda/event_timeline.hpp"

#include <gtest/gtest.h>

#include "fake_device.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using testing::FakeDevice;

struct EventTimelineTest : ::testing::Test {
  FakeDevice device;
  std::unique_ptr<EventTimeline> timeline = std::move(*EventTimeline::create(device, 4));
};

TEST_F(EventTimelineTest, CreatesItsEventsOnceAndDestroysThemAtTheEnd) {
  EXPECT_EQ(device.events_created(), 4);
  for (int i = 0; i < 50; ++i) {
    const TimelineValue p = *timeline->open(1s);
    ASSERT_EQ(timeline->record(p, nullptr), cudaSuccess);
    device.synchronize(nullptr);
    ASSERT_EQ(timeline->completed(), p);
  }
  EXPECT_EQ(device.events_created(), 4);  // 50 points, no event made per point
  timeline.reset();
  EXPECT_EQ(device.events_live(), 0);
}

TEST_F(EventTimelineTest, ZeroEventsIsRefused) {
  EXPECT_FALSE(EventTimeline::create(device, 0).has_value());
}

TEST_F(EventTimelineTest, CompletedIsTheContiguousPrefix) {
  // Points 1 (stream a, held by a gate), 2 (stream b), 3 (released without GPU work).
  const cudaStream_t a = device.create_stream();
  const cudaStream_t b = device.create_stream();
  const int gate = device.close_gate(a);
  const TimelineValue p1 = *timeline->open(0s), p2 = *timeline->open(0s), p3 = *timeline->open(0s);
  EXPECT_EQ(p1, 1u);
  EXPECT_EQ(p3, 3u);
  ASSERT_EQ(timeline->record(p1, a), cudaSuccess);
  ASSERT_EQ(timeline->record(p2, b), cudaSuccess);
  timeline->release(p3);
  device.synchronize(b);
  // 2 and 3 are done, 1 is not: completed() must not skip it.
  EXPECT_EQ(timeline->completed(), 0u);
  EXPECT_EQ(timeline->wait(1, 20ms), 0u);  // times out, returns what it has
  device.open_gate(gate);
  EXPECT_EQ(timeline->wait(3, 5s), 3u);
}

TEST_F(EventTimelineTest, AnOpenPointHoldsBackLaterOnes) {
  const TimelineValue p1 = *timeline->open(0s), p2 = *timeline->open(0s);
  ASSERT_EQ(timeline->record(p2, nullptr), cudaSuccess);
  device.synchronize(nullptr);
  EXPECT_EQ(timeline->completed(), 0u);  // 1 is neither recorded nor released
  timeline->release(p1);
  EXPECT_EQ(timeline->completed(), 2u);
}

TEST_F(EventTimelineTest, AFullPoolWaitsBoundedThenRecovers) {
  const cudaStream_t s = device.create_stream();
  const int gate = device.close_gate(s);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(timeline->record(*timeline->open(0s), s), cudaSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  auto full = timeline->open(30ms);
  EXPECT_FALSE(full.has_value());
  EXPECT_EQ(full.error(), cudaErrorNotReady);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
  device.open_gate(gate);
  auto next = timeline->open(5s);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, 5u);
  EXPECT_GE(timeline->stats().pool_waits, 1u);
}

TEST_F(EventTimelineTest, StreamWaitOrdersAnotherStream) {
  const cudaStream_t a = device.create_stream();
  const cudaStream_t b = device.create_stream();
  const int gate = device.close_gate(a);
  const TimelineValue p = *timeline->open(0s);
  ASSERT_EQ(timeline->record(p, a), cudaSuccess);
  ASSERT_EQ(timeline->stream_wait(b, p), cudaSuccess);
  // Work on b after the wait may not run before p: b's marker point stays pending.
  const TimelineValue marker = *timeline->open(0s);
  ASSERT_EQ(timeline->record(marker, b), cudaSuccess);
  std::this_thread::sleep_for(10ms);
  EXPECT_LT(timeline->completed(), marker);
  device.open_gate(gate);
  EXPECT_EQ(timeline->wait(marker, 5s), marker);
}

TEST_F(EventTimelineTest, StreamWaitEdges) {
  EXPECT_EQ(timeline->stream_wait(nullptr, 1), cudaErrorInvalidValue);  // never handed out
  const TimelineValue p = *timeline->open(0s);
  EXPECT_EQ(timeline->stream_wait(nullptr, p), cudaErrorNotReady);  // not recorded yet
  timeline->release(p);
  EXPECT_EQ(timeline->stream_wait(nullptr, p), cudaSuccess);  // completed: nothing to wait for
}

TEST_F(EventTimelineTest, ALostDeviceStopsTheTimeline) {
  const TimelineValue p1 = *timeline->open(0s);
  ASSERT_EQ(timeline->record(p1, nullptr), cudaSuccess);
  device.synchronize(nullptr);
  device.fail_queries(cudaErrorDevicesUnavailable);
  EXPECT_EQ(timeline->completed(), 0u);  // the query fails: nothing is known to be complete
  EXPECT_EQ(timeline->error(), cudaErrorDevicesUnavailable);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(timeline->wait(p1, 10s), 0u);  // at once: nothing completes any more
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_FALSE(timeline->open(0s).has_value());
}

}  // namespace
}  // namespace staging::cuda
