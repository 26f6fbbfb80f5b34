// Fault injection into the Streamer: a scripted stream — a 100 KiB buffer upload through 64 KiB of
// staging memory (several pieces, several submissions) and a 20 KiB one — runs once to count the
// calls it makes through its dispatch table, then once for every N with the N-th call of one kind
// failing: creating the command pool, the semaphore, the staging buffer and its memory,
// allocating, beginning or ending a command buffer, submitting (out of memory), and the device
// lost from the N-th submission on — in the middle of a stream; a second sweep loses the device
// as the streamer reads or waits on its timeline (kStreamLossFaults).
// Every run asserts: Streamer::create or the upload answers with an error value (DeviceLost once
// the device is lost), or the upload's wait answers Complete or Failed, promptly (never at its
// timeout); the validation layer stays silent; after the
// streamer's destruction nothing made through the table is alive; and once the fault is gone a
// new streamer delivers both uploads, read back byte for byte.
//
// The pump thread makes the calls, so their order across the two uploads may vary from run to
// run: the sweep reports how many of its fault points fired. The device loss is simulated: before
// the streamer is destroyed the script waits for the real queue, as a lost device reads nothing.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <span>
#include <string>

#include "fault_dispatch.hpp"
#include "gpu.hpp"
#include "harness.hpp"

