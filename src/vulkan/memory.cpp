#include "staging/vulkan/memory.hpp"

#include <algorithm>

#include "staging/detail/core/align.hpp"

namespace staging::vulkan {

std::optional<uint32_t> choose_staging_memory_type(
    const VkPhysicalDeviceMemoryProperties& properties, uint32_t allowed_types,
    bool prefer_device_local) noexcept {
  std::optional<uint32_t> best;
  int best_score = -1;
  const uint32_t count = std::min<uint32_t>(properties.memoryTypeCount, VK_MAX_MEMORY_TYPES);
  for (uint32_t i = 0; i < count; ++i) {
    if ((allowed_types & (1u << i)) == 0) continue;
    const VkMemoryPropertyFlags flags = properties.memoryTypes[i].propertyFlags;
    if ((flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) == 0) continue;
    if ((flags & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)) != 0)
      continue;
    const bool coherent = (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    const bool device_local = (flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
    const bool cached = (flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0;
    const int score =
        (coherent ? 4 : 0) + (device_local == prefer_device_local ? 2 : 0) + (cached ? 0 : 1);
    if (score > best_score) {  // strictly greater: ties keep the lowest index
      best = i;
      best_score = score;
    }
  }
  return best;
}

VkMappedMemoryRange flush_range(const StagingMemory& memory, uint64_t offset, uint64_t size,
                                uint64_t atom) noexcept {
  VkMappedMemoryRange range{.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                            .memory = memory.memory,
                            .offset = offset,
                            .size = 0};
  if (size == 0) return range;
  if (atom == 0) atom = 1;
  const uint64_t begin = offset - offset % atom;
  const uint64_t end = offset + size;
  const uint64_t allocation_size = memory.memory_size;
  const std::optional<uint64_t> rounded = align_up(end, atom);
  const uint64_t clamped = rounded ? std::min(*rounded, allocation_size) : allocation_size;
  range.offset = begin;
  range.size = clamped - begin;
  return range;
}

AllocError to_alloc_error(VkResult result) noexcept {
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
      return AllocError::OutOfMemory;
    case VK_ERROR_MEMORY_MAP_FAILED:
      return AllocError::MapFailed;
    case VK_ERROR_DEVICE_LOST:
      return AllocError::DeviceLost;
    default:
      return AllocError::Other;
  }
}

}  // namespace staging::vulkan
