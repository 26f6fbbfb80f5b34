// Retirement and failure (invariant I3): memory is reclaimed when the semaphore reaches the
// point — the ring's own timeline or the caller's — never by counting frames; an abandoned frame
// is reported (its slot replaced) or superseded by a later value; a lost device
// fails every frame in flight and the next frame recovers; an allocation failure leaves the slot
// Failed and the next frame recovers. Device loss and allocation failure are injected through the
// dispatch table and the memory hook, on a device that stays healthy.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "harness.hpp"
#include "staging/detail/vulkan/default_memory.hpp"

namespace staging::vulkan::test {
namespace {

constexpr uint64_t KiB = 1024;
constexpr auto kSecond = std::chrono::seconds(1);

TEST_F(GpuTest, AnAbandonedFrameIsReportedAndItsSlotReplaced) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.strategy = StagingRingConfig{.slots = 1};
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 256 * KiB, 10);

  // Frame 1 is recorded, then its command buffer is thrown away unsubmitted.
  VkCommandBuffer dropped = h.commands();
  StagingFrame frame = ring.begin(dropped, 4096).value();
  std::vector<std::byte> unused(100);
  ASSERT_TRUE(frame.upload(h.dst.buffer, 0, unused));
  ASSERT_TRUE(frame.upload(h.dst.buffer, 4096, std::vector<std::byte>(80 * KiB)));  // one-off
  const RetirementPoint lost = frame.finish(kAfterCopies).value();
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::InFlight);
  EXPECT_GT(ring.stats().oneoff_live_bytes, 0u);
  EXPECT_TRUE(ring.abandon(lost));
  EXPECT_FALSE(ring.abandon(lost));  // reported once
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Abandoned);
  EXPECT_EQ(ring.stats().oneoff_live_bytes, 0u);
  EXPECT_EQ(ring.stats().points_abandoned, 1u);

  // The next frame gets the slot back with a fresh buffer (replaced on the next pick).
  VkCommandBuffer cmd = h.commands();
  StagingFrame next = ring.begin(cmd, 4096).value();
  EXPECT_EQ(std::get<StagingStats>(ring.stats().strategy).slots_replaced, 1u);
  EXPECT_EQ(std::get<StagingStats>(ring.stats().strategy).abandoned_seen, 1u);
  ASSERT_TRUE(h.upload(next, 1000, 3000));
  // The ring's timeline moves on: the abandoned value 1 is never signalled, 2 is.
  const RetirementPoint point = next.finish(kAfterCopies).value();
  EXPECT_EQ(point.value, lost.value + 1);
  h.submit(cmd, point);
  h.verify();
  EXPECT_EQ(ring.poll(), 1u);
  EXPECT_EQ(checker.violations, 0u);
}

// Frame 1's command buffer is dropped and nobody says so; frame 2 signals value 2, which is >= 1:
// frame 1 is superseded and its slot reclaimed (nothing ever read it).
TEST_F(GpuTest, AnUnreportedAbandonedFrameIsSupersededByALaterValue) {
  RingConfig config;
  config.strategy = StagingRingConfig{.slots = 2};
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 64 * KiB, 11);
  VkCommandBuffer dropped = h.commands();
  StagingFrame first = ring.begin(dropped, 4096).value();
  ASSERT_TRUE(first.upload(h.dst.buffer, 0, std::vector<std::byte>(16)));
  const RetirementPoint never = first.finish(kAfterCopies).value();
  VkCommandBuffer cmd = h.commands();
  StagingFrame second = ring.begin(cmd, 4096).value();
  ASSERT_TRUE(h.upload(second, 100, 2000));
  const RetirementPoint point = second.finish(kAfterCopies).value();
  h.submit(cmd, point);
  ASSERT_TRUE(ring.wait(point, 10 * kSecond));
  EXPECT_EQ(ring.in_flight(), 0u);
  EXPECT_EQ(ring.stats().points_retired, 2u);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Ready);
  EXPECT_EQ(detail::slot(ring, 1)->state, SlotState::Ready);
  EXPECT_FALSE(ring.abandon(never));  // already gone
  h.verify();
}

