#include "vulkan_messages.hpp"

namespace staging::vulkan::support {

MessageKind classify(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                     VkDebugUtilsMessageTypeFlagsEXT types, std::string_view id) noexcept {
  constexpr VkDebugUtilsMessageTypeFlagsEXT kChecks =
      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  constexpr VkDebugUtilsMessageSeverityFlagsEXT kFailing =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  // The loader about the machine (a general message, not one of its checks of the program).
  const bool loader_general = id == kLoaderMessageId && (types & kChecks) == 0;
  if (loader_general && (severity & kFailing) != 0) return MessageKind::Environment;
  if ((severity & kFailing) != 0) return MessageKind::Finding;
  if ((types & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT) != 0) return MessageKind::Finding;
  if (id.starts_with("SYNC-")) return MessageKind::Finding;
  // Informational (or verbose) from here on: passed only when it is about set-up.
  if (id == kLoaderMessageId || id == kLayerStatusId) return MessageKind::SetUp;
  // The layer's shader validation cache file: absent on a fresh machine, created at exit.
  if (id.starts_with("UNASSIGNED-cache-")) return MessageKind::SetUp;
  return MessageKind::Finding;
}

}  // namespace staging::vulkan::support