namespace staging::vulkan::test {
namespace {

using namespace std::chrono_literals;
using support::Fault;
using support::FaultCall;
using support::FaultDispatch;
using support::LiveObjects;

constexpr uint64_t KiB = 1024;

struct StreamSeen {
  uint64_t create_failed = 0, uploads_refused = 0, failed = 0, complete = 0;
  std::array<uint64_t, support::kFaultCalls> calls{};
};

StreamerConfig stream_config(Gpu& gpu, std::mutex& queue_mutex) {
  StreamerConfig config;
  config.queue = gpu.queue;
  config.queue_family = gpu.queue_family;
  config.consumer_family = gpu.queue_family;
  config.queue_mutex = &queue_mutex;
  config.ring_bytes = 64 * KiB;
  return config;
}

// Streams `a` to offset 0 and `b` to offset 128 KiB of `dst`; returns the statuses (Complete
// updates `model`). An upload may be refused only as DeviceLost, once the device is lost.
void stream_two(Gpu& gpu, Streamer& streamer, std::mutex& queue_mutex, BufferDestination dst,
                const std::vector<std::byte>& a, const std::vector<std::byte>& b,
                std::vector<std::byte>& model, StreamSeen& seen) {
  const std::pair<uint64_t, const std::vector<std::byte>*> uploads[] = {{0, &a}, {128 * KiB, &b}};
  std::vector<std::pair<StreamTicket, std::size_t>> tickets;
  for (std::size_t i = 0; i < 2; ++i) {
    Expected<StreamTicket, UploadError> t =
        streamer.upload(dst, uploads[i].first, *uploads[i].second, StreamPriority::Now, 5s);
    if (!t) {
      ++seen.uploads_refused;
      if (t.error() != UploadError::DeviceLost || streamer.stats().device_lost == 0) {
        ADD_FAILURE() << "upload refused: " << to_string(t.error());
      }
      continue;
    }
    tickets.emplace_back(std::move(*t), i);
  }
  for (auto& [ticket, i] : tickets) {
    const auto began = std::chrono::steady_clock::now();
    const StreamStatus status = streamer.wait(ticket, 20s);
    // Promptly: a lost device fails the upload at once, never at the wait's timeout.
    EXPECT_LT(std::chrono::steady_clock::now() - began, 10s) << to_string(status);
    if (status == StreamStatus::Complete) {
      ++seen.complete;
      std::memcpy(model.data() + uploads[i].first, uploads[i].second->data(),
                  uploads[i].second->size());
    } else {
      EXPECT_EQ(status, StreamStatus::Failed) << to_string(status);
      EXPECT_EQ(streamer.status(ticket), status) << "status() disagrees with wait()";
      ++seen.failed;
    }
  }
  if (streamer.stats().device_lost > 0) {
    // Lost: a new upload is refused by name.
    const Expected<StreamTicket, UploadError> late =
        streamer.upload(dst, 0, a, StreamPriority::Now, 1s);
    if (late) {
      ADD_FAILURE() << "an upload was taken on a lost device";
    } else {
      EXPECT_EQ(late.error(), UploadError::DeviceLost);
    }
  }
  std::lock_guard lock(queue_mutex);  // the real queue is done before anything is freed
  EXPECT_EQ(vkQueueWaitIdle(gpu.queue), VK_SUCCESS);
}

StreamSeen run_stream_script(Gpu& gpu, FaultDispatch& faults, uint64_t seed) {
  StreamSeen seen;
  Harness h(gpu, 256 * KiB, seed);
  std::mutex queue_mutex;
  const std::vector<std::byte> a = random_bytes(h.rng, 100 * KiB),
                               b = random_bytes(h.rng, 20 * KiB);
  const Device device{gpu.physical_device, gpu.device, faults.dispatch()};
  {
    Expected<std::unique_ptr<Streamer>, CreateError> made =
        Streamer::create(device, stream_config(gpu, queue_mutex));
    if (!made) {
      const CreateError e = made.error();
      EXPECT_TRUE(e == CreateError::AllocationFailed || e == CreateError::ObjectCreationFailed)
          << to_string(e);
      ++seen.create_failed;
    } else {
      stream_two(gpu, **made, queue_mutex, {h.dst.buffer, h.dst.size}, a, b, h.model, seen);
    }
  }
  for (std::size_t k = 0; k < seen.calls.size(); ++k)
    seen.calls[k] = faults.calls(static_cast<FaultCall>(k));
  EXPECT_EQ(faults.live(), LiveObjects{}) << "the streamer left objects alive";

  // The fault is gone: a new streamer delivers both uploads.
  faults.clear();
  {
    StreamSeen after;
    std::unique_ptr<Streamer> streamer =
        std::move(Streamer::create(device, stream_config(gpu, queue_mutex)).value());
    const std::vector<std::byte> a2 = random_bytes(h.rng, a.size()),
                                 b2 = random_bytes(h.rng, b.size());
    stream_two(gpu, *streamer, queue_mutex, {h.dst.buffer, h.dst.size}, a2, b2, h.model, after);
    EXPECT_EQ(after.complete, 2u);
  }
  h.verify();
  EXPECT_EQ(faults.live(), LiveObjects{});
  return seen;
}

constexpr Fault kStreamFaults[] = {
    {FaultCall::CreateCommandPool, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::CreateSemaphore, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::CreateBuffer, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::AllocateMemory, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::MapMemory, VK_ERROR_OUT_OF_HOST_MEMORY},
    {FaultCall::AllocateCommandBuffers, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::BeginCommandBuffer, VK_ERROR_OUT_OF_HOST_MEMORY},
    {FaultCall::EndCommandBuffer, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::QueueSubmit2, VK_ERROR_OUT_OF_DEVICE_MEMORY},
    {FaultCall::QueueSubmit2, VK_ERROR_DEVICE_LOST},
};

// The device lost as the streamer reads or waits on its timeline (the loss seen by the
// completion side, not by a submission): every upload not complete fails at once (queued,
// streaming or submitted), and a new upload answers DeviceLost.
constexpr Fault kStreamLossFaults[] = {
    {FaultCall::GetSemaphoreCounterValue, VK_ERROR_DEVICE_LOST},
    {FaultCall::WaitSemaphores, VK_ERROR_DEVICE_LOST},
};

void sweep_stream(Gpu* gpu, std::span<const Fault> kinds, const char* name) {
  const uint64_t seed = test_seed(95);
  FaultDispatch faults(gpu->dispatch);
  const StreamSeen clean = run_stream_script(*gpu, faults, seed);
  ASSERT_EQ(clean.complete, 2u);
  ASSERT_FALSE(::testing::Test::HasFailure());
  uint64_t points = 0, fired = 0;
  StreamSeen total;
  std::string per_kind;
  for (const Fault& kind : kinds) {
    const uint64_t n_max = clean.calls[static_cast<std::size_t>(kind.call)];
    for (uint64_t n = 1; n <= n_max; ++n) {
      SCOPED_TRACE(describe(kind, n));
      faults.arm(kind, n);
      const StreamSeen seen = run_stream_script(*gpu, faults, seed);
      ++points;
      fired += faults.fired() ? 1 : 0;
      total.create_failed += seen.create_failed;
      total.failed += seen.failed + seen.uploads_refused;
      if (::testing::Test::HasFailure()) return;
    }
    per_kind += std::string(per_kind.empty() ? "" : ", ") + std::string(to_string(kind.call)) +
                (kind.result == VK_ERROR_DEVICE_LOST ? " (lost) " : " ") + std::to_string(n_max);
  }
  std::printf(
      "[fault sweep] Streamer, %s: %llu fault points (%s); the fault fired in %llu; the caller "
      "saw: "
      "%llu Streamer::create errors, %llu failed or refused uploads; nothing left alive after "
      "any run\n",
      name, static_cast<unsigned long long>(points), per_kind.c_str(),
      static_cast<unsigned long long>(fired), static_cast<unsigned long long>(total.create_failed),
      static_cast<unsigned long long>(total.failed));
  ::testing::Test::RecordProperty("fault_points", std::to_string(points));
  EXPECT_GT(fired, 0u);
  EXPECT_GT(total.failed, 0u);
}

TEST_F(GpuTest, StreamFaultSweepEveryFailingCallIsAnErrorOrAFailedUploadAndLeaksNothing) {
  sweep_stream(gpu, kStreamFaults, "creation, recording and submission");
}

TEST_F(GpuTest, StreamDeviceLostOnTheTimelineFailsEveryUploadInFlight) {
  sweep_stream(gpu, kStreamLossFaults, "device lost on the timeline");
}

}  // namespace
}  // namespace staging::vulkan::test