// A caller with its own frame timeline passes its semaphore and value to finish(); the ring
// retires at that value and never touches its own semaphore.
TEST_F(GpuTest, FramesRetireAtTheCallersOwnTimelineValue) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 64 * KiB, 12);
  const VkSemaphore mine = gpu->make_timeline(10);
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 4096).value();
  ASSERT_TRUE(h.upload(frame, 8, 4000));
  EXPECT_EQ(frame.finish(kAfterCopies, RetirementPoint{mine, 10}).error(),
            FinishError::PointAlreadyReached);  // 10 is already reached: would retire at once
  EXPECT_EQ(frame.finish(kAfterCopies, RetirementPoint{VK_NULL_HANDLE, 11}).error(),
            FinishError::NullSemaphore);
  ASSERT_TRUE(frame.active());  // refused finishes leave the frame open
  const RetirementPoint point = frame.finish(kAfterCopies, RetirementPoint{mine, 12}).value();
  EXPECT_EQ(point.semaphore, mine);
  EXPECT_EQ(point.value, 12u);
  EXPECT_EQ(ring.last_value(), 0u);
  EXPECT_EQ(ring.poll(), 0u);
  h.submit(cmd, point);
  gpu->wait(mine, 12);
  EXPECT_EQ(ring.poll(), 1u);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Ready);
  h.verify();
  EXPECT_EQ(checker.violations, 0u);
  gpu->destroy(mine);
}

// Slots retire by value, as bytes do: frames 1 and 2 finish on two semaphores of the caller's,
// and 2's is reached first. Its point retires (the one-offs, the count), but its slot waits until
// the frame sequence is released through 2, that is until frame 1's point is reached too.
//
//   slot 0: frame 1 InFlight (sem A = 1 pending)   slot 1: frame 2 InFlight (sem B = 1 reached)
//   poll(): frame 2 released, sequence released through 0 -> both slots stay InFlight
//   A = 1:  frame 1 released, sequence released through 2 -> both slots Ready
TEST_F(GpuTest, ASlotWhoseFrameCompletesEarlyWaitsForTheEarlierFrames) {
  RingConfig config;
  config.strategy = StagingRingConfig{.slots = 2};
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 64 * KiB, 13);
  const VkSemaphore a = gpu->make_timeline(0);
  const VkSemaphore b = gpu->make_timeline(0);
  StagingFrame first = ring.begin(h.commands(), 4096).value();
  (void)first.finish(kAfterCopies, RetirementPoint{a, 1}).value();
  StagingFrame second = ring.begin(h.commands(), 4096).value();
  (void)second.finish(kAfterCopies, RetirementPoint{b, 1}).value();
  const auto signal = [&](VkSemaphore s) {
    const VkSemaphoreSignalInfo info{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = s, .value = 1};
    ASSERT_EQ(vkSignalSemaphore(gpu->device, &info), VK_SUCCESS);
  };

  signal(b);
  EXPECT_EQ(ring.poll(), 1u);
  EXPECT_EQ(ring.in_flight(), 1u);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::InFlight);
  EXPECT_EQ(detail::slot(ring, 1)->state, SlotState::InFlight);  // waits for frame 1

  signal(a);
  EXPECT_EQ(ring.poll(), 1u);
  EXPECT_EQ(ring.in_flight(), 0u);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Ready);
  EXPECT_EQ(detail::slot(ring, 1)->state, SlotState::Ready);
  gpu->destroy(a);
  gpu->destroy(b);
}

// A frame destroyed unfinished records nothing: its slot is Ready at once, its one-off buffers
// are freed, and the (empty) command buffer submits cleanly.
TEST_F(GpuTest, ADroppedFrameRecordsNothingAndFreesItsSlot) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 256 * KiB, 13);
  VkCommandBuffer cmd = h.commands();
  {
    StagingFrame frame = ring.begin(cmd, 1000).value();
    ASSERT_TRUE(frame.upload(h.dst.buffer, 0, std::vector<std::byte>(900)));
    ASSERT_TRUE(frame.upload(h.dst.buffer, 1000, std::vector<std::byte>(100 * KiB)));  // one-off
    EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Recording);
  }
  const Stats s = ring.stats();
  EXPECT_EQ(s.frames_dropped, 1u);
  EXPECT_EQ(s.oneoff_live_bytes, 0u);
  EXPECT_EQ(s.copy_commands, 0u);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Ready);
  StagingFrame frame = ring.begin(cmd, 1000).value();
  ASSERT_TRUE(h.upload(frame, 50, 500));
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
  EXPECT_EQ(checker.violations, 0u);
}

