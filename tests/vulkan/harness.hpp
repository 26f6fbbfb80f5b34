// A destination buffer and its model for the route, retirement and held-queue tests: the buffer
// starts filled with random bytes (copied in without the ring), uploads of random bytes update
// the model only when accepted, and verify() reads the whole buffer back and compares it byte for
// byte.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "gpu.hpp"
#include "vulkan_commands.hpp"

namespace staging::vulkan::test {

/// The copies are read back later; earlier frames wrote (and read back) the same buffer.
inline constexpr Visibility kAfterCopies{
    .stages = VK_PIPELINE_STAGE_2_COPY_BIT,
    .access = VK_ACCESS_2_TRANSFER_READ_BIT,
    .prior_stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
    .prior_access = VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT,
};

class Harness {
 public:
  Harness(Gpu& gpu, uint64_t size, uint64_t seed)
      : rng(seed),
        dst(gpu.make_buffer(
            size, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false)),
        model(random_bytes(rng, size)),
        gpu_(&gpu),
        back_(gpu.make_buffer(
            size, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true)) {
    // The initial contents, through a host buffer of our own (not the ring under test).
    std::memcpy(back_.mapped, model.data(), size);
    VkCommandBuffer cmd = commands();
    const VkBufferCopy region{0, 0, size};
    vkCmdCopyBuffer(cmd, back_.buffer, dst.buffer, 1, &region);
    support::memory_barrier(cmd, support::kCopyWrite,
                            {VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                             VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT});
    gpu.submit(cmd, {}, {});
    vkQueueWaitIdle(gpu.queue);
  }
  ~Harness() {
    vkDeviceWaitIdle(gpu_->device);
    for (VkCommandBuffer cmd : commands_)
      gpu_->free_commands(cmd);
    gpu_->destroy(dst);
    gpu_->destroy(back_);
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  /// A command buffer, begun; freed by the harness at the end.
  VkCommandBuffer commands() {
    commands_.push_back(gpu_->begin_commands());
    return commands_.back();
  }
  /// Uploads `size` random bytes at `offset` (copy, or in place); the model follows on success.
  Expected<void, UploadError> upload(StagingFrame& frame, uint64_t offset, uint64_t size,
                                     bool in_place = false) {
    const std::vector<std::byte> data = random_bytes(rng, size);
    if (in_place) {
      const auto span = frame.reserve(dst.buffer, offset, size);
      if (!span) return unexpected(span.error());
      std::memcpy(span->data(), data.data(), size);
    } else if (const auto done = frame.upload(dst.buffer, offset, data); !done) {
      return done;
    }
    std::memcpy(model.data() + offset, data.data(), size);
    return {};
  }
  /// Ends and submits `cmd`, waiting on `waits` and signalling `point`.
  void submit(VkCommandBuffer cmd, const RetirementPoint& point,
              std::span<const VkSemaphoreSubmitInfo> waits = {}) {
    const VkSemaphoreSubmitInfo signal = point.submit_info();
    gpu_->submit(cmd, waits, {&signal, 1});
  }
  /// Waits for the device to be idle, reads the whole buffer back and compares it with the model.
  void verify() {
    ASSERT_EQ(vkDeviceWaitIdle(gpu_->device), VK_SUCCESS);
    VkCommandBuffer cmd = commands();
    gpu_->record_readback(cmd, dst.buffer, 0, dst.size, back_.buffer, 0);
    gpu_->submit(cmd, {}, {});
    ASSERT_EQ(vkDeviceWaitIdle(gpu_->device), VK_SUCCESS);
    const int64_t diff = first_difference(model, {back_.mapped, back_.size});
    ASSERT_EQ(diff, -1) << "destination differs from the model at byte " << diff;
  }

  std::mt19937_64 rng;
  TestBuffer dst;
  /// What the destination must hold after everything submitted so far.
  std::vector<std::byte> model;

 private:
  Gpu* gpu_;
  TestBuffer back_;
  std::vector<VkCommandBuffer> commands_;
};

}  // namespace staging::vulkan::test
