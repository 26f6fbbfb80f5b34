// A byte-ring Ring (RingConfig::strategy a ByteRingConfig) on the device: the core's byte ring as
// the frame API's staging memory. Frames are held on the GPU by per-frame gates (frame k's
// submission waits until the host signals gate >= k), so which frames are in flight is decided by
// the test, not by the GPU's speed. The core's InvariantChecker sees every reservation and
// completion; the StagingChecker checks every staging range against the semaphores' real values;
// every byte is read back after the gates open.
//
// Ring sketches: one character per 100 KiB of region 0; 1..4 the frame owning the bytes, '-' free,
// '#' a skipped tail charged to the reservation that wrapped.
#include <gtest/gtest.h>

#include <atomic>

#include "harness.hpp"

namespace staging::vulkan::test {
namespace {

constexpr uint64_t KiB = 1024;

// The byte ring's counters in a byte-ring Ring's stats.
const ByteRingStats& bytes_of(const Stats& s) {
  return std::get<ByteRingStats>(s.strategy);
}

class ByteStrategy : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (gpu == nullptr) return;
    gate = gpu->make_timeline(0);
    staging_checker = std::make_unique<StagingChecker>(*gpu);
  }
  void TearDown() override {
    if (gpu != nullptr) {
      release_all();
      vkDeviceWaitIdle(gpu->device);
      gpu->destroy(gate);
    }
    GpuTest::TearDown();
  }
  // A ring of 1000 KiB, Defer unless told otherwise; the backend answers RingFull (no fallback
  // route) so that the byte ring's own answers are visible. Every reservation is flushed. A wait
  // that must succeed needs a timeout long enough for a loaded CPU device to run the frames.
  Ring make_ring(ExhaustionPolicy policy, uint64_t cap = 0,
                 Duration wait_timeout = std::chrono::milliseconds(100)) {
    RingConfig config;
    config.strategy = ByteRingConfig{.capacity = 1000 * KiB,
                                     .cap = cap,
                                     .policy = policy,
                                     .wait_timeout = wait_timeout,
                                     .grow_step = 500 * KiB};
    config.policy = ExhaustionPolicy::Defer;
    config.flush_always = true;  // reservations at any offset: flush ranges rounded to the atom
    config.observer = staging_checker.get();
    config.checker = &invariants;
    return Ring::create(gpu->ring_device(), config).value();
  }
  // One frame uploading `size` random bytes at `offset`, submitted behind gate >= `gate_value`.
  Expected<RetirementPoint, UploadError> frame(Ring& ring, Harness& h, uint64_t offset,
                                               uint64_t size, uint64_t gate_value) {
    VkCommandBuffer cmd = h.commands();
    StagingFrame f = ring.begin(cmd, 0).value();
    if (const auto done = h.upload(f, offset, size); !done) return unexpected(done.error());
    const RetirementPoint point = f.finish(kAfterCopies).value();
    const VkSemaphoreSubmitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                     .semaphore = gate,
                                     .value = gate_value,
                                     .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
    h.submit(cmd, point, {&wait, 1});
    max_gate_ = std::max(max_gate_, gate_value);
    return point;
  }
  // Opens the gate for every frame submitted. (Never beyond the highest value waited for: the
  // validation layer 1.3.239 counts pending waits as pending signals for VUID-03259.)
  void release_all() { open_gate(max_gate_); }
  uint64_t gate_value() {
    uint64_t now = 0;
    vkGetSemaphoreCounterValue(gpu->device, gate, &now);
    return now;
  }
  void open_gate(uint64_t value) {
    if (gate_value() >= value) return;
    const VkSemaphoreSignalInfo info{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = gate, .value = value};
    ASSERT_EQ(vkSignalSemaphore(gpu->device, &info), VK_SUCCESS);
  }
  void expect_clean() {
    EXPECT_EQ(staging_checker->violations, 0u);
    EXPECT_GT(invariants.checks(), 0u);
    EXPECT_TRUE(invariants.violations().empty()) << invariants.violations().front().message;
  }

  VkSemaphore gate = VK_NULL_HANDLE;
  std::unique_ptr<StagingChecker> staging_checker;
  InvariantChecker invariants{InvariantChecker::Mode::Record};

 private:
  uint64_t max_gate_ = 0;
};