// ---- injected device loss -----------------------------------------------------------------

std::atomic<bool> g_device_lost{false};
// Reading this one semaphore's counter answers VK_ERROR_DEVICE_LOST (the others read as usual).
VkSemaphore g_lost_semaphore = VK_NULL_HANDLE;
PFN_vkGetSemaphoreCounterValue g_real_counter = nullptr;
PFN_vkWaitSemaphores g_real_wait = nullptr;

VKAPI_ATTR VkResult VKAPI_CALL lossy_counter(VkDevice device, VkSemaphore s, uint64_t* value) {
  if (g_device_lost || (s != VK_NULL_HANDLE && s == g_lost_semaphore)) return VK_ERROR_DEVICE_LOST;
  return g_real_counter(device, s, value);
}
VKAPI_ATTR VkResult VKAPI_CALL lossy_wait(VkDevice device, const VkSemaphoreWaitInfo* info,
                                          uint64_t timeout) {
  if (g_device_lost) return VK_ERROR_DEVICE_LOST;
  return g_real_wait(device, info, timeout);
}

// One reached() and one bounded wait() for any point of the device — a frame's, a streamed
// upload's, the caller's own semaphore: here the caller's, signalled on the host.
TEST_F(GpuTest, APointIsReachedWhenItsSemaphoreGetsThereAndAWaitIsBounded) {
  const Device device = gpu->ring_device();
  VkSemaphore own = gpu->make_timeline(3);
  const RetirementPoint passed{own, 3};
  const RetirementPoint ahead{own, 5};
  EXPECT_EQ(reached(device, passed), true);
  EXPECT_EQ(reached(device, ahead), false);
  EXPECT_TRUE(wait(device, passed, std::chrono::nanoseconds(0)));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(wait(device, ahead, std::chrono::milliseconds(20)).error(), WaitError::Timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10 * kSecond);  // bounded, never hangs
  EXPECT_EQ(wait(device, ahead, std::chrono::nanoseconds(0)).error(), WaitError::Timeout);

  const VkSemaphoreSignalInfo info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = own, .value = 5};
  ASSERT_EQ(vkSignalSemaphore(gpu->device, &info), VK_SUCCESS);
  EXPECT_EQ(reached(device, ahead), true);
  EXPECT_TRUE(wait(device, ahead, kSecond));

  // A default point is reached; a point with a value but no semaphore is a caller's error.
  EXPECT_EQ(reached(device, RetirementPoint{}), true);
  EXPECT_TRUE(wait(device, RetirementPoint{}, kSecond));
  EXPECT_EQ(reached(device, RetirementPoint{VK_NULL_HANDLE, 1}).error(), WaitError::Failed);
  EXPECT_EQ(wait(device, RetirementPoint{VK_NULL_HANDLE, 1}, kSecond).error(), WaitError::Failed);
  gpu->destroy(own);
}

TEST_F(GpuTest, ALostDeviceFailsTheFramesInFlightAndTheNextFrameRecovers) {
  StagingChecker checker(*gpu);
  Device device = gpu->ring_device();
  g_real_counter = device.dispatch.vkGetSemaphoreCounterValue;
  g_real_wait = device.dispatch.vkWaitSemaphores;
  device.dispatch.vkGetSemaphoreCounterValue = lossy_counter;
  device.dispatch.vkWaitSemaphores = lossy_wait;
  RingConfig config;
  config.observer = &checker;
  Ring ring = Ring::create(device, config).value();
  Harness h(*gpu, 256 * KiB, 14);

  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 4096).value();
  ASSERT_TRUE(h.upload(frame, 0, 4000));
  ASSERT_TRUE(h.upload(frame, 8192, 100 * KiB));  // one-off
  const RetirementPoint point = frame.finish(kAfterCopies).value();
  h.submit(cmd, point);
  ASSERT_EQ(vkQueueWaitIdle(gpu->queue), VK_SUCCESS);  // really done: freeing is safe below

  g_device_lost = true;
  // The free queries answer the loss and change nothing; the ring's wait fails its frames.
  EXPECT_EQ(reached(device, point).error(), WaitError::DeviceLost);
  EXPECT_EQ(wait(device, point, kSecond).error(), WaitError::DeviceLost);
  EXPECT_EQ(ring.in_flight(), 1u);
  EXPECT_EQ(ring.wait(point, kSecond).error(), WaitError::DeviceLost);
  Stats s = ring.stats();
  EXPECT_EQ(s.device_lost, 1u);
  EXPECT_EQ(s.points_failed, 1u);
  EXPECT_EQ(s.points_retired, 0u);
  EXPECT_EQ(s.oneoff_live_bytes, 0u);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Failed);
  EXPECT_EQ(ring.in_flight(), 0u);
  VkCommandBuffer later = h.commands();
  StagingFrame refused = ring.begin(later, 100).value();  // begin's poll finds nothing to fail
  EXPECT_EQ(ring.stats().device_lost, 1u);
  refused = StagingFrame();
  g_device_lost = false;

  // The device is back (an application would have recreated it): the Failed slot is replaced.
  StagingFrame next = ring.begin(later, 4096).value();
  EXPECT_GE(std::get<StagingStats>(ring.stats().strategy).failed_seen, 1u);
  EXPECT_GE(std::get<StagingStats>(ring.stats().strategy).slots_replaced, 1u);
  ASSERT_TRUE(h.upload(next, 300, 3000));
  const RetirementPoint again = next.finish(kAfterCopies).value();
  h.submit(later, again);
  ASSERT_TRUE(ring.wait(again, 10 * kSecond));
  h.verify();
  EXPECT_EQ(checker.violations, 0u);
}

