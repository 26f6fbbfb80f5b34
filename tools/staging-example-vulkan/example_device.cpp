#include "example_device.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <optional>

#include "vulkan_commands.hpp"

namespace example {

namespace support = staging::vulkan::support;

void add_device_options(CLI::App& app, std::string& device_name) {
  app.add_option("--device", device_name,
                 "a part of the Vulkan device's name, e.g. llvmpipe (default: the best device)")
      ->envname("STAGING_VULKAN_DEVICE");
  app.footer(
      "Environment:\n"
      "  STAGING_VULKAN_DEVICE       what --device says, when --device is not given\n"
      "  STAGING_VULKAN_VALIDATION   auto (default: the validation layer when installed), "
      "require or off\n");
}

std::string device_name_from_environment() {
  const char* name = std::getenv("STAGING_VULKAN_DEVICE");
  return name != nullptr ? name : "";
}

Device::Device(const std::string& device_name) {
  const std::optional<support::Validation> validation =
      support::validation_from_environment(support::Validation::Auto);
  if (!validation) {
    why_ = "STAGING_VULKAN_VALIDATION: use auto, require or off";
    return;
  }
  support::Failure failure;
  device_ = support::TestDevice::create({.application = "staging-example-vulkan",
                                         .validation = *validation,
                                         .device_name = device_name,
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
  return device_->make_texture(format, width, height, mips);
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
  support::memory_barrier(cmd, {VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT, VK_ACCESS_2_NONE},
                          support::kCopyRead);
  const VkBufferCopy region{0, 0, size};
  vkCmdCopyBuffer(cmd, src, dst, 1, &region);
  support::memory_barrier(cmd, support::kCopyWrite, support::kHostRead);
}

void Device::record_texture_readback(VkCommandBuffer cmd, VkImage image, uint32_t width,
                                     uint32_t height, uint32_t mips, uint32_t texel_bytes,
                                     VkBuffer dst, uint64_t dst_offset) {
  // Where the frame left it for the fragment shader, and back there for the next frame.
  constexpr support::Scope kSampling{VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT, VK_ACCESS_2_NONE};
  support::record_image_readback(
      cmd, image, mips, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, kSampling, kSampling,
      support::packed_mip_copies(width, height, mips, texel_bytes, dst_offset), dst);
}

}  // namespace example
