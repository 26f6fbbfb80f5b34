// The Vulkan set-up of staging-example-streaming, on the project's shared device set-up
// (vulkan_test_device.hpp: Vulkan loaded at run time, the validation layer with synchronization
// validation when installed, STAGING_VULKAN_VALIDATION to choose): the first Vulkan 1.3 device
// with dynamic rendering, synchronization2 and timeline semaphores, its graphics queue, and —
// where the device has a transfer-only queue family (a copy engine) — a queue of that family for
// the streamer. Without one the streamer shares the graphics queue, under `graphics_mutex`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "staging/vulkan.hpp"
#include "vulkan_test_device.hpp"

namespace example {

/// A host-visible, coherent buffer, mapped (for reading results back).
using HostBuffer = staging::vulkan::support::Buffer;

class StreamingDevice {
 public:
  /// Creates everything, or leaves ok() false with why() set (no loader, no driver, no suitable
  /// device). `device_filter`: a substring of the device name to pick (empty: the best type).
  explicit StreamingDevice(const std::string& device_filter = {});
  StreamingDevice(const StreamingDevice&) = delete;
  StreamingDevice& operator=(const StreamingDevice&) = delete;

  [[nodiscard]] bool ok() const { return device != VK_NULL_HANDLE; }
  [[nodiscard]] const std::string& why() const { return why_; }
  /// "NVIDIA H200 (discrete GPU, Vulkan 1.3.277), transfer queue family 1, validation off".
  [[nodiscard]] std::string describe() const;
  /// Validation findings seen so far (each is printed).
  [[nodiscard]] int validation_messages() const { return owner_->findings(); }
  /// What staging::vulkan needs.
  [[nodiscard]] staging::vulkan::Device staging_device() const { return owner_->staging_device(); }
  /// A mapped host buffer of `bytes` bytes with `usage` (null handles when that fails).
  HostBuffer make_host_buffer(uint64_t bytes, VkBufferUsageFlags usage) const {
    return owner_->make_buffer(bytes, usage, true);
  }
  /// A device-local buffer (null handles when that fails).
  staging::vulkan::support::Buffer make_buffer(uint64_t bytes, VkBufferUsageFlags usage) const {
    return owner_->make_buffer(bytes, usage, false);
  }
  /// A 2D optimal-tiling image in device-local memory (null handles when that fails).
  staging::vulkan::support::Image make_image(VkFormat format, VkExtent3D extent, uint32_t mips,
                                             uint32_t layers, VkImageUsageFlags usage) const {
    return owner_->make_image(format, extent, mips, layers, usage);
  }
  void destroy(staging::vulkan::support::Buffer& buffer) const { owner_->destroy(buffer); }
  void destroy(staging::vulkan::support::Image& image) const { owner_->destroy(image); }
  /// Records `body` into a command buffer, submits it to the graphics queue (after everything
  /// submitted there before) and waits until it has finished; false when that fails.
  bool run_once(const std::function<void(VkCommandBuffer)>& body);
  /// True when the streamer has a queue of its own (a transfer-only family).
  [[nodiscard]] bool dedicated_transfer() const { return transfer_family != graphics_family; }

  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  VkDevice device = VK_NULL_HANDLE;
  VkQueue graphics = VK_NULL_HANDLE;
  uint32_t graphics_family = 0;
  VkQueue transfer = VK_NULL_HANDLE;  // == graphics without a transfer-only family
  uint32_t transfer_family = 0;
  bool bc_formats = false;
  /// Held around every submission to the graphics queue (by the renderer, and by the streamer
  /// when it shares that queue).
  std::mutex graphics_mutex;

 private:
  std::unique_ptr<staging::vulkan::support::TestDevice> owner_;
  std::string why_;
};

}  // namespace example