// The ring's FrameRelease events: failed ones, the others, and any naming frame 0 (no frame).
class Releases final : public Observer {
 public:
  void on_event(const Event& event) override {
    if (event.kind != EventKind::FrameRelease) return;
    if (event.id == 0) ++of_frame_zero;
    ++(event.failed ? failed : others);
  }
  int failed = 0;
  int others = 0;
  int of_frame_zero = 0;
};

void signal_on_host(Gpu& gpu, VkSemaphore semaphore, uint64_t value) {
  const VkSemaphoreSignalInfo info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = semaphore, .value = value};
  ASSERT_EQ(vkSignalSemaphore(gpu.device, &info), VK_SUCCESS);
}

// One poll() retires frame 1 (its semaphore reached), then finds the device lost reading frame
// 2's: only frame 2 fails. Frame 1's one-off bytes are given back once and its release is
// reported once, so later one-off uploads are still taken. Neither frame is submitted: their
// semaphores are signalled (or found lost) on the host.
TEST_F(GpuTest, ALostDeviceFoundMidPollFailsOnlyTheFramesNotYetRetired) {
  Releases releases;
  Device device = gpu->ring_device();
  g_real_counter = device.dispatch.vkGetSemaphoreCounterValue;
  device.dispatch.vkGetSemaphoreCounterValue = lossy_counter;
  RingConfig config;
  config.fallback_update_buffer = false;  // every fallback upload takes a one-off buffer
  config.fallback_max_oneoff_bytes = 256 * KiB;
  config.observer = &releases;
  Ring ring = Ring::create(device, config).value();
  Harness h(*gpu, 256 * KiB, 20);
  const VkSemaphore a = gpu->make_timeline(0);
  const VkSemaphore b = gpu->make_timeline(0);
  StagingFrame first = ring.begin_fallback(h.commands());
  ASSERT_TRUE(first.upload(h.dst.buffer, 0, random_bytes(h.rng, 160 * KiB)));
  (void)first.finish(kAfterCopies, RetirementPoint{a, 1}).value();
  StagingFrame second = ring.begin_fallback(h.commands());
  ASSERT_TRUE(second.upload(h.dst.buffer, 0, random_bytes(h.rng, 16 * KiB)));
  (void)second.finish(kAfterCopies, RetirementPoint{b, 1}).value();
  EXPECT_EQ(ring.stats().oneoff_live_bytes, 176 * KiB);

  signal_on_host(*gpu, a, 1);
  g_lost_semaphore = b;
  EXPECT_EQ(ring.poll(), 1u);
  g_lost_semaphore = VK_NULL_HANDLE;
  const Stats s = ring.stats();
  EXPECT_EQ(s.oneoff_live_bytes, 0u);
  EXPECT_EQ(s.points_retired, 1u);
  EXPECT_EQ(s.points_failed, 1u);
  EXPECT_EQ(s.device_lost, 1u);
  EXPECT_EQ(ring.in_flight(), 0u);
  EXPECT_EQ(releases.others, 1);
  EXPECT_EQ(releases.failed, 1);
  EXPECT_EQ(releases.of_frame_zero, 0);
  gpu->destroy(a);
  gpu->destroy(b);

  // The device is back (the hook reads every semaphore again): one-off buffers up to the cap.
  VkCommandBuffer cmd = h.commands();
  StagingFrame next = ring.begin_fallback(cmd);
  ASSERT_TRUE(h.upload(next, 3, 200 * KiB));
  EXPECT_EQ(ring.stats().oneoff_live_bytes, 200 * KiB);
  h.submit(cmd, next.finish(kAfterCopies).value());
  h.verify();
  EXPECT_EQ(ring.poll(), 1u);
  EXPECT_EQ(ring.stats().oneoff_live_bytes, 0u);
}

