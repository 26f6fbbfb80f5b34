// staging-bench --replay, the application's way as the trace records it: each trace frame one
// command buffer on the graphics queue, submitted and waited for; per upload
//   buffer_copy  a staging buffer created (DefaultMemory: vkCreateBuffer, vkAllocateMemory, bind,
//                map), filled, copied with vkCmdCopyBuffer, destroyed once the frame completed
//                (the trace does not say whether the application reused one staging buffer:
//                this is what an application without a ring does)
//   image_copy   the same with vkCmdCopyBufferToImage into an R8G8B8A8 image (UNDEFINED to
//                TRANSFER_DST before, TRANSFER_SRC after)
//   update       vkCmdUpdateBuffer
//   host_write   memcpy into a mapped host-visible buffer (the GPU reads it there: no copy)
// CPU time per upload: its own issuing (creation, fill, recording; destroying its staging
// buffer). Copy time: a frame's submission to completion, shared among the frame's GPU routes by
// bytes; for host writes the memcpy itself.
#include <chrono>
#include <cstring>
#include <map>

#include "staging/detail/vulkan/default_memory.hpp"
#include "vulkan_commands.hpp"
#include "vulkan_replay_targets.hpp"
#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {
namespace {

using namespace staging::vulkan;

const char* route_of(ReplayKind kind) {
  switch (kind) {
    case ReplayKind::BufferCopy:
      return "app/staging-buffer";
    case ReplayKind::ImageCopy:
      return "app/staging-image";
    case ReplayKind::Update:
      return "app/update";
    case ReplayKind::HostWrite:
      return "app/host-write";
  }
  return "?";
}

class AppReplay {
 public:
  AppReplay(Context& vk, const ReplayPlan& plan, ReplayTargets& targets)
      : vk_(vk),
        plan_(plan),
        targets_(targets),
        memory_(vk.staging_device().physical_device, vk.device(), vk.staging_device().dispatch) {}
  ~AppReplay() {
    vkDeviceWaitIdle(vk_.device());
    for (const StagingMemory& m : staging_)
      memory_.release(m);
    vk_.free_commands(vk_.graphics(), cmd_);
  }
  AppReplay(const AppReplay&) = delete;
  AppReplay& operator=(const AppReplay&) = delete;

  MethodResult run() {
    semaphore_ = vk_.make_timeline();
    cmd_ = vk_.allocate_commands(vk_.graphics());
    if (cmd_ == VK_NULL_HANDLE || semaphore_ == VK_NULL_HANDLE) {
      result_.error = "cannot allocate a command buffer or a semaphore";
      return std::move(result_);
    }
    for (const auto& frame : plan_.frames) {
      if (!replay_frame(frame)) break;
    }
    return std::move(result_);
  }

 private:
  bool fail(std::string what) {
    result_.error = std::move(what);
    return false;
  }

  // A staging buffer made, filled and recorded into a copy (buffer or image).
  bool staging_copy(const PlannedUpload& u) {
    auto m = memory_.allocate(u.size);
    if (!m) return fail("staging buffer: " + std::string(to_string(m.error())));
    staging_.push_back(*m);
    ++frame_staging_[route_of(u.kind)];
    std::memcpy(m->mapped, targets_.source(u), u.size);
    if (!m->coherent && !memory_.flush(*m, 0, u.size)) return fail("vkFlushMappedMemoryRanges");
    if (u.kind == ReplayKind::BufferCopy) {
      const VkBufferCopy region{0, u.dst_offset, u.size};
      vkCmdCopyBuffer(cmd_, m->buffer, targets_.device_buffer(), 1, &region);
      return true;
    }
    const PlannedImage& p = targets_.image_size(u);
    const VkImage image = targets_.image(u);
    const VkImageMemoryBarrier2 to_dst =
        support::layout_barrier(image, 1, VK_IMAGE_LAYOUT_UNDEFINED,
                                VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, {}, support::kCopyWrite);
    support::pipeline_barrier(cmd_, {&to_dst, 1});
    const VkBufferImageCopy region{.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                   .imageExtent = {p.width, p.height, 1}};
    vkCmdCopyBufferToImage(cmd_, m->buffer, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
                           &region);
    const VkImageMemoryBarrier2 to_src = support::layout_barrier(
        image, 1, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
        support::kCopyWrite, support::kCopyRead);
    support::pipeline_barrier(cmd_, {&to_src, 1});
    return true;
  }

