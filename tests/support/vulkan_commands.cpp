#include "vulkan_commands.hpp"

#include <algorithm>

namespace staging::vulkan::support {

namespace {

void record(VkCommandBuffer cmd, const VkDependencyInfo& dependency) {
  // vkCmdPipelineBarrier2 is core in Vulkan 1.3; a 1.2 device has the KHR entry point.
  const PFN_vkCmdPipelineBarrier2 barrier =
      vkCmdPipelineBarrier2 != nullptr ? vkCmdPipelineBarrier2 : vkCmdPipelineBarrier2KHR;
  barrier(cmd, &dependency);
}

VkMemoryBarrier2 global_barrier(Scope src, Scope dst) {
  return {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
          .srcStageMask = src.stages,
          .srcAccessMask = src.access,
          .dstStageMask = dst.stages,
          .dstAccessMask = dst.access};
}

}  // namespace

void memory_barrier(VkCommandBuffer cmd, Scope src, Scope dst) {
  const VkMemoryBarrier2 barrier = global_barrier(src, dst);
  record(cmd, {.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
               .memoryBarrierCount = 1,
               .pMemoryBarriers = &barrier});
}

void full_barrier(VkCommandBuffer cmd) {
  memory_barrier(cmd, kAnyWrite, kAnyAccess);
}

void buffer_barrier(VkCommandBuffer cmd, VkBuffer buffer, uint64_t offset, uint64_t size, Scope src,
                    Scope dst) {
  const VkBufferMemoryBarrier2 barrier{.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
                                       .srcStageMask = src.stages,
                                       .srcAccessMask = src.access,
                                       .dstStageMask = dst.stages,
                                       .dstAccessMask = dst.access,
                                       .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                       .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                       .buffer = buffer,
                                       .offset = offset,
                                       .size = size};
  record(cmd, {.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
               .bufferMemoryBarrierCount = 1,
               .pBufferMemoryBarriers = &barrier});
}

VkImageMemoryBarrier2 layout_barrier(VkImage image, uint32_t mips, VkImageLayout from,
                                     VkImageLayout to, Scope src, Scope dst, uint32_t layers,
                                     VkImageAspectFlags aspect) {
  return {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
          .srcStageMask = src.stages,
          .srcAccessMask = src.access,
          .dstStageMask = dst.stages,
          .dstAccessMask = dst.access,
          .oldLayout = from,
          .newLayout = to,
          .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
          .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
          .image = image,
          .subresourceRange = {aspect, 0, mips, 0, layers}};
}

void pipeline_barrier(VkCommandBuffer cmd, std::span<const VkImageMemoryBarrier2> images,
                      const VkMemoryBarrier2* memory) {
  record(cmd, {.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
               .memoryBarrierCount = memory != nullptr ? 1u : 0u,
               .pMemoryBarriers = memory,
               .imageMemoryBarrierCount = static_cast<uint32_t>(images.size()),
               .pImageMemoryBarriers = images.data()});
}

std::vector<VkBufferImageCopy> packed_mip_copies(uint32_t width, uint32_t height, uint32_t mips,
                                                 uint64_t texel_bytes, uint64_t offset) {
  std::vector<VkBufferImageCopy> regions;
  regions.reserve(mips);
  for (uint32_t m = 0; m < mips; ++m) {
    const uint32_t w = std::max(1u, width >> m);
    const uint32_t h = std::max(1u, height >> m);
    regions.push_back({.bufferOffset = offset,
                       .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, m, 0, 1},
                       .imageExtent = {w, h, 1}});
    offset += uint64_t{w} * h * texel_bytes;
  }
  return regions;
}

void record_image_readback(VkCommandBuffer cmd, VkImage image, uint32_t mips, VkImageLayout layout,
                           Scope last_use, Scope next_use,
                           std::span<const VkBufferImageCopy> regions, VkBuffer dst) {
  const VkImageMemoryBarrier2 to_source = layout_barrier(
      image, mips, layout, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, last_use, kCopyRead);
  pipeline_barrier(cmd, {&to_source, 1});
  vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst,
                         static_cast<uint32_t>(regions.size()), regions.data());
  // Back for its next use (the copies only read it: nothing to make available), and the copied
  // bytes for the host.
  const VkImageMemoryBarrier2 back =
      layout_barrier(image, mips, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, layout,
                     {VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_NONE}, next_use);
  const VkMemoryBarrier2 host = global_barrier(kCopyWrite, kHostRead);
  pipeline_barrier(cmd, {&back, 1}, &host);
}

}  // namespace staging::vulkan::support