// Ring::wait() and wait_idle() answer DeviceLost when vkWaitSemaphores returns (reached, or timed
// out) but the poll after it finds the device lost, as a lost device found by the wait itself.
TEST_F(GpuTest, ARingWaitAnswersDeviceLostWhenThePollAfterItFindsTheDeviceLost) {
  Device device = gpu->ring_device();
  g_real_counter = device.dispatch.vkGetSemaphoreCounterValue;
  device.dispatch.vkGetSemaphoreCounterValue = lossy_counter;  // vkWaitSemaphores is the real one
  Ring ring = Ring::create(device).value();
  Harness h(*gpu, 64 * KiB, 21);

  // wait(): the point is reached (vkWaitSemaphores succeeds); reading the counter fails.
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 4096).value();
  ASSERT_TRUE(h.upload(frame, 0, 4000));
  const RetirementPoint point = frame.finish(kAfterCopies).value();
  h.submit(cmd, point);
  ASSERT_EQ(vkQueueWaitIdle(gpu->queue), VK_SUCCESS);
  g_lost_semaphore = ring.semaphore();
  const Expected<void, WaitError> waited = ring.wait(point, 10 * kSecond);
  g_lost_semaphore = VK_NULL_HANDLE;
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error(), WaitError::DeviceLost);
  EXPECT_EQ(ring.stats().device_lost, 1u);
  EXPECT_EQ(ring.stats().points_failed, 1u);
  EXPECT_EQ(ring.in_flight(), 0u);

  // wait_idle(): the point is never signalled (vkWaitSemaphores times out); the poll finds the
  // device lost.
  StagingFrame unsubmitted = ring.begin(h.commands(), 4096).value();
  ASSERT_TRUE(unsubmitted.upload(h.dst.buffer, 0, random_bytes(h.rng, 100)));
  (void)unsubmitted.finish(kAfterCopies).value();
  g_lost_semaphore = ring.semaphore();
  const Expected<void, WaitError> idle = ring.wait_idle(std::chrono::milliseconds(1));
  g_lost_semaphore = VK_NULL_HANDLE;
  ASSERT_FALSE(idle);
  EXPECT_EQ(idle.error(), WaitError::DeviceLost);
  EXPECT_EQ(ring.stats().device_lost, 2u);
  EXPECT_EQ(ring.stats().points_failed, 2u);
  EXPECT_EQ(ring.in_flight(), 0u);
  h.verify();
}

// ---- injected allocation failure ----------------------------------------------------------

// DefaultMemory that fails the next `fail` allocations with OutOfMemory.
class FailingMemory final : public MemoryHook {
 public:
  explicit FailingMemory(Gpu& gpu) : real_(gpu.physical_device, gpu.device, gpu.dispatch) {}
  Expected<StagingMemory, AllocError> allocate(uint64_t size) override {
    ++calls;
    if (fail > 0) {
      --fail;
      return unexpected(AllocError::OutOfMemory);
    }
    return real_.allocate(size);
  }
  Expected<void, AllocError> flush(const StagingMemory& m, uint64_t offset,
                                   uint64_t size) override {
    flushes.push_back({offset, size});
    return real_.flush(m, offset, size);
  }
  void release(const StagingMemory& m) noexcept override { real_.release(m); }
  int fail = 0;
  int calls = 0;
  std::vector<std::pair<uint64_t, uint64_t>> flushes;

 private:
  DefaultMemory real_;
};

