// Which messages of the Vulkan loader and of VK_LAYER_KHRONOS_validation fail a run that must be
// clean (the Vulkan tests, `staging-bench --validate`, staging-example-vulkan), and which are the
// layer and loader talking about their own set-up.
//
// A finding: every error and warning, every performance message, every synchronization hazard
// (SYNC-*), and any informational message not known to be about set-up (an unknown message fails
// loudly rather than passing quietly). Set-up: the loader's informational notes (which drivers and
// layers it found), the layer's start-up status (what it checks), and the layer's notes about its
// shader validation cache file (e.g. "Cannot open shader validation cache ... for reading (it may
// not exist yet)" on a machine where the layer has never run). Environment: the loader's warnings
// and errors about the machine rather than the program (e.g. "env var 'VK_INSTANCE_LAYERS' defined
// and adding layers" when a capture tool, an overlay or a profiler is enabled, or a broken layer
// manifest): printed, not failed. The loader's checks of the program's own calls come with the
// validation type and stay findings.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <string_view>

namespace staging::vulkan::support {

/// What a debug-utils message means to a run that must be clean.
enum class MessageKind : uint8_t {
  /// Fails the run.
  Finding,
  /// The loader's or the layer's note about its own set-up: passed (counted, not failed).
  SetUp,
  /// The loader's warning or error about the machine (its layers, drivers, environment
  /// variables), not about the program's Vulkan calls: printed, not failed.
  Environment,
};

/// The message id the Vulkan loader gives all its messages.
inline constexpr std::string_view kLoaderMessageId = "Loader Message";

/// The message id of the layer's start-up status ("khronos-validation ... enabled features").
inline constexpr std::string_view kLayerStatusId =
    "UNASSIGNED-khronos-validation-createinstance-status-message";

/// Classifies one message by its severity, types and id (pMessageIdName; empty when null).
/// Pure; callable from any thread.
[[nodiscard]] MessageKind classify(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                   std::string_view id) noexcept;

}  // namespace staging::vulkan::support
