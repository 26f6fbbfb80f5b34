// DefaultMemory: the built-in MemoryHook of a Ring or Streamer given none (RingConfig::memory,
// StreamerConfig::memory null). Internal: an application that wants its own staging memory
// implements MemoryHook (staging/vulkan/memory.hpp).
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>

#include "staging/core/errors.hpp"
#include "staging/vulkan/dispatch.hpp"
#include "staging/vulkan/memory.hpp"

namespace staging::vulkan {

/// The built-in MemoryHook: one VkBuffer and one dedicated VkDeviceMemory per staging buffer, of
/// the type choose_staging_memory_type() picks, mapped once for the buffer's whole life.
///
/// Ownership: references the device and dispatch it was made with, which must outlive it (and
/// every buffer it made). Threading: as MemoryHook.
class DefaultMemory final : public MemoryHook {
 public:
  /// Reads the physical device's memory types and nonCoherentAtomSize once. Precondition: the
  /// dispatch's vkGetPhysicalDevice* members are set (Ring::create checks the whole table).
  DefaultMemory(VkPhysicalDevice physical_device, VkDevice device, const Dispatch& dispatch,
                bool prefer_device_local = false) noexcept;

  /// vkCreateBuffer, vkAllocateMemory (a dedicated allocation, rounded up to whole atoms when
  /// not coherent), vkBindBufferMemory, vkMapMemory. Errors: to_alloc_error() of the failing
  /// call (last_error() has the VkResult); Other when no allowed memory type is HOST_VISIBLE
  /// (last_error() VK_ERROR_FEATURE_NOT_PRESENT). A failure leaks nothing.
  Expected<StagingMemory, AllocError> allocate(uint64_t size) override;
  /// vkFlushMappedMemoryRanges of flush_range(). Errors: to_alloc_error() of its VkResult
  /// (also kept in last_error()).
  Expected<void, AllocError> flush(const StagingMemory& memory, uint64_t offset,
                                   uint64_t size) override;
  /// vkDestroyBuffer, vkUnmapMemory, vkFreeMemory; null handles are skipped.
  void release(const StagingMemory& memory) noexcept override;

  /// The VkResult of the last failed Vulkan call (VK_SUCCESS when none failed).
  [[nodiscard]] VkResult last_error() const noexcept { return last_error_; }

 private:
  VkDevice device_;
  Dispatch dispatch_;
  bool prefer_device_local_ = false;
  VkPhysicalDeviceMemoryProperties properties_{};
  uint64_t atom_ = 1;
  VkResult last_error_ = VK_SUCCESS;
};

}  // namespace staging::vulkan