TEST_F(GpuTest, AnAllocationFailureLeavesTheSlotFailedAndTheNextFrameRecovers) {
  FailingMemory memory(*gpu);
  RingConfig config;
  config.memory = &memory;
  config.policy = ExhaustionPolicy::Defer;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 256 * KiB, 15);
  VkCommandBuffer cmd = h.commands();

  memory.fail = 1;
  const auto refused = ring.begin(cmd, 4096);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), UploadError::AllocationFailed);
  EXPECT_EQ(ring.last_alloc_error(), AllocError::OutOfMemory);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Failed);

  StagingFrame frame = ring.begin(cmd, 4096).value();  // the Failed slot is retried
  EXPECT_EQ(frame.route(), Route::Ring);
  ASSERT_TRUE(h.upload(frame, 0, 4000));
  memory.fail = 1;  // the one-off for an overflowing upload fails too: an error, frame intact
  EXPECT_EQ(h.upload(frame, 8192, 200 * KiB).error(), UploadError::AllocationFailed);
  ASSERT_TRUE(h.upload(frame, 4096, 40));
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
}

TEST_F(GpuTest, UnderTheFallbackPolicyAnAllocationFailureStillDeliversTheBytes) {
  FailingMemory memory(*gpu);
  RingConfig config;
  config.memory = &memory;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 64 * KiB, 16);
  VkCommandBuffer cmd = h.commands();
  memory.fail = 1;
  StagingFrame frame = ring.begin(cmd, 4096).value();
  EXPECT_EQ(frame.route(), Route::Fallback);
  EXPECT_EQ(frame.refusal(), UploadError::AllocationFailed);
  ASSERT_TRUE(h.upload(frame, 0, 4000));    // vkCmdUpdateBuffer needs no allocation
  ASSERT_TRUE(h.upload(frame, 5001, 999));  // a one-off: the allocator works again
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
}

// Non-coherent memory is flushed before submission, over the bytes the frame wrote, rounded out
// to nonCoherentAtomSize (the validation layer checks the ranges). flush_always takes that path
// on lavapipe's coherent memory.
TEST_F(GpuTest, WrittenRangesAreFlushedRoundedToTheAtom) {
  FailingMemory memory(*gpu);
  RingConfig config;
  config.memory = &memory;
  config.flush_always = true;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 256 * KiB, 17);
  for (int n = 0; n < 5; ++n) {
    VkCommandBuffer cmd = h.commands();
    StagingFrame frame = ring.begin(cmd, 8192).value();
    const uint64_t first = 1 + h.rng() % 3000;
    ASSERT_TRUE(h.upload(frame, h.rng() % 100000, first));
    ASSERT_TRUE(h.upload(frame, 120000 + h.rng() % 100000, 1 + h.rng() % 1000, true));
    const RetirementPoint point = frame.finish(kAfterCopies).value();
    h.submit(cmd, point);
    ASSERT_TRUE(ring.wait(point, 10 * kSecond));
  }
  h.verify();
  const Stats s = ring.stats();
  EXPECT_EQ(s.flushes, 5u);
  ASSERT_EQ(memory.flushes.size(), 5u);
  for (const auto& [offset, size] : memory.flushes) {
    EXPECT_EQ(offset, 0u);  // a slot's frame starts at 0 and ends at its cursor
    EXPECT_GT(size, 0u);
  }
}

// ---- caller errors ------------------------------------------------------------------------

