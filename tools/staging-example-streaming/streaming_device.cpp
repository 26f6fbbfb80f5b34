#include "streaming_device.hpp"

#include <optional>
#include <vector>

namespace example {

namespace support = staging::vulkan::support;

StreamingDevice::StreamingDevice(const std::string& device_filter) {
  const std::optional<support::Validation> validation =
      support::validation_from_environment(support::Validation::Auto);
  if (!validation) {
    why_ = "STAGING_VULKAN_VALIDATION: use auto, require or off";
    return;
  }
  support::Failure failure;
  owner_ = support::TestDevice::create({.application = "staging-example-streaming",
                                        .validation = *validation,
                                        .device_name = device_filter,
                                        .dynamic_rendering = true},
                                       failure);
  if (!owner_) {
    why_ = failure.reason;
    return;
  }
  const support::Queue& universal = owner_->universal();
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(owner_->physical_device(), &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(owner_->physical_device(), &count, families.data());
  if ((families[universal.family].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0) {
    why_ = "the device has no graphics queue";
    owner_.reset();
    return;
  }
  physical_device = owner_->physical_device();
  properties = owner_->properties();
  device = owner_->device();
  graphics = universal.queue;
  graphics_family = universal.family;
  // The copy engine, where there is one: what the streamer is for.
  const support::Queue* copy = owner_->transfer();
  transfer = copy != nullptr ? copy->queue : graphics;
  transfer_family = copy != nullptr ? copy->family : graphics_family;
  bc_formats = owner_->bc_formats();
}

std::string StreamingDevice::describe() const {
  std::string s = owner_->describe() + ", ";
  s += dedicated_transfer() ? "transfer queue family " + std::to_string(transfer_family)
                            : std::string("no transfer-only family (the graphics queue is shared)");
  return s + ", validation " + owner_->validation_state();
}

bool StreamingDevice::run_once(const std::function<void(VkCommandBuffer)>& body) {
  std::lock_guard lock(graphics_mutex);
  return owner_->run_once(owner_->universal(), body);
}

}  // namespace example
