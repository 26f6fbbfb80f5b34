// The Vulkan boilerplate of staging-example-vulkan, kept out of main.cpp so that main.cpp reads as
// the API example: an instance (with VK_LAYER_KHRONOS_validation and synchronization validation
// when installed), the first Vulkan 1.2+ device with timeline semaphores and synchronization2, one
// queue, and the buffers, images and readback copies the example needs.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "staging/vulkan.hpp"

namespace example {

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::byte* mapped = nullptr;  // host-visible buffers only
};

struct Image {
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
};

class Device {
 public:
  /// Creates everything, or leaves ok() false with why() set (no driver, no suitable device).
  Device();
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  [[nodiscard]] bool ok() const { return device_ != VK_NULL_HANDLE; }
  [[nodiscard]] const std::string& why() const { return why_; }
  /// "llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan 1.3.230), validation on".
  [[nodiscard]] std::string describe() const;
  /// Validation messages seen so far (each is printed).
  [[nodiscard]] int validation_messages() const;

  /// What staging::vulkan::Ring::create needs.
  [[nodiscard]] staging::vulkan::Device staging_device() const;

  Buffer make_buffer(uint64_t size, VkBufferUsageFlags usage, bool host_visible);
  Image make_texture(VkFormat format, uint32_t width, uint32_t height, uint32_t mips);
  void destroy(Buffer& buffer);
  void destroy(Image& image);

  /// A primary command buffer, begun.
  VkCommandBuffer begin_commands();
  /// Ends `cmd` and submits it with vkQueueSubmit2, signalling `signal`.
  void submit(VkCommandBuffer cmd, const VkSemaphoreSubmitInfo& signal);
  void free_commands(VkCommandBuffer cmd);

  /// Records a copy of `size` bytes of `src` into `dst` (host-visible), visible to the host.
  void record_readback(VkCommandBuffer cmd, VkBuffer src, uint64_t size, VkBuffer dst);
  /// Records copies of every mip level of a `width` x `height` texture, which the frame left in
  /// SHADER_READ_ONLY_OPTIMAL for the fragment shader, into `dst` from `dst_offset` on, back to
  /// back (tightly packed).
  void record_texture_readback(VkCommandBuffer cmd, VkImage image, uint32_t width, uint32_t height,
                               uint32_t mips, uint32_t texel_bytes, VkBuffer dst,
                               uint64_t dst_offset);

 private:
  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags want);
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  PFN_vkQueueSubmit2 submit2_ = nullptr;
  PFN_vkCmdPipelineBarrier2 barrier2_ = nullptr;
  bool validation_ = false;
  std::string why_;
};

}  // namespace example