TEST_F(GpuTest, RefusedUploadsLeaveTheFrameUnchanged) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  Harness h(*gpu, 64 * KiB, 18);
  TestImage bc =
      gpu->make_image(gpu->bc_formats ? VK_FORMAT_BC1_RGBA_UNORM_BLOCK : VK_FORMAT_R8G8B8A8_UNORM,
                      {16, 16, 1}, 1, 1);
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 16 * KiB).value();
  const std::vector<std::byte> some(64);
  EXPECT_EQ(frame.upload(VK_NULL_HANDLE, 0, some).error(), UploadError::NullDestination);
  EXPECT_EQ(frame.upload(h.dst.buffer, 0, std::span<const std::byte>()).error(),
            UploadError::ZeroSize);
  EXPECT_EQ(frame.reserve(h.dst.buffer, UINT64_MAX - 10, 64).error(), UploadError::Overflow);
  ASSERT_TRUE(h.upload(frame, 100, 100));
  EXPECT_EQ(frame.upload(h.dst.buffer, 199, some).error(), UploadError::OverlapsEarlierUpload);
  EXPECT_EQ(frame.upload(h.dst.buffer, 50, some).error(), UploadError::OverlapsEarlierUpload);
  ASSERT_TRUE(h.upload(frame, 200, 64));  // adjacent is fine
  ASSERT_TRUE(h.upload(frame, 36, 64));

  const VkFormat format =
      gpu->bc_formats ? VK_FORMAT_BC1_RGBA_UNORM_BLOCK : VK_FORMAT_R8G8B8A8_UNORM;
  ImageRegion region{.image = bc.image,
                     .format = format,
                     .extent = {8, 8, 1},
                     .new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL};
  const uint64_t size = ring.image_data_size(region).value();
  const std::vector<std::byte> texels(size);
  EXPECT_EQ(frame.upload(region, std::span(texels).first(size - 1)).error(),
            UploadError::SizeMismatch);
  ImageRegion bad = region;
  bad.format = VK_FORMAT_G8_B8R8_2PLANE_420_UNORM;
  EXPECT_EQ(frame.upload(bad, texels).error(), UploadError::UnsupportedFormat);
  bad = region;
  bad.aspect = VK_IMAGE_ASPECT_DEPTH_BIT;
  EXPECT_EQ(frame.upload(bad, texels).error(), UploadError::BadAspect);
  bad = region;
  bad.extent.width = 0;
  EXPECT_EQ(frame.upload(bad, texels).error(), UploadError::ZeroSize);
  if (gpu->bc_formats) {
    bad = region;
    bad.offset.x = 2;  // not a multiple of the 4x4 block
    EXPECT_EQ(frame.upload(bad, texels).error(), UploadError::Misaligned);
  }
  ASSERT_TRUE(frame.upload(region, texels));
  bad = region;
  bad.offset = {8, 8, 0};
  bad.new_layout = VK_IMAGE_LAYOUT_GENERAL;
  EXPECT_EQ(frame.upload(bad, texels).error(), UploadError::ConflictingLayouts);
  EXPECT_EQ(frame.upload(region, texels).error(), UploadError::OverlapsEarlierUpload);

  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
  EXPECT_EQ(frame.finish().error(), FinishError::Inactive);
  EXPECT_EQ(frame.upload(h.dst.buffer, 0, some).error(), UploadError::Inactive);
  gpu->destroy(bc);
}

// Uploads written back to back join one range of the destination, in either order, and a gap
// filled exactly joins its two neighbours; every byte of a joined range still refuses an upload
// that overlaps it, and every byte arrives:
//   dst  [ 0 ........ 1024 (written downwards) ........ 2048 (upwards) | gap | 2112 .. 2176 ]
//        then [2048, 2112) fills the gap: one range [0, 2176)
TEST_F(GpuTest, UploadsBackToBackInEitherOrderJoinOneRangeThatStillRefusesOverlaps) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  Harness h(*gpu, 4 * KiB, 19);
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 16 * KiB).value();
  for (uint64_t at = 1024; at != 0; at -= 64)
    ASSERT_TRUE(h.upload(frame, at - 64, 64));
  for (uint64_t at = 1024; at != 2048; at += 64)
    ASSERT_TRUE(h.upload(frame, at, 64));
  ASSERT_TRUE(h.upload(frame, 2112, 64));
  ASSERT_TRUE(h.upload(frame, 2048, 64));  // the gap, exactly
  const std::vector<std::byte> some(8, std::byte{0x5a});
  for (const uint64_t at : {0, 1, 60, 1020, 1024, 2040, 2044, 2100, 2168}) {
    EXPECT_EQ(frame.upload(h.dst.buffer, at, some).error(), UploadError::OverlapsEarlierUpload)
        << "at " << at;
  }
  ASSERT_TRUE(h.upload(frame, 2176, 64));  // adjacent at the end is fine
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
}

// A point with no semaphore (a default RetirementPoint) is reached at value 0 and never above
// it: Ring::wait() answers as vulkan::wait() does instead of handing it to vkWaitSemaphores.
TEST_F(GpuTest, ARingWaitsForAPointWithNoSemaphoreAsVulkanWaitDoes) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  const RetirementPoint none{VK_NULL_HANDLE, 0}, never{VK_NULL_HANDLE, 5};
  EXPECT_TRUE(ring.wait(none, std::chrono::seconds(1)));
  EXPECT_TRUE(vulkan::wait(gpu->ring_device(), none, std::chrono::seconds(1)));
  EXPECT_EQ(ring.wait(never, std::chrono::seconds(1)).error(), WaitError::Failed);
  EXPECT_EQ(vulkan::wait(gpu->ring_device(), never, std::chrono::seconds(1)).error(),
            WaitError::Failed);
  EXPECT_EQ(ring.stats().device_lost, 0u);
}

