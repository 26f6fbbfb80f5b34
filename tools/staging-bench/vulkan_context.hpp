// The Vulkan set-up staging-bench --backend vulkan measures on: the device of the project's shared
// test-device set-up (tests/support/vulkan_test_device.hpp: Vulkan loaded at run time, validation
// only when asked for, the universal graphics+compute queue and, where the device has one, a
// transfer-only queue, each with a command pool), and on top of it buffers, images, GPU
// timestamps, and a Dispatch table for staging::vulkan whose vkCreateBuffer / vkAllocateMemory
// count their calls (the "objects created in steady state" of the frame-small scenario).
//
// Threading: one thread (the benchmark's driver thread) calls everything here; fill threads only
// write mapped memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "staging/vulkan.hpp"
#include "vulkan_test_device.hpp"

namespace staging::bench::vk {

/// One queue and a command pool for it (command buffers resettable one by one), named.
struct Queue : staging::vulkan::support::Queue {
  /// "graphics" (the universal graphics+compute+transfer family) or "transfer" (transfer-only).
  std::string name;
};

/// A buffer with its own dedicated memory; `mapped` is set for host-visible memory.
using Buffer = staging::vulkan::support::Buffer;
/// An optimal-tiling image with its own device-local memory.
using Image = staging::vulkan::support::Image;

/// Which memory a buffer made by Context::make_buffer gets.
enum class Memory : uint8_t {
  /// DEVICE_LOCAL (destinations).
  DeviceLocal,
  /// The type staging::vulkan's DefaultMemory picks (choose_staging_memory_type, defaults):
  /// HOST_VISIBLE | HOST_COHERENT system memory, write-combined where the device offers it.
  Staging,
  /// HOST_VISIBLE, HOST_CACHED preferred (readback: the CPU reads it).
  Readback,
};

/// Calls of vkCreateBuffer and vkAllocateMemory made through Context::staging_device()'s table.
struct ObjectCounts {
  uint64_t buffers = 0;
  uint64_t memories = 0;
};

class Context {
 public:
  struct Options {
    /// Enable VK_LAYER_KHRONOS_validation with synchronization validation (required: creation
    /// fails without the layer); every finding is printed and counted (validation_messages()).
    bool validate = false;
    /// Part of the device name to pick (else: discrete GPUs first).
    std::string device_filter;
  };

  /// Makes everything, or returns null with `why` set (no driver, no suitable device, ...).
  static std::unique_ptr<Context> create(const Options& options, std::string& why);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  [[nodiscard]] VkDevice device() const { return device_; }
  [[nodiscard]] VkPhysicalDevice physical_device() const { return physical_; }
  [[nodiscard]] const VkPhysicalDeviceProperties& properties() const { return properties_; }
  [[nodiscard]] const VkPhysicalDeviceMemoryProperties& memory_properties() const {
    return memory_properties_;
  }
  /// "NVIDIA H200 (discrete GPU, Vulkan 1.4.312)".
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::string driver() const { return driver_; }
  [[nodiscard]] bool validation() const { return validation_; }
  [[nodiscard]] int validation_messages() const;
  /// Nanoseconds per timestamp tick.
  [[nodiscard]] double timestamp_period() const { return properties_.limits.timestampPeriod; }
  [[nodiscard]] bool host_query_reset() const { return host_query_reset_; }
  [[nodiscard]] bool bc_supported() const { return bc_; }

  /// The universal queue (always) and the transfer-only one (null when the device has none).
  [[nodiscard]] Queue& graphics() { return graphics_; }
  [[nodiscard]] Queue* transfer() {
    return transfer_.queue != VK_NULL_HANDLE ? &transfer_ : nullptr;
  }
  /// The queue families in use (for VK_SHARING_MODE_CONCURRENT).
  [[nodiscard]] const std::vector<uint32_t>& families() const { return families_; }

  /// What staging::vulkan::Ring::create needs; its dispatch counts vkCreateBuffer and
  /// vkAllocateMemory (counts()).
  [[nodiscard]] staging::vulkan::Device staging_device() const;
  [[nodiscard]] static ObjectCounts counts();

