// What one shared placement of a Vulkan frame records at finish() (the SharedFrame payload of
// StagingFrame::share()'s space), and the shared state's forward declaration.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>

namespace staging::vulkan::detail {
struct SharedState;
/// What one shared placement records at finish() (the SharedFrame payload).
struct SharedCopy {
  VkBuffer buffer = VK_NULL_HANDLE;  // buffer destination (or null: an image)
  uint64_t dst_offset = 0;
  VkImage image = VK_NULL_HANDLE;
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageLayout new_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageAspectFlags barrier_aspect = 0;
  VkBufferImageCopy region{};  // bufferOffset: filled in at finish()
};
}  // namespace staging::vulkan::detail