TEST_F(GpuTest, CreateRejectsAnIncompleteDispatchAndInvalidConfigurations) {
  Device device = gpu->ring_device();
  device.dispatch.vkCmdUpdateBuffer = nullptr;
  const auto missing = Ring::create(device);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), CreateError::MissingFunction);
  EXPECT_EQ(device.dispatch.missing(), "vkCmdUpdateBuffer");

  Device no_device = gpu->ring_device();
  no_device.device = VK_NULL_HANDLE;
  EXPECT_EQ(Ring::create(no_device).error(), CreateError::InvalidConfig);
  no_device = gpu->ring_device();
  no_device.physical_device = VK_NULL_HANDLE;
  EXPECT_EQ(Ring::create(no_device).error(), CreateError::InvalidConfig);

  RingConfig config;
  config.strategy = StagingRingConfig{.slots = 0};
  EXPECT_EQ(Ring::create(gpu->ring_device(), config).error(), CreateError::NoSlots);
  config = {};
  config.strategy = ByteRingConfig{};  // capacity 0
  const auto bytes = Ring::create(gpu->ring_device(), config);
  ASSERT_FALSE(bytes);
  EXPECT_EQ(bytes.error(), CreateError::ZeroCapacity);
  // A byte ring waits per upload (ByteRingConfig::policy Wait), never per frame: refused, named.
  ByteRingConfig& byte_ring =
      config.strategy.emplace<ByteRingConfig>(ByteRingConfig{.capacity = 64 * KiB});
  config.policy = ExhaustionPolicy::Wait;
  const auto waiting = Ring::create(gpu->ring_device(), config);
  ASSERT_FALSE(waiting);
  EXPECT_EQ(waiting.error(), CreateError::UnsupportedPolicy);
  EXPECT_EQ(to_string(waiting.error()), "UnsupportedPolicy");
  byte_ring.policy = ExhaustionPolicy::Wait;
  config.policy = ExhaustionPolicy::Defer;
  EXPECT_TRUE(Ring::create(gpu->ring_device(), config));
  // A frame submits once: its byte ring cannot Split (chunks of one upload would never retire to
  // make room for the next).
  byte_ring.policy = ExhaustionPolicy::Split;
  EXPECT_EQ(Ring::create(gpu->ring_device(), config).error(), CreateError::UnsupportedPolicy);
  byte_ring.policy = ExhaustionPolicy::Defer;
  // Nor can the ring's own policy be Split or Grow, under either strategy (slots grow by
  // themselves).
  const RingStrategy strategies[] = {StagingRingConfig{}, ByteRingConfig{.capacity = 64 * KiB}};
  for (const RingStrategy& strategy : strategies) {
    for (const ExhaustionPolicy policy : {ExhaustionPolicy::Split, ExhaustionPolicy::Grow}) {
      config.strategy = strategy;
      config.policy = policy;
      const auto refused = Ring::create(gpu->ring_device(), config);
      ASSERT_FALSE(refused) << strategy.index() << " " << to_string(policy);
      EXPECT_EQ(refused.error(), CreateError::UnsupportedPolicy);
    }
  }
  EXPECT_TRUE(Ring::create(gpu->ring_device()));
}

TEST_F(GpuTest, WaitingForAPointNobodySignalsTimesOut) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  Harness h(*gpu, 4 * KiB, 19);
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 100).value();
  ASSERT_TRUE(h.upload(frame, 0, 16));
  const RetirementPoint point = frame.finish(kAfterCopies).value();
  EXPECT_EQ(ring.wait(point, std::chrono::milliseconds(1)).error(), WaitError::Timeout);
  EXPECT_EQ(ring.wait_idle(std::chrono::milliseconds(1)).error(), WaitError::Timeout);
  EXPECT_TRUE(ring.abandon(point));
  EXPECT_TRUE(ring.wait_idle(std::chrono::milliseconds(1)));
}

}  // namespace
}  // namespace staging::vulkan::test