//   frames 1-3, 300 KiB each:  [ 1 1 1 2 2 2 3 3 3 - ]   100 KiB left before the end
//   frame 4 (300 KiB):         no room: WouldBlock (InFlight) -> RingFull; frames 1-3 are gated
//   gate 1: frame 1 retires    [ - - - 2 2 2 3 3 3 - ]
//   frame 4:                   [ 4 4 4 2 2 2 3 3 3 # ]   wrapped to 0, the tail skipped
TEST_F(ByteStrategy, TheByteRingWrapsAroundOnTheDevice) {
  Ring ring = make_ring(ExhaustionPolicy::Defer);
  Harness h(*gpu, 4096 * KiB, test_seed(40));
  RetirementPoint first;
  for (uint64_t k = 1; k <= 3; ++k) {
    const auto point = frame(ring, h, k * 1000 * KiB, 300 * KiB, k);
    ASSERT_TRUE(point);
    if (k == 1) first = *point;
  }
  EXPECT_EQ(detail::byte_ring(ring)->free_bytes(), 100 * KiB);
  const auto refused = frame(ring, h, 0, 300 * KiB, 4);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), UploadError::RingFull);
  ASSERT_TRUE(ring.last_reserve_error().has_value());
  EXPECT_EQ(ring.last_reserve_error()->kind, UploadError::WouldBlock);
  EXPECT_EQ(ring.last_reserve_error()->cause, BlockCause::InFlight);

  open_gate(1);
  ASSERT_TRUE(ring.wait(first, std::chrono::seconds(30)));
  const auto wrapped = frame(ring, h, 0, 300 * KiB, 4);
  ASSERT_TRUE(wrapped);
  const Stats s = ring.stats();
  EXPECT_EQ(bytes_of(s).wraps, 1u);
  EXPECT_EQ(bytes_of(s).bytes_skipped, 100 * KiB);
  EXPECT_EQ(s.frames_dropped, 1u);  // the refused frame, dropped unfinished
  EXPECT_EQ(s.flushes, 4u);         // one per reservation

  release_all();
  ASSERT_TRUE(ring.wait_idle(std::chrono::seconds(30)));
  EXPECT_EQ(detail::byte_ring(ring)->live(), 0u);
  h.verify();
  expect_clean();
}

// Wait: while the frames ahead are held, a reservation that needs their bytes waits out its
// timeout and names the oldest pending frame (its id is its token); once the gate opens, the same
// reservation waits for frame 1 and succeeds.
TEST_F(ByteStrategy, WaitNamesTheOldestFrameWhileTheQueueIsHeldThenSucceeds) {
  Ring ring = make_ring(ExhaustionPolicy::Wait, 0, std::chrono::seconds(2));
  Harness h(*gpu, 4096 * KiB, test_seed(41));
  for (uint64_t k = 1; k <= 3; ++k)
    ASSERT_TRUE(frame(ring, h, k * 1000 * KiB, 300 * KiB, k));
  const auto timed_out = frame(ring, h, 0, 300 * KiB, 4);
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error(), UploadError::RingFull);
  EXPECT_EQ(ring.last_reserve_error()->kind, UploadError::Timeout);
  EXPECT_EQ(ring.last_reserve_error()->oldest_pending, TimelineValue{1});
  EXPECT_EQ(bytes_of(ring.stats()).timeouts, 1u);

  open_gate(1);  // before the reservation, on this thread (see held_queue_test.cpp on VVL #4649)
  ASSERT_TRUE(frame(ring, h, 0, 300 * KiB, 4));
  EXPECT_EQ(bytes_of(ring.stats()).timeouts, 1u);
  release_all();
  h.verify();
  expect_clean();
}

// Grow and Fallback add memory only up to the cap (I5); beyond it the byte ring answers
// WouldBlock with cause Cap, and the memory goes away again once its frames retire.
class ByteStrategyCap : public ByteStrategy,
                        public ::testing::WithParamInterface<ExhaustionPolicy> {};

TEST_P(ByteStrategyCap, GrowAndFallbackStayUnderTheCap) {
  const ExhaustionPolicy policy = GetParam();
  Ring ring = make_ring(policy, 2000 * KiB);
  Harness h(*gpu, 8192 * KiB, test_seed(42));
  uint64_t k = 0;
  std::optional<UploadError> stop;
  while (!stop && k < 20) {
    ++k;
    const auto point = frame(ring, h, k * 400 * KiB, 400 * KiB, k);
    if (!point) stop = point.error();
  }
  ASSERT_EQ(stop, UploadError::RingFull);
  EXPECT_EQ(ring.last_reserve_error()->cause, BlockCause::Cap);
  const Stats s = ring.stats();
  EXPECT_LE(bytes_of(s).peak_held_bytes, 2000 * KiB);
  EXPECT_GE(policy == ExhaustionPolicy::Grow ? bytes_of(s).grows : bytes_of(s).fallbacks, 1u);
  release_all();
  ASSERT_TRUE(ring.wait_idle(std::chrono::seconds(30)));
  h.verify();
  EXPECT_EQ(detail::byte_ring(ring)->live(), 0u);
  expect_clean();
}

