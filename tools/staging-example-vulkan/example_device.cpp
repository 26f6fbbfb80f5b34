#include "example_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

namespace example {

namespace support = staging::vulkan::support;

Device::Device() {
  const std::optional<support::Validation> validation =
      support::validation_from_environment(support::Validation::Auto);
  if (!validation) {
    why_ = "STAGING_VULKAN_VALIDATION: use auto, require or off";
    return;
  }
  const char* name = std::getenv("STAGING_VULKAN_DEVICE");
  support::Failure failure;
  device_ = support::TestDevice::create({.application = "staging-example-vulkan",
                                         .validation = *validation,
                                         .device_name = name ? name : "",
                                         .transfer_queue = false},
                                        failure);
  if (!device_) why_ = failure.reason;
}

std::string Device::describe() const {
  return device_->describe() + ", validation " + device_->validation_state();
}

int Device::validation_messages() const {
  return device_->findings();
}

staging::vulkan::Device Device::staging_device() const {
  return device_->staging_device();
}

Buffer Device::make_buffer(uint64_t size, VkBufferUsageFlags usage, bool host_visible) {
  return device_->make_buffer(size, usage, host_visible);
}

Image Device::make_texture(VkFormat format, uint32_t width, uint32_t height, uint32_t mips) {
  return device_->make_image(format, {width, height, 1}, mips, 1,
                             VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                                 VK_IMAGE_USAGE_TRANSFER_SRC_BIT);
}

void Device::destroy(Buffer& b) {
  device_->destroy(b);
}

void Device::destroy(Image& img) {
  device_->destroy(img);
}

VkCommandBuffer Device::begin_commands() {
  return device_->begin_commands(device_->universal());
}

void Device::submit(VkCommandBuffer cmd, const VkSemaphoreSubmitInfo& signal) {
  device_->submit(device_->universal(), cmd, {}, {&signal, 1});
}

void Device::free_commands(VkCommandBuffer cmd) {
  device_->free_commands(device_->universal(), cmd);
}

void Device::record_readback(VkCommandBuffer cmd, VkBuffer src, uint64_t size, VkBuffer dst) {
  // The frame made the vertex data visible to vertex input; chain on to the copy that reads it.
  const VkMemoryBarrier2 before{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                                .srcStageMask = VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT,
                                .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                .dstAccessMask = VK_ACCESS_2_TRANSFER_READ_BIT};
  const VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .memoryBarrierCount = 1,
                             .pMemoryBarriers = &before};
  vkCmdPipelineBarrier2(cmd, &dep);
  const VkBufferCopy region{0, 0, size};
  vkCmdCopyBuffer(cmd, src, dst, 1, &region);
  const VkMemoryBarrier2 after{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                               .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                               .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                               .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                               .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT};
  const VkDependencyInfo dep_after{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                   .memoryBarrierCount = 1,
                                   .pMemoryBarriers = &after};
  vkCmdPipelineBarrier2(cmd, &dep_after);
}

void Device::record_texture_readback(VkCommandBuffer cmd, VkImage image, uint32_t width,
                                     uint32_t height, uint32_t mips, uint32_t texel_bytes,
                                     VkBuffer dst, uint64_t dst_offset) {
  // SHADER_READ_ONLY (where the frame left it for the fragment shader) -> TRANSFER_SRC.
  const VkImageMemoryBarrier2 to_src{
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
      .srcStageMask = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
      .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
      .dstAccessMask = VK_ACCESS_2_TRANSFER_READ_BIT,
      .oldLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
      .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = image,
      .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, mips, 0, 1}};
  const VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .imageMemoryBarrierCount = 1,
                             .pImageMemoryBarriers = &to_src};
  vkCmdPipelineBarrier2(cmd, &dep);
  std::vector<VkBufferImageCopy> regions;
  uint64_t offset = dst_offset;
  for (uint32_t m = 0; m < mips; ++m) {
    const uint32_t w = std::max(1u, width >> m), h = std::max(1u, height >> m);
    regions.push_back({.bufferOffset = offset,
                       .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, m, 0, 1},
                       .imageExtent = {w, h, 1}});
    offset += uint64_t{w} * h * texel_bytes;
  }
  vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst,
                         static_cast<uint32_t>(regions.size()), regions.data());
  // Back to SHADER_READ_ONLY for the next frame, and the copies visible to the host.
  VkImageMemoryBarrier2 back = to_src;
  back.srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT;
  back.srcAccessMask = 0;
  back.dstStageMask = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT;
  back.dstAccessMask = 0;
  back.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  back.newLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
  const VkMemoryBarrier2 host{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                              .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                              .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                              .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                              .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT};
  const VkDependencyInfo dep_after{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                   .memoryBarrierCount = 1,
                                   .pMemoryBarriers = &host,
                                   .imageMemoryBarrierCount = 1,
                                   .pImageMemoryBarriers = &back};
  vkCmdPipelineBarrier2(cmd, &dep_after);
}

}  // namespace example
