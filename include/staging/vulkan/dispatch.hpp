// Dispatch: the Vulkan functions staging::vulkan calls, as a plain table of function pointers.
//
// The library never calls a Vulkan prototype itself (its sources compile with VK_NO_PROTOTYPES)
// and does not link the Vulkan loader, so it works with the system loader, with volk, or with an
// application's own loader, and programs using it start where Vulkan is not installed. Fill the
// table in one of three ways:
//
//   Dispatch d = Dispatch::load(vkGetInstanceProcAddr, instance, device);  // your loader
//   Dispatch d = Dispatch::from_loader(instance, device);  // the loader, opened at run time
//   Dispatch d; d.vkCreateBuffer = my_vkCreateBuffer; ...                 // by hand (volk)
//
// Members are named after the Vulkan functions. Functions promoted to core in 1.2/1.3 fall back
// to their KHR names when loading (vkGetSemaphoreCounterValueKHR, vkCmdPipelineBarrier2KHR, ...).
#pragma once

#include <vulkan/vulkan_core.h>

#include <string_view>

namespace staging::vulkan {

// X-macros listing every function the table holds: X(member name).
/// The instance-level functions of the table (loaded with vkGetInstanceProcAddr): X(name) for
/// each. Public so that an application can fill or check a Dispatch the same way.
#define STAGING_VULKAN_INSTANCE_FUNCTIONS(X) \
  X(vkGetPhysicalDeviceProperties)           \
  X(vkGetPhysicalDeviceMemoryProperties)
/// The device-level functions of the table (loaded with vkGetDeviceProcAddr): X(name) for each.
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

/// The device-level functions a Streamer calls beyond the Ring's (its own command buffers and
/// queue submissions): X(name) for each. Loaded by load() like the others; only Streamer::create
/// requires them.
#define STAGING_VULKAN_STREAM_FUNCTIONS(X) \
  X(vkCreateCommandPool)                   \
  X(vkDestroyCommandPool)                  \
  X(vkAllocateCommandBuffers)              \
  X(vkResetCommandBuffer)                  \
  X(vkBeginCommandBuffer)                  \
  X(vkEndCommandBuffer)                    \
  X(vkQueueSubmit2)

/// The optional instance-level functions of the table: X(name) for each. Loaded by load() like
/// the instance-level functions when available; missing() and missing_for_streamer() do not ask
/// for them: a null member only turns off the checks that need it.
#define STAGING_VULKAN_OPTIONAL_INSTANCE_FUNCTIONS(X) X(vkGetPhysicalDeviceQueueFamilyProperties)

/// The Vulkan functions the backend calls. Plain data: copy it freely. Every instance- and
/// device-level member must be non-null before a Ring is created (Ring::create reports the first
/// missing one); a Streamer needs the stream functions too. The optional members may stay null.
///
/// Requirements on the device these come from: Vulkan 1.2 or later with the timelineSemaphore
/// feature enabled, and synchronization2 (core 1.3, or VK_KHR_synchronization2 enabled).
/// Threading: the table itself is immutable data; Vulkan's own rules apply to the calls.
struct Dispatch {
#define STAGING_VULKAN_MEMBER(name) PFN_##name name = nullptr;
  ///@{
  /// `PFN_vkX vkX` for each instance-level function; null until loaded or set.
  STAGING_VULKAN_INSTANCE_FUNCTIONS(STAGING_VULKAN_MEMBER)
  ///@}
  ///@{
  /// `PFN_vkX vkX` for each device-level function; null until loaded or set.
  STAGING_VULKAN_DEVICE_FUNCTIONS(STAGING_VULKAN_MEMBER)
  ///@}
  ///@{
  /// `PFN_vkX vkX` for each stream function; null until loaded or set.
  STAGING_VULKAN_STREAM_FUNCTIONS(STAGING_VULKAN_MEMBER)
  ///@}
  ///@{
  /// `PFN_vkX vkX` for each optional instance-level function: loaded when available; a null
  /// member only turns off the checks that need it (vkGetPhysicalDeviceQueueFamilyProperties:
  /// the Streamer's checks of its queue family, StreamerConfig::queue).
  STAGING_VULKAN_OPTIONAL_INSTANCE_FUNCTIONS(STAGING_VULKAN_MEMBER)
  ///@}
#undef STAGING_VULKAN_MEMBER

  /// Loads every function through `get_instance_proc_addr` (the loader's vkGetInstanceProcAddr,
  /// volk's, or your own): instance-level functions (the optional ones too) for `instance`,
  /// device-level ones through the device's vkGetDeviceProcAddr for `device` (no loader
  /// trampoline). Functions the implementation does not expose stay null; check with missing().
  /// A null `get_instance_proc_addr` gives an all-null table; a null `device` leaves the
  /// device-level functions null. Safe from any thread (as vkGet*ProcAddr are).
  [[nodiscard]] static Dispatch load(PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                     VkInstance instance, VkDevice device) noexcept;

  /// The Vulkan loader's vkGetInstanceProcAddr, the loader (libvulkan.so.1; vulkan-1.dll on
  /// Windows, libvulkan.1.dylib on macOS) opened at run time on the first call and kept open for
  /// the life of the process; null when no loader is installed. Safe from any thread.
  [[nodiscard]] static PFN_vkGetInstanceProcAddr loader_proc_addr() noexcept;

  /// load() with loader_proc_addr(): the system's Vulkan loader, opened at run time. Without a
  /// loader the table is all null (missing() names the first function). Applications that load
  /// Vulkan themselves use load() or fill the table by hand.
  [[nodiscard]] static Dispatch from_loader(VkInstance instance, VkDevice device) noexcept;

  /// The name of the first null member a Ring needs ("vkCmdPipelineBarrier2"), or empty when
  /// all are set. The optional members are not asked for.
  [[nodiscard]] std::string_view missing() const noexcept;
  /// The name of the first null member a Streamer needs (the Ring's and the stream functions),
  /// or empty when all are set. The optional members are not asked for.
  [[nodiscard]] std::string_view missing_for_streamer() const noexcept;
};

}  // namespace staging::vulkan
