// The Vulkan set-up of staging-example-streaming: an instance (with the validation layer and
// synchronization validation when installed), the first Vulkan 1.3 device with dynamic
// rendering, synchronization2 and timeline semaphores, its graphics queue, and — where the device
// has a transfer-only queue family (a copy engine) — a queue of that family for the streamer.
// Without one the streamer shares the graphics queue, under `graphics_mutex`.
#pragma once

#include <volk.h>  // Vulkan, loaded at run time

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "staging/vulkan.hpp"

namespace example {

/// A host-visible, coherent buffer, mapped (for reading results back).
struct HostBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::byte* mapped = nullptr;
};

class StreamingDevice {
 public:
  /// Creates everything, or leaves ok() false with why() set (no driver, no suitable device).
  /// `device_filter`: a substring of the device name to pick (empty: the first suitable).
  explicit StreamingDevice(const std::string& device_filter = {});
  ~StreamingDevice();
  StreamingDevice(const StreamingDevice&) = delete;
  StreamingDevice& operator=(const StreamingDevice&) = delete;

  [[nodiscard]] bool ok() const { return device != VK_NULL_HANDLE; }
  [[nodiscard]] const std::string& why() const { return why_; }
  /// "NVIDIA H200 (discrete, Vulkan 1.3.277), transfer queue family 1, validation off".
  [[nodiscard]] std::string describe() const;
  /// Validation messages seen so far (each is printed).
  [[nodiscard]] int validation_messages() const;
  /// What staging::vulkan needs.
  [[nodiscard]] staging::vulkan::Device staging_device() const;
  /// A memory type among `bits` with `want` (UINT32_MAX when none).
  [[nodiscard]] uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags want) const;
  /// A mapped host buffer of `bytes` bytes with `usage` (null handles when that fails).
  HostBuffer make_host_buffer(uint64_t bytes, VkBufferUsageFlags usage) const;
  void destroy(HostBuffer& buffer) const;
  /// Records `body` into a command buffer, submits it to the graphics queue (after everything
  /// submitted there before) and waits until it has finished.
  void run_once(const std::function<void(VkCommandBuffer)>& body);
  /// True when the streamer has a queue of its own (a transfer-only family).
  [[nodiscard]] bool dedicated_transfer() const { return transfer_family != graphics_family; }

  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  VkDevice device = VK_NULL_HANDLE;
  VkQueue graphics = VK_NULL_HANDLE;
  uint32_t graphics_family = 0;
  VkQueue transfer = VK_NULL_HANDLE;  // == graphics without a transfer-only family
  uint32_t transfer_family = 0;
  bool validation = false;
  bool bc_formats = false;
  /// Held around every submission to the graphics queue (by the renderer, and by the streamer
  /// when it shares that queue).
  std::mutex graphics_mutex;

 private:
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  std::string why_;
};

}  // namespace example
