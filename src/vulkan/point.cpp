// RetirementPoint: the submit info of a point, and whether (or when) the device reaches it.
#include <algorithm>

#include "staging/detail/core/clock.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan {

VkSemaphoreSubmitInfo RetirementPoint::submit_info(VkPipelineStageFlags2 stages) const noexcept {
  return VkSemaphoreSubmitInfo{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
      .semaphore = semaphore,
      .value = value,
      .stageMask = stages,
      .deviceIndex = 0,
  };
}

Expected<bool, WaitError> reached(const Device& device, const RetirementPoint& point) {
  if (point.semaphore == VK_NULL_HANDLE) {
    if (point.value == 0) return true;
    return unexpected(WaitError::Failed);
  }
  uint64_t counter = 0;
  const VkResult r =
      device.dispatch.vkGetSemaphoreCounterValue(device.device, point.semaphore, &counter);
  if (r == VK_ERROR_DEVICE_LOST) return unexpected(WaitError::DeviceLost);
  if (r != VK_SUCCESS) return unexpected(WaitError::Failed);
  return counter >= point.value;
}

Expected<void, WaitError> wait(const Device& device, const RetirementPoint& point,
                               Duration timeout) {
  if (point.semaphore == VK_NULL_HANDLE) {
    if (point.value == 0) return {};
    return unexpected(WaitError::Failed);
  }
  const VkSemaphoreWaitInfo info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &point.semaphore,
      .pValues = &point.value,
  };
  const auto ns =
      static_cast<uint64_t>(std::clamp(timeout, Duration{0}, Deadline::kLongest).count());
  switch (device.dispatch.vkWaitSemaphores(device.device, &info, ns)) {
    case VK_SUCCESS:
      return {};
    case VK_TIMEOUT:
      return unexpected(WaitError::Timeout);
    case VK_ERROR_DEVICE_LOST:
      return unexpected(WaitError::DeviceLost);
    default:
      return unexpected(WaitError::Failed);
  }
}

}  // namespace staging::vulkan