  // Issues one upload; its CPU time goes to its route.
  bool issue(const PlannedUpload& u) {
    RouteStats& r = result_.routes[route_of(u.kind)];
    const auto t0 = Clock::now();
    switch (u.kind) {
      case ReplayKind::BufferCopy:
      case ReplayKind::ImageCopy:
        if (!staging_copy(u)) return false;
        break;
      case ReplayKind::Update:
        vkCmdUpdateBuffer(cmd_, targets_.device_buffer(), u.dst_offset, u.size, targets_.source(u));
        break;
      case ReplayKind::HostWrite:
        std::memcpy(targets_.host_mapped() + u.dst_offset, targets_.source(u), u.size);
        r.copy_bytes += u.size;
        r.copy_s += seconds_since(t0);
        break;
    }
    r.cpu_s += seconds_since(t0);
    r.uploads += 1;
    r.bytes += u.size;
    return true;
  }

  bool replay_frame(const std::vector<PlannedUpload>& uploads) {
    Context::begin(cmd_);
    std::map<std::string, uint64_t> gpu_bytes;  // this frame's GPU-copied bytes per route
    for (const PlannedUpload& u : uploads) {
      if (!issue(u)) return false;
      if (u.kind != ReplayKind::HostWrite) gpu_bytes[route_of(u.kind)] += u.size;
    }
    const VkSemaphoreSubmitInfo signal{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                       .semaphore = semaphore_,
                                       .value = ++value_,
                                       .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
    const auto t_submit = Clock::now();
    vk_.submit(vk_.graphics(), cmd_, &signal);
    const VkSemaphoreWaitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                   .semaphoreCount = 1,
                                   .pSemaphores = &semaphore_,
                                   .pValues = &value_};
    if (vkWaitSemaphores(vk_.device(), &wait, uint64_t{60} * 1000000000) != VK_SUCCESS) {
      return fail("a frame did not complete in 60 s");
    }
    const double copy_s = seconds_since(t_submit);
    uint64_t total = 0;
    for (const auto& [route, bytes] : gpu_bytes)
      total += bytes;
    for (const auto& [route, bytes] : gpu_bytes) {
      RouteStats& r = result_.routes[route];
      r.copy_bytes += bytes;
      r.copy_s += copy_s * static_cast<double>(bytes) / static_cast<double>(total);
    }
    release_staging();
    return true;
  }

  // Destroys the frame's staging buffers (the GPU has finished them); each one's time goes to
  // the CPU time of its route.
  void release_staging() {
    const auto t0 = Clock::now();
    const std::size_t n = staging_.size();
    for (const StagingMemory& m : staging_)
      memory_.release(m);
    staging_.clear();
    if (n == 0) return;
    const double each = seconds_since(t0) / static_cast<double>(n);
    // (buffer and image staging buffers cost the same to destroy)
    for (auto& [route, r] : result_.routes) {
      if (route == "app/staging-buffer" || route == "app/staging-image") {
        r.cpu_s += each * static_cast<double>(frame_share(route));
      }
    }
    frame_staging_.clear();
  }

  uint64_t frame_share(const std::string& route) const {
    const auto it = frame_staging_.find(route);
    return it == frame_staging_.end() ? 0 : it->second;
  }

  Context& vk_;
  const ReplayPlan& plan_;
  ReplayTargets& targets_;
  DefaultMemory memory_;
  MethodResult result_;
  std::vector<StagingMemory> staging_;
  std::map<std::string, uint64_t> frame_staging_;  // staging buffers made this frame per route
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  uint64_t value_ = 0;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
};

}  // namespace

std::string app_route(const PlannedUpload& u) {
  return route_of(u.kind);
}

MethodResult replay_app(Context& vk, const ReplayPlan& plan, ReplayTargets& targets) {
  AppReplay replay(vk, plan, targets);
  return replay.run();
}

}  // namespace staging::bench::vk