  /// The memory type choose_staging_memory_type() gives a TRANSFER_SRC buffer (none: no
  /// HOST_VISIBLE type), with or without prefer_device_local.
  [[nodiscard]] std::optional<uint32_t> staging_type(bool prefer_device_local) const;
  /// A HOST_VISIBLE | HOST_CACHED system-memory type other than staging_type(false) (write-back:
  /// the CPU's stores go through its caches, the GPU's reads snoop them); none when the device
  /// has no such type apart from the default staging one.
  [[nodiscard]] std::optional<uint32_t> cached_type() const;
  /// "HOST_VISIBLE|HOST_COHERENT" for a memory type index.
  [[nodiscard]] std::string type_flags(uint32_t index) const;

  /// A buffer of `size` bytes (concurrent across the families in use), bound to dedicated
  /// memory of kind `memory` and mapped when host-visible. Empty (buffer null) on failure.
  Buffer make_buffer(uint64_t size, VkBufferUsageFlags usage, Memory memory);
  void destroy(Buffer& buffer);
  /// A 2D optimal-tiling image with `mips` levels, SAMPLED | TRANSFER_DST | TRANSFER_SRC, in
  /// device-local memory. Empty on failure.
  Image make_image(VkFormat format, uint32_t width, uint32_t height, uint32_t mips);
  void destroy(Image& image);
  /// Whether `format` supports optimal-tiling images used as copy source and destination.
  [[nodiscard]] bool image_format_ok(VkFormat format) const;

  /// A primary command buffer from `queue`'s pool (not begun).
  VkCommandBuffer allocate_commands(const Queue& queue);
  void free_commands(const Queue& queue, VkCommandBuffer cmd);
  /// vkBeginCommandBuffer (one-time submit).
  static void begin(VkCommandBuffer cmd);
  /// Ends `cmd` and submits it to `queue`, signalling `signal` (if its semaphore is set), after
  /// waiting for `wait` (if given).
  void submit(const Queue& queue, VkCommandBuffer cmd, const VkSemaphoreSubmitInfo* signal,
              const VkSemaphoreSubmitInfo* wait = nullptr);
  /// A timeline semaphore (initial value 0), destroyed with the Context.
  VkSemaphore make_timeline();
  /// Signals `semaphore` to `value` from the host.
  void signal(VkSemaphore semaphore, uint64_t value);
  /// Records a barrier from every earlier command to every later one (all memory accesses).
  static void full_barrier(VkCommandBuffer cmd);
  /// Records `body` into a fresh command buffer between two full barriers, submits it and waits
  /// until the GPU has finished it. False on failure or after 60 s.
  bool run_once(const Queue& queue, const std::function<void(VkCommandBuffer)>& body);

  /// A timestamp query pool of `count` queries (null when `count` is 0).
  VkQueryPool make_query_pool(uint32_t count);

 private:
  Context() = default;
  bool init(const Options& options, std::string& why);
  uint32_t find_type(uint32_t bits, Memory memory) const;

  std::unique_ptr<staging::vulkan::support::TestDevice> device_owner_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  std::string driver_;
  VkDevice device_ = VK_NULL_HANDLE;
  Queue graphics_;
  Queue transfer_;
  std::vector<uint32_t> families_;
  bool validation_ = false;
  bool host_query_reset_ = false;
  bool bc_ = false;
  staging::vulkan::Dispatch dispatch_;
  std::vector<VkQueryPool> query_pools_;
  std::vector<VkSemaphore> semaphores_;
};

/// A MemoryHook on one given memory type (for HOST_CACHED staging, which DefaultMemory's
/// preference order never picks): one dedicated allocation per buffer, mapped for its life, as
/// DefaultMemory does, through the Context's counting dispatch.
class TypedMemory final : public staging::vulkan::MemoryHook {
 public:
  TypedMemory(Context& vk, uint32_t type);
  Expected<staging::vulkan::StagingMemory, AllocError> allocate(uint64_t size) override;
  Expected<void, AllocError> flush(const staging::vulkan::StagingMemory& memory, uint64_t offset,
                                   uint64_t size) override;
  void release(const staging::vulkan::StagingMemory& memory) noexcept override;

 private:
  Context& vk_;
  staging::vulkan::Dispatch dispatch_;
  uint32_t type_;
};

}  // namespace staging::bench::vk
