// Dispatch: the Vulkan functions staging::vulkan calls, as a plain table of function pointers.
//
// The library never calls a Vulkan prototype itself (its sources compile with VK_NO_PROTOTYPES),
// so it works with the system loader, with volk, or with an application's own loader. Fill the
// table in one of three ways:
//
//   Dispatch d = Dispatch::load(vkGetInstanceProcAddr, instance, device);  // any loader
//   Dispatch d = Dispatch::from_loader(instance, device);                  // the linked loader
//   Dispatch d; d.vkCreateBuffer = my_vkCreateBuffer; ...                 // by hand (volk)
//
// Members are named after the Vulkan functions. Functions promoted to core in 1.2/1.3 fall back
// to their KHR names when loading (vkGetSemaphoreCounterValueKHR, vkCmdPipelineBarrier2KHR, ...).
#pragma once

#include <vulkan/vulkan_core.h>

#include <string_view>

namespace staging::vulkan {

// X-macros listing every function the table holds: X(member name).
// Instance-level functions (loaded with vkGetInstanceProcAddr).
#define STAGING_VULKAN_INSTANCE_FUNCTIONS(X) \
  X(vkGetPhysicalDeviceProperties)           \
  X(vkGetPhysicalDeviceMemoryProperties)
// Device-level functions (loaded with vkGetDeviceProcAddr).
#define STAGING_VULKAN_DEVICE_FUNCTIONS(X) \
  X(vkCreateBuffer)                        \
  X(vkDestroyBuffer)                       \
  X(vkGetBufferMemoryRequirements)         \
  X(vkAllocateMemory)                      \
  X(vkFreeMemory)                          \
  X(vkBindBufferMemory)                    \
  X(vkMapMemory)                           \
  X(vkUnmapMemory)                         \
  X(vkFlushMappedMemoryRanges)             \
  X(vkCreateSemaphore)                     \
  X(vkDestroySemaphore)                    \
  X(vkGetSemaphoreCounterValue)            \
  X(vkWaitSemaphores)                      \
  X(vkCmdCopyBuffer)                       \
  X(vkCmdCopyBufferToImage)                \
  X(vkCmdUpdateBuffer)                     \
  X(vkCmdPipelineBarrier2)

/// The Vulkan functions the backend calls. Plain data: copy it freely. Every member must be
/// non-null before a Ring is created (Ring::create reports the first missing one).
///
/// Requirements on the device these come from: Vulkan 1.2 or later with the timelineSemaphore
/// feature enabled, and synchronization2 (core 1.3, or VK_KHR_synchronization2 enabled).
/// Threading: the table itself is immutable data; Vulkan's own rules apply to the calls.
struct Dispatch {
#define STAGING_VULKAN_MEMBER(name) PFN_##name name = nullptr;
  STAGING_VULKAN_INSTANCE_FUNCTIONS(STAGING_VULKAN_MEMBER)
  STAGING_VULKAN_DEVICE_FUNCTIONS(STAGING_VULKAN_MEMBER)
#undef STAGING_VULKAN_MEMBER

  /// Loads every function through `get_instance_proc_addr` (the loader's vkGetInstanceProcAddr,
  /// volk's, or your own): instance-level functions for `instance`, device-level ones through
  /// the device's vkGetDeviceProcAddr for `device` (no loader trampoline). Functions the
  /// implementation does not expose stay null; check with missing().
  [[nodiscard]] static Dispatch load(PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                     VkInstance instance, VkDevice device) noexcept;

  /// load() with the vkGetInstanceProcAddr of the Vulkan loader this library is linked against
  /// (libvulkan). Applications that load Vulkan themselves use load() or fill the table by hand.
  [[nodiscard]] static Dispatch from_loader(VkInstance instance, VkDevice device) noexcept;

  /// The name of the first null member ("vkCmdPipelineBarrier2"), or empty when all are set.
  [[nodiscard]] std::string_view missing() const noexcept;
};

}  // namespace staging::vulkan