INSTANTIATE_TEST_SUITE_P(Policies, ByteStrategyCap,
                         ::testing::Values(ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback),
                         [](const ::testing::TestParamInfo<ExhaustionPolicy>& param) {
                           return std::string(to_string(param.param));
                         });

// A frame reported abandoned, or dropped unfinished, gives its reservations back at once (the
// newest rolls the head back); a lost device cancels every frame in flight.
TEST_F(ByteStrategy, AbandonedDroppedAndFailedFramesGiveTheirBytesBack) {
  Device device = gpu->ring_device();
  static std::atomic<bool> lost{false};
  static PFN_vkGetSemaphoreCounterValue real = nullptr;
  real = device.dispatch.vkGetSemaphoreCounterValue;
  device.dispatch.vkGetSemaphoreCounterValue = [](VkDevice d, VkSemaphore s, uint64_t* v) {
    return lost ? VK_ERROR_DEVICE_LOST : real(d, s, v);
  };
  RingConfig config;
  config.strategy = ByteRingConfig{.capacity = 1000 * KiB};
  config.observer = staging_checker.get();
  config.checker = &invariants;
  Ring ring = Ring::create(device, config).value();
  Harness h(*gpu, 1024 * KiB, test_seed(43));

  VkCommandBuffer cmd = h.commands();
  {
    StagingFrame dropped = ring.begin(cmd, 0).value();
    ASSERT_TRUE(dropped.upload(h.dst.buffer, 0, std::vector<std::byte>(600 * KiB)));
    EXPECT_EQ(detail::byte_ring(ring)->live(), 1u);
  }
  EXPECT_EQ(detail::byte_ring(ring)->live(), 0u);
  EXPECT_EQ(detail::byte_ring(ring)->free_bytes(), 1000 * KiB);

  VkCommandBuffer thrown_away = h.commands();  // recorded, never submitted
  StagingFrame abandoned = ring.begin(thrown_away, 0).value();
  ASSERT_TRUE(abandoned.upload(h.dst.buffer, 0, std::vector<std::byte>(600 * KiB)));
  const RetirementPoint never = abandoned.finish(kAfterCopies).value();
  EXPECT_TRUE(ring.abandon(never));
  EXPECT_EQ(detail::byte_ring(ring)->free_bytes(), 1000 * KiB);

  StagingFrame kept = ring.begin(cmd, 0).value();
  ASSERT_TRUE(h.upload(kept, 100, 600 * KiB));
  const RetirementPoint point = kept.finish(kAfterCopies).value();
  h.submit(cmd, point);
  ASSERT_EQ(vkQueueWaitIdle(gpu->queue), VK_SUCCESS);
  h.verify();

  lost = true;  // injected: the device is really idle, so cancelling is safe
  EXPECT_EQ(ring.poll(), 0u);
  lost = false;
  EXPECT_EQ(ring.stats().points_failed, 1u);
  EXPECT_EQ(detail::byte_ring(ring)->live(), 0u);
  VkCommandBuffer again = h.commands();
  StagingFrame next = ring.begin(again, 0).value();  // the ring works on
  ASSERT_TRUE(h.upload(next, 5, 999 * KiB));
  h.submit(again, next.finish(kAfterCopies).value());
  h.verify();
  expect_clean();
}

// A caller's own timeline drives byte-ring retirement just as the ring's own does.
TEST_F(ByteStrategy, FramesRetireAtTheCallersOwnTimelineValue) {
  Ring ring = make_ring(ExhaustionPolicy::Defer);
  Harness h(*gpu, 2048 * KiB, test_seed(44));
  const VkSemaphore mine = gpu->make_timeline(100);
  for (uint64_t k = 1; k <= 3; ++k) {
    VkCommandBuffer cmd = h.commands();
    StagingFrame f = ring.begin(cmd, 0).value();
    ASSERT_TRUE(h.upload(f, k * 300 * KiB, 300 * KiB));
    const RetirementPoint point = f.finish(kAfterCopies, RetirementPoint{mine, 100 + k}).value();
    h.submit(cmd, point);
  }
  gpu->wait(mine, 103);
  ring.poll();
  EXPECT_EQ(detail::byte_ring(ring)->live(), 0u);
  EXPECT_EQ(ring.last_value(), 0u);
  h.verify();
  expect_clean();
  gpu->destroy(mine);
}

}  // namespace
}  // namespace staging::vulkan::test
