// The one file of the backend that calls into the linked Vulkan loader (libvulkan), and only for
// vkGetInstanceProcAddr. Every other source compiles with VK_NO_PROTOTYPES.
#include <vulkan/vulkan_core.h>

#include "staging/vulkan/dispatch.hpp"

namespace staging::vulkan {

Dispatch Dispatch::from_loader(VkInstance instance, VkDevice device) noexcept {
  return load(&vkGetInstanceProcAddr, instance, device);
}

}  // namespace staging::vulkan
