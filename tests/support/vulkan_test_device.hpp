// The Vulkan set-up the project's Vulkan tests, staging-bench and staging-example-vulkan share
// (internal: not installed, not part of the library's API).
//
// TestDevice loads the Vulkan loader at run time (volk: no link-time dependency on libvulkan, so
// binaries start where Vulkan is not installed), creates an instance — with
// VK_LAYER_KHRONOS_validation and synchronization validation when asked for — and a debug
// messenger that sorts every message with classify() (vulkan_messages.hpp): findings are counted
// and reported, the layer's and loader's set-up notes are counted and passed, the loader's
// warnings about the machine (layers enabled by the environment) are printed and passed. It picks a
// device (a discrete GPU first, then integrated, virtual, CPU; or by name) with timeline semaphores
// and synchronization2, and creates it with a universal queue and, where the device has one, a
// queue of a transfer-only family, each with a command pool.
//
// Including this header gives the Vulkan functions as volk's function pointers (vkCreateBuffer,
// ...): valid once a TestDevice exists (instance- and device-level functions of its device).
// One TestDevice per process at a time. Threading: create and destroy on one thread; messages may
// arrive on any thread (the counters are atomic, `on_finding` must be thread-safe).
#pragma once

#include <volk.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "staging/vulkan.hpp"
#include "vulkan_messages.hpp"

namespace staging::vulkan::support {

/// Whether VK_LAYER_KHRONOS_validation is enabled (with synchronization validation).
enum class Validation : uint8_t {
  /// Never.
  Off,
  /// When the layer is installed.
  Auto,
  /// Always: create() fails (broken set-up) when the layer or VK_EXT_debug_utils is missing.
  Require,
};

/// STAGING_VULKAN_VALIDATION (auto, require or off), or `fallback` when it is unset; nullopt for
/// any other value.
[[nodiscard]] std::optional<Validation> validation_from_environment(Validation fallback);

/// One message of the layer or the loader.
struct Message {
  MessageKind kind = MessageKind::Finding;
  VkDebugUtilsMessageSeverityFlagBitsEXT severity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  /// pMessageIdName ("SYNC-HAZARD-WRITE-AFTER-READ"), or empty.
  std::string id;
  std::string text;
};

/// What TestDevice::create makes.
struct Options {
  /// VkApplicationInfo::pApplicationName.
  std::string application = "staging";
  Validation validation = Validation::Auto;
  /// Part of the device name to pick; empty: the best device type (discrete GPU first).
  std::string device_name;
  /// The lowest device API version accepted: VK_API_VERSION_1_2 (then VK_KHR_synchronization2 is
  /// required and enabled) or VK_API_VERSION_1_3.
  uint32_t api_version = VK_API_VERSION_1_3;
  /// Also create a queue of a transfer-only family when the device has one.
  bool transfer_queue = true;
  /// Require and enable dynamic rendering (Vulkan 1.3 devices only; for programs that draw).
  bool dynamic_rendering = false;
  /// Called for every finding (instead of printing it to stderr), on the thread of the Vulkan
  /// call that caused it. The finding is counted either way.
  std::function<void(const Message&)> on_finding;
};

/// Why TestDevice::create failed.
struct Failure {
  std::string reason;
  /// The machine is set up wrongly (the layer required but missing, the layer not confirming
  /// synchronization validation, a device without functions it claims), rather than simply
  /// without a usable device: tests fail on it instead of skipping.
  bool broken = false;
};

/// A queue of the device and a command pool for it (command buffers resettable one by one).
struct Queue {
  uint32_t family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  /// VkQueueFamilyProperties::timestampValidBits (0: no timestamps on this queue).
  uint32_t timestamp_bits = 0;
};

/// A buffer with its own memory; `mapped` is set for host-visible memory.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::byte* mapped = nullptr;
  uint64_t size = 0;
  uint32_t memory_type = 0;
};

/// An optimal-tiling image with its own device-local memory.
struct Image {
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkFormat format = VK_FORMAT_UNDEFINED;
  VkExtent3D extent{};
  uint32_t mips = 1;
  uint32_t layers = 1;
};

class TestDevice {
 public:
  /// Loads Vulkan and makes everything; null with `failure` set when it cannot ("Vulkan loader
  /// not found", no driver, no suitable device, ...).
  static std::unique_ptr<TestDevice> create(Options options, Failure& failure);
  /// Waits for the device to be idle, then destroys the pools, the device, the messenger and the
  /// instance (messages at destruction, e.g. leaked objects, still count).
  ~TestDevice();
  TestDevice(const TestDevice&) = delete;
  TestDevice& operator=(const TestDevice&) = delete;

  [[nodiscard]] VkInstance instance() const { return instance_; }
  [[nodiscard]] VkPhysicalDevice physical_device() const { return physical_; }
  [[nodiscard]] VkDevice device() const { return device_; }
  [[nodiscard]] const VkPhysicalDeviceProperties& properties() const { return properties_; }
  [[nodiscard]] const VkPhysicalDeviceMemoryProperties& memory_properties() const {
    return memory_properties_;
  }
  /// "llvmpipe Mesa 22.3.6" (driver name and info).
  [[nodiscard]] const std::string& driver() const { return driver_; }
  /// The queue of the first graphics+compute family (else graphics, compute, transfer).
  [[nodiscard]] const Queue& universal() const { return universal_; }
  /// The transfer-only queue, or null (none asked for, or the device has no such family).
  [[nodiscard]] const Queue* transfer() const {
    return transfer_.queue != VK_NULL_HANDLE ? &transfer_ : nullptr;
  }
  [[nodiscard]] bool validation() const { return validation_; }
  /// Synchronization validation was asked for (validation on and the layer offers it).
  [[nodiscard]] bool synchronization_validation() const { return sync_validation_; }
  /// The layer's start-up status message (what it checks), or empty.
  [[nodiscard]] std::string layer_status() const;
  /// textureCompressionBC is supported (and enabled).
  [[nodiscard]] bool bc_formats() const { return bc_formats_; }
  /// hostQueryReset is supported (and enabled).
  [[nodiscard]] bool host_query_reset() const { return host_query_reset_; }
  /// vkQueueSubmit2, or vkQueueSubmit2KHR on a Vulkan 1.2 device.
  [[nodiscard]] PFN_vkQueueSubmit2 queue_submit2() const { return submit2_; }

