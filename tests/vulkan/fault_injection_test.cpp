// Fault injection: a scripted sequence of frames (buffer uploads on the ring and through one-off
// buffers, an image upload, one frame retiring on the caller's own timeline, frames left in flight
// across begin()) runs once to count the calls the ring makes through its dispatch table, then
// once for every N with the N-th call of one kind failing — for every kind that can fail:
// creating a buffer or semaphore, allocating, binding or mapping memory (out of device memory),
// flushing (finish() answers FlushFailed, records nothing, and the frame is dropped: no copy
// reads bytes the device may not see), and the device lost from the N-th allocation, semaphore read
// or semaphore wait on (in the middle of a frame, with frames in flight). Every run asserts:
//   - the error reaches the caller as a value (an UploadError, a FinishError, a WaitError or a
//     CreateError; nothing else: no crash, no abort);
//   - nothing is corrupted: once the fault is gone, the next frame succeeds, and the destination
//     buffer read back holds exactly the bytes of every upload that was accepted and submitted;
//   - the validation layer (with synchronization validation) stays silent;
//   - after the ring's destruction, every buffer, memory object, mapping and semaphore made
//     through the table has been destroyed (counted per handle type by the wrapper).
// The number of fault points each sweep covered is printed and recorded as a test property.
//
// The device loss is simulated by the table; the GPU itself still runs, so the script waits for
// the queue to be idle after each submission before the ring can see the loss — as a real lost
// device reads nothing more.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fault_dispatch.hpp"
#include "gpu.hpp"
#include "harness.hpp"

