// Destroying a Ring whose frames are still in flight: the destructor waits (up to
// RingConfig::destroy_timeout) for their points and only then frees the staging memory and the
// semaphore; when the points are not reached in time it leaks them (rings_leaked()) rather than
// free memory the GPU still reads; on a lost device it frees everything. The GPU work is held back
// by a wait on a semaphore the test signals from the host, so "in flight" is real. Validation
// (with synchronization validation) would report a semaphore destroyed while in use
// (vkDestroySemaphore-01137) or a buffer destroyed under a pending copy.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "fault_dispatch.hpp"
#include "gpu.hpp"
#include "harness.hpp"

namespace staging::vulkan::test {
namespace {

using support::FaultCall;
using support::FaultDispatch;
using support::LiveObjects;

constexpr uint64_t KiB = 1024;

void signal(Gpu& gpu, VkSemaphore semaphore, uint64_t value) {
  const VkSemaphoreSignalInfo info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = semaphore, .value = value};
  EXPECT_EQ(vkSignalSemaphore(gpu.device, &info), VK_SUCCESS);
}

// A frame of a ring upload and a one-off upload, submitted behind a wait on `gate` reaching 1.
RetirementPoint submit_gated_frame(Ring& ring, Harness& h, VkSemaphore gate) {
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 8 * KiB).value();
  EXPECT_TRUE(h.upload(frame, 0, 4000));
  EXPECT_TRUE(h.upload(frame, 64 * KiB, 100 * KiB));  // above the slot: a one-off buffer
  const RetirementPoint point = frame.finish(kAfterCopies).value();
  const VkSemaphoreSubmitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                   .semaphore = gate,
                                   .value = 1,
                                   .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
  h.submit(cmd, point, {&wait, 1});
  return point;
}

RingConfig small_slots() {
  RingConfig config;
  config.strategy = StagingRingConfig{.max_slot_bytes = 64 * KiB};
  config.fallback_update_buffer = false;
  return config;
}

TEST_F(GpuTest, DestroyingARingWithAFrameInFlightWaitsForItsPoint) {
  Harness h(*gpu, 256 * KiB, 41);
  VkSemaphore gate = gpu->make_timeline(0);
  FaultDispatch counted(gpu->dispatch);  // no fault: counts the objects
  const uint64_t leaked_before = rings_leaked();
  std::optional<Ring> ring =
      Ring::create({gpu->physical_device, gpu->device, counted.dispatch()}, small_slots()).value();
  submit_gated_frame(*ring, h, gate);
  EXPECT_EQ(ring->in_flight(), 1u);

  // Without validation the host opens the gate from another thread while the destructor is
  // already waiting. With it, the gate opens first, on this thread, just before the destructor
  // (the copies still run on the device's own thread): the validation layer 1.3.239 times out
  // internally when a timeline semaphore is signalled on the host while another thread is inside
  // vkWaitSemaphores (see held_queue_test.cpp) — and it reports a semaphore or buffer destroyed
  // while the queue still uses it (vkDestroySemaphore-01137).
  constexpr auto kHeld = std::chrono::milliseconds(200);
  std::thread release;
  const auto start = std::chrono::steady_clock::now();  // before the releaser starts its sleep
  if (gpu->validation) {
    signal(*gpu, gate, 1);
  } else {
    release = std::thread([&] {
      std::this_thread::sleep_for(kHeld);
      signal(*gpu, gate, 1);
    });
  }
  ring.reset();  // waits for the copies before freeing what they read
  const auto took = std::chrono::steady_clock::now() - start;
  if (release.joinable()) {
    release.join();
    EXPECT_GE(took, kHeld);
  }
  EXPECT_GE(counted.calls(FaultCall::WaitSemaphores), 1u);  // the destructor waited
  EXPECT_EQ(rings_leaked(), leaked_before);
  EXPECT_EQ(counted.live(), LiveObjects{});
  h.verify();  // every byte arrived: nothing was freed under the copies
  gpu->destroy(gate);
}

TEST_F(GpuTest, ARingWhoseFramesNeverCompleteInTimeLeaksItsMemoryInsteadOfFreeingIt) {
  Harness h(*gpu, 256 * KiB, 42);
  VkSemaphore gate = gpu->make_timeline(0);
  FaultDispatch counted(gpu->dispatch);
  const uint64_t leaked_before = rings_leaked();
  RingConfig config = small_slots();
  config.destroy_timeout = std::chrono::milliseconds(50);
  std::optional<Ring> ring =
      Ring::create({gpu->physical_device, gpu->device, counted.dispatch()}, config).value();
  submit_gated_frame(*ring, h, gate);
  const auto start = std::chrono::steady_clock::now();
  ring.reset();  // gives up after 50 ms: the copies have not even started
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(45));
  EXPECT_EQ(rings_leaked(), leaked_before + 1);
  const LiveObjects live = counted.live();
  EXPECT_GE(live.buffers, 2);  // the slot and the one-off buffer
  EXPECT_EQ(live.memory, live.buffers);
  EXPECT_EQ(live.semaphores, 1);

  // The copies run only now, from the memory the ring left alive, and deliver every byte.
  signal(*gpu, gate, 1);
  h.verify();
  counted.destroy_live(gpu->device);  // the application's part once the GPU is done
  EXPECT_EQ(counted.live(), LiveObjects{});
  gpu->destroy(gate);
}

TEST_F(GpuTest, ARingDestroyedOnALostDeviceFreesEverything) {
  Harness h(*gpu, 256 * KiB, 43);
  VkSemaphore gate = gpu->make_timeline(1);  // open: the copies run at once
  FaultDispatch faults(gpu->dispatch);
  const uint64_t leaked_before = rings_leaked();
  std::optional<Ring> ring =
      Ring::create({gpu->physical_device, gpu->device, faults.dispatch()}, small_slots()).value();
  submit_gated_frame(*ring, h, gate);
  ASSERT_EQ(vkQueueWaitIdle(gpu->queue), VK_SUCCESS);  // truly done before the (simulated) loss
  faults.lose_device_at(FaultCall::WaitSemaphores, 1);
  ring.reset();
  EXPECT_TRUE(faults.fired());
  EXPECT_EQ(rings_leaked(), leaked_before);
  EXPECT_EQ(faults.live(), LiveObjects{});
  faults.clear();
  h.verify();
  gpu->destroy(gate);
}

}  // namespace
}  // namespace staging::vulkan::test
