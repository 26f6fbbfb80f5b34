// The Vulkan boilerplate of staging-example-vulkan, kept out of main.cpp so that main.cpp reads as
// the API example: the device (the project's shared test-device set-up: Vulkan loaded at run
// time, VK_LAYER_KHRONOS_validation with synchronization validation when installed, the first
// Vulkan 1.3 device with timeline semaphores and synchronization2), and the buffers, images and
// readback copies the example needs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "staging/vulkan.hpp"
#include "vulkan_test_device.hpp"

namespace CLI {
class App;
}

namespace example {

/// Adds the device options to `app`: --device NAME (a part of the device's name, case-sensitive;
/// default: the environment variable STAGING_VULKAN_DEVICE, else the best device), written to
/// `device_name`; and a help footer naming STAGING_VULKAN_DEVICE and STAGING_VULKAN_VALIDATION.
void add_device_options(CLI::App& app, std::string& device_name);
/// STAGING_VULKAN_DEVICE's value, or "" when it is not set (for binaries without --device).
[[nodiscard]] std::string device_name_from_environment();

using Buffer = staging::vulkan::support::Buffer;
using Image = staging::vulkan::support::Image;

class Device {
 public:
  /// Creates everything, or leaves ok() false with why() set (no loader, no driver, no suitable
  /// device). `device_name`: a part of the device's name to pick (empty: the best device);
  /// STAGING_VULKAN_VALIDATION (auto, require, off) chooses validation as for the tests.
  explicit Device(const std::string& device_name);

  [[nodiscard]] bool ok() const { return device_ != nullptr; }
  [[nodiscard]] const std::string& why() const { return why_; }
  /// "llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan 1.3.230), validation on, with ...".
  [[nodiscard]] std::string describe() const;
  /// Validation findings seen so far (each is printed).
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
  std::unique_ptr<staging::vulkan::support::TestDevice> device_;
  std::string why_;
};

}  // namespace example