namespace staging::vulkan::test {
namespace {

using support::Fault;
using support::FaultCall;
using support::FaultDispatch;
using support::LiveObjects;

constexpr uint64_t KiB = 1024;
constexpr int kFrames = 6;

// What one run saw (the errors the caller got back, by kind).
struct Seen {
  uint64_t create_failed = 0;
  uint64_t begin_refused = 0;
  uint64_t uploads_refused = 0;
  uint64_t finish_lost = 0;
  uint64_t finish_flush_failed = 0;
  uint64_t waits_lost = 0;
  uint64_t uploads_accepted = 0;
  /// Calls of each kind made by the scripted frames (before the recovery frame).
  std::array<uint64_t, support::kFaultCalls> calls{};
};

RingConfig script_config(Setup setup) {
  RingConfig config;
  // The 100 KiB upload takes the fallback route; every fallback upload allocates a buffer.
  config.strategy = StagingRingConfig{.max_slot_bytes = 64 * KiB};
  config.fallback_update_buffer = false;
  config.fallback_max_oneoff_bytes = 512 * KiB;
  config.flush_always = true;  // the flush path runs on coherent memory too
  config.destroy_timeout = std::chrono::seconds(10);
  return with_setup(config, setup, 64 * KiB);
}

// One run of the script under whatever fault `faults` is armed with.
Seen run_script(Gpu& gpu, FaultDispatch& faults, Setup setup, uint64_t seed) {
  Seen seen;
  Harness h(gpu, 256 * KiB, seed);  // made with the real functions, outside the fault's reach
  TestImage image = gpu.make_image(VK_FORMAT_R8G8B8A8_UNORM, {32, 32, 1}, 1, 1);
  EXPECT_NE(image.image, VK_NULL_HANDLE);
  const ImageDestination image_target{image.image, image.format, image.extent, 1, 1};
  const BufferDestination target{h.dst.buffer, h.dst.size};
  VkSemaphore external = gpu.make_timeline(0);
  uint64_t external_value = 0;
  {
    const Device device{gpu.physical_device, gpu.device, faults.dispatch()};
    Expected<Ring, CreateError> made = Ring::create(device, script_config(setup));
    if (!made) {
      const CreateError kind = made.error();
      EXPECT_TRUE(kind == CreateError::ObjectCreationFailed ||
                  kind == CreateError::AllocationFailed)
          << to_string(kind);
      ++seen.create_failed;
    } else {
      Ring& ring = *made;
      // Buffer ranges per frame: on the ring, on the ring, above a slot (fallback route).
      const std::pair<uint64_t, uint64_t> ranges[] = {
          {0, 3000}, {4096, 20000}, {32 * KiB, 100 * KiB}};
      for (int i = 0; i < kFrames; ++i) {
        VkCommandBuffer cmd = h.commands();
        Expected<StagingFrame, UploadError> begun = ring.begin(cmd, 48 * KiB);
        if (!begun) {
          ++seen.begin_refused;
          continue;
        }
        StagingFrame frame = std::move(*begun);
        std::vector<std::pair<uint64_t, std::vector<std::byte>>> writes;
        for (const auto& [offset, size] : ranges) {
          std::vector<std::byte> data = random_bytes(h.rng, size);
          const Expected<void, UploadError> done = frame.upload(target, offset, data);
          if (done) {
            writes.emplace_back(offset, std::move(data));
            ++seen.uploads_accepted;
            continue;
          }
          const UploadError e = done.error();
          EXPECT_TRUE(e == UploadError::AllocationFailed || e == UploadError::RingFull ||
                      e == UploadError::FallbackCapReached)
              << to_string(e);
          ++seen.uploads_refused;
        }
        ImageRegion region;
        region.extent = {32, 32, 1};
        region.new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
        if (!frame.upload(image_target, region, random_bytes(h.rng, 32 * 32 * 4)))
          ++seen.uploads_refused;
        std::optional<RetirementPoint> own;
        if (i == 3) own = RetirementPoint{external, ++external_value};
        Expected<RetirementPoint, FinishError> point = frame.finish(kAfterCopies, own);
        if (!point) {
          const FinishError e = point.error();
          EXPECT_TRUE(e == FinishError::DeviceLost || e == FinishError::FlushFailed)
              << to_string(e);
          ++(e == FinishError::FlushFailed ? seen.finish_flush_failed : seen.finish_lost);
          if (own) --external_value;
          continue;  // the frame is dropped: nothing was recorded
        }
        h.submit(cmd, *point);
        EXPECT_EQ(vkQueueWaitIdle(gpu.queue), VK_SUCCESS);  // the copies are done (real queue)
        for (const auto& [offset, data] : writes)
          std::memcpy(h.model.data() + offset, data.data(), data.size());
        if (i % 2 == 0) continue;  // left in flight: the next begin() retires it (or fails it)
        const Expected<void, WaitError> waited = ring.wait(*point, std::chrono::seconds(5));
        if (!waited) {
          EXPECT_EQ(waited.error(), WaitError::DeviceLost);
          ++seen.waits_lost;
        }
      }

      // The fault is gone (the device is back): the next frame works, and every byte accepted
      // so far has arrived.
      for (std::size_t k = 0; k < seen.calls.size(); ++k)
        seen.calls[k] = faults.calls(static_cast<FaultCall>(k));
      faults.clear();
      VkCommandBuffer cmd = h.commands();
      StagingFrame frame = ring.begin(cmd, 8 * KiB).value();
      std::vector<std::byte> data = random_bytes(h.rng, 4000);
      EXPECT_TRUE(frame.upload(target, 200 * KiB, data));
      const RetirementPoint point = frame.finish(kAfterCopies).value();
      h.submit(cmd, point);
      EXPECT_TRUE(ring.wait(point, std::chrono::seconds(5)));
      std::memcpy(h.model.data() + 200 * KiB, data.data(), data.size());
      h.verify();
      EXPECT_EQ(ring.in_flight(), 0u);
    }
  }
  faults.clear();
  EXPECT_EQ(vkQueueWaitIdle(gpu.queue), VK_SUCCESS);
  gpu.destroy(external);
  gpu.destroy(image);
  return seen;
}

constexpr Fault kFaultKinds[] = {
    {FaultCall::CreateBuffer, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::AllocateMemory, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::BindBufferMemory, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::MapMemory, VK_ERROR_OUT_OF_HOST_MEMORY},
    {FaultCall::FlushMappedMemoryRanges, VK_ERROR_OUT_OF_HOST_MEMORY},
    {FaultCall::CreateSemaphore, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::AllocateMemory, VK_ERROR_DEVICE_LOST},
    {FaultCall::GetSemaphoreCounterValue, VK_ERROR_DEVICE_LOST},
    {FaultCall::WaitSemaphores, VK_ERROR_DEVICE_LOST},
};

class FaultSweep : public GpuTest, public ::testing::WithParamInterface<Setup> {};

TEST_P(FaultSweep, EveryFailingCallIsReportedLeaksNothingAndTheNextFrameRecovers) {
  const test::Setup setup = GetParam();
  const uint64_t seed = test_seed(90);
  FaultDispatch faults(gpu->dispatch);

  // The clean run: how many calls of each kind the script makes.
  const Seen clean = run_script(*gpu, faults, setup, seed);
  EXPECT_EQ(clean.uploads_refused + clean.begin_refused + clean.finish_lost +
                clean.finish_flush_failed + clean.waits_lost,
            0u);
  ASSERT_EQ(faults.live(), LiveObjects{});
  const std::array<uint64_t, support::kFaultCalls> counts = clean.calls;

  uint64_t points = 0, fired = 0;
  Seen total;
  std::string per_kind;
  for (const Fault& kind : kFaultKinds) {
    const uint64_t n_max = counts[static_cast<std::size_t>(kind.call)];
    for (uint64_t n = 1; n <= n_max; ++n) {
      SCOPED_TRACE(describe(kind, n));
      faults.arm(kind, n);
      const Seen seen = run_script(*gpu, faults, setup, seed);
      ++points;
      fired += faults.fired() ? 1 : 0;
      // Every failed flush reaches the caller, as finish()'s FlushFailed, and only it does.
      EXPECT_EQ(seen.finish_flush_failed,
                kind.call == FaultCall::FlushMappedMemoryRanges && faults.fired() ? 1u : 0u);
      total.create_failed += seen.create_failed;
      total.finish_flush_failed += seen.finish_flush_failed;
      total.begin_refused += seen.begin_refused;
      total.uploads_refused += seen.uploads_refused;
      total.finish_lost += seen.finish_lost;
      total.waits_lost += seen.waits_lost;
      const LiveObjects live = faults.live();
      ASSERT_EQ(live, LiveObjects{})
          << "left alive: " << live.buffers << " buffers, " << live.memory << " memory objects, "
          << live.semaphores << " semaphores, " << live.mapped << " mappings";
      if (HasFatalFailure() || HasFailure()) return;
    }
    per_kind += std::string(per_kind.empty() ? "" : ", ") + std::string(to_string(kind.call)) +
                (kind.result == VK_ERROR_DEVICE_LOST ? " (lost) " : " ") + std::to_string(n_max);
  }
  std::printf(
      "[fault sweep] %s: %llu fault points (%s); the fault fired in %llu; the caller saw: %llu "
      "Ring::create errors, %llu begin refusals, %llu upload refusals, %llu finish DeviceLost, "
      "%llu finish FlushFailed, %llu wait DeviceLost; nothing left alive after any run\n",
      setup_name(setup), static_cast<unsigned long long>(points), per_kind.c_str(),
      static_cast<unsigned long long>(fired), static_cast<unsigned long long>(total.create_failed),
      static_cast<unsigned long long>(total.begin_refused),
      static_cast<unsigned long long>(total.uploads_refused),
      static_cast<unsigned long long>(total.finish_lost),
      static_cast<unsigned long long>(total.finish_flush_failed),
      static_cast<unsigned long long>(total.waits_lost));
  RecordProperty("fault_points", std::to_string(points));
  EXPECT_EQ(fired, points);  // every call counted in the clean run was reached and failed
  EXPECT_GT(total.uploads_refused, 0u);
  EXPECT_GT(total.waits_lost + total.finish_lost, 0u);
  EXPECT_GT(total.finish_flush_failed, 0u);
}

INSTANTIATE_TEST_SUITE_P(Setups, FaultSweep,
                         ::testing::Values(Setup::Slots, Setup::BytesFallback, Setup::BytesWait),
                         [](const ::testing::TestParamInfo<Setup>& param) {
                           return std::string(setup_name(param.param));
                         });

}  // namespace
}  // namespace staging::vulkan::test