  /// staging's dispatch table for this device.
  [[nodiscard]] const Dispatch& dispatch() const { return dispatch_; }
  /// What staging::vulkan::Ring::create needs.
  [[nodiscard]] staging::vulkan::Device staging_device() const {
    return {physical_, device_, dispatch_};
  }
  /// "llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan 1.3.230)".
  [[nodiscard]] std::string describe() const;
  /// "on, with synchronization validation (the layer confirms it)", "on", or "off".
  [[nodiscard]] std::string validation_state() const;

  /// Findings so far (each reported when it came).
  [[nodiscard]] int findings() const { return findings_.load(); }
  /// Set-up notes of the layer and the loader passed so far.
  [[nodiscard]] int set_up_messages() const { return set_up_.load(); }
  /// The distinct ids of those notes ("Loader Message", "UNASSIGNED-cache-file-error", ...).
  [[nodiscard]] std::vector<std::string> set_up_ids() const;
  /// The loader's warnings and errors about the machine so far (printed to stderr, not findings:
  /// e.g. layers added through VK_INSTANCE_LAYERS).
  [[nodiscard]] int environment_messages() const { return environment_.load(); }

  /// A memory type among `bits` with every flag of `want`, preferring types without `avoid`;
  /// any type of `bits` when none has `want`; nullopt when `bits` is empty.
  [[nodiscard]] std::optional<uint32_t> memory_type(uint32_t bits, VkMemoryPropertyFlags want,
                                                    VkMemoryPropertyFlags avoid = 0) const;
  /// A buffer of `size` bytes with its own memory: HOST_VISIBLE | HOST_COHERENT and mapped when
  /// `host_visible`, else DEVICE_LOCAL (not host-visible where the device has such memory).
  /// Empty (buffer null) on failure.
  [[nodiscard]] Buffer make_buffer(uint64_t size, VkBufferUsageFlags usage,
                                   bool host_visible) const;
  /// A 2D optimal-tiling image in device-local memory (not host-visible where the device has
  /// such memory); empty (image null) when the device does
  /// not support `format` with `usage`, `mips` and `layers` in optimal tiling, or creation fails.
  [[nodiscard]] Image make_image(VkFormat format, VkExtent3D extent, uint32_t mips, uint32_t layers,
                                 VkImageUsageFlags usage) const;
  /// make_image() of a 2D texture with `mips` levels that copies fill and read and shaders
  /// sample (SAMPLED | TRANSFER_DST | TRANSFER_SRC, one layer).
  [[nodiscard]] Image make_texture(VkFormat format, uint32_t width, uint32_t height,
                                   uint32_t mips) const {
    return make_image(format, {width, height, 1}, mips, 1,
                      VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                          VK_IMAGE_USAGE_TRANSFER_SRC_BIT);
  }
  void destroy(Buffer& buffer) const;
  void destroy(Image& image) const;

  /// A primary command buffer from `queue`'s pool, not begun (null on failure).
  [[nodiscard]] VkCommandBuffer allocate_commands(const Queue& queue) const;
  /// allocate_commands(), begun for one-time submission (null on failure).
  [[nodiscard]] VkCommandBuffer begin_commands(const Queue& queue) const;
  /// Ends `cmd` and submits it to `queue` with vkQueueSubmit2, waiting on `waits`, signalling
  /// `signals` and `fence` (optional). A null `cmd` submits the semaphore operations alone.
  VkResult submit(const Queue& queue, VkCommandBuffer cmd,
                  std::span<const VkSemaphoreSubmitInfo> waits,
                  std::span<const VkSemaphoreSubmitInfo> signals,
                  VkFence fence = VK_NULL_HANDLE) const;
  void free_commands(const Queue& queue, VkCommandBuffer cmd) const;
  /// Records `body` into a fresh command buffer of `queue` between full barriers (every earlier
  /// write before it; everything it wrote visible to later commands and to host reads), submits
  /// it after everything submitted to `queue` before and waits until the GPU has finished it.
  /// False when recording, submission or the wait fails, or after `timeout_s` seconds (the
  /// command buffer is then left to the pool). The caller serialises submissions to `queue`.
  bool run_once(const Queue& queue, const std::function<void(VkCommandBuffer)>& body,
                uint64_t timeout_s = 60) const;

 private:
  TestDevice() = default;
  bool create_instance(Failure& failure);
  bool pick_device(Failure& failure);
  bool create_device(Failure& failure);
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user);

  Options options_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  std::string driver_;
  VkDevice device_ = VK_NULL_HANDLE;
  Queue universal_;
  Queue transfer_;
  bool validation_ = false;
  bool sync_validation_ = false;
  bool core_sync2_ = false;
  bool bc_formats_ = false;
  bool host_query_reset_ = false;
  PFN_vkQueueSubmit2 submit2_ = nullptr;
  Dispatch dispatch_;
  std::atomic<int> findings_{0};
  std::atomic<int> set_up_{0};
  std::atomic<int> environment_{0};
  mutable std::mutex status_mutex_;
  std::string layer_status_;             // guarded by status_mutex_
  std::vector<std::string> set_up_ids_;  // guarded by status_mutex_
};

}  // namespace staging::vulkan::support
