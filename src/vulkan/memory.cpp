#include "staging/vulkan/memory.hpp"

#include <algorithm>

#include "staging/detail/core/align.hpp"

namespace staging::vulkan {

std::optional<uint32_t> choose_staging_memory_type(
    const VkPhysicalDeviceMemoryProperties& properties, uint32_t allowed_types,
    const MemoryPreference& preference) noexcept {
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
    const int score = (coherent ? 4 : 0) +
                      (device_local == preference.prefer_device_local ? 2 : 0) + (cached ? 0 : 1);
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

DefaultMemory::DefaultMemory(VkPhysicalDevice physical_device, VkDevice device,
                             const Dispatch& dispatch, MemoryPreference preference) noexcept
    : device_(device), dispatch_(dispatch), preference_(preference) {
  dispatch_.vkGetPhysicalDeviceMemoryProperties(physical_device, &properties_);
  VkPhysicalDeviceProperties props{};
  dispatch_.vkGetPhysicalDeviceProperties(physical_device, &props);
  atom_ = std::max<uint64_t>(1, props.limits.nonCoherentAtomSize);
}

Expected<StagingMemory, AllocError> DefaultMemory::allocate(uint64_t size) {
  const auto fail = [this](VkResult r) -> Expected<StagingMemory, AllocError> {
    last_error_ = r;
    return unexpected(to_alloc_error(r));
  };
  StagingMemory out;
  out.size = size;
  const VkBufferCreateInfo buffer_info{
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
  };
  if (VkResult r = dispatch_.vkCreateBuffer(device_, &buffer_info, nullptr, &out.buffer);
      r != VK_SUCCESS) {
    return fail(r);
  }
  VkMemoryRequirements requirements{};
  dispatch_.vkGetBufferMemoryRequirements(device_, out.buffer, &requirements);
  const std::optional<uint32_t> type =
      choose_staging_memory_type(properties_, requirements.memoryTypeBits, preference_);
  if (!type) {
    dispatch_.vkDestroyBuffer(device_, out.buffer, nullptr);
    last_error_ = VK_ERROR_FEATURE_NOT_PRESENT;
    return unexpected(AllocError::Other);
  }
  out.memory_type = *type;
  out.coherent =
      (properties_.memoryTypes[*type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  // Non-coherent memory is flushed in whole atoms; round the allocation up so the last atom is
  // inside it (flush_range clamps to the allocation's end anyway).
  out.memory_size =
      align_up(requirements.size, out.coherent ? 1 : atom_).value_or(requirements.size);
  const VkMemoryAllocateInfo alloc_info{
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = out.memory_size,
      .memoryTypeIndex = *type,
  };
  if (VkResult r = dispatch_.vkAllocateMemory(device_, &alloc_info, nullptr, &out.memory);
      r != VK_SUCCESS) {
    dispatch_.vkDestroyBuffer(device_, out.buffer, nullptr);
    return fail(r);
  }
  VkResult r = dispatch_.vkBindBufferMemory(device_, out.buffer, out.memory, 0);
  void* mapped = nullptr;
  if (r == VK_SUCCESS) r = dispatch_.vkMapMemory(device_, out.memory, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (r != VK_SUCCESS) {
    dispatch_.vkDestroyBuffer(device_, out.buffer, nullptr);
    dispatch_.vkFreeMemory(device_, out.memory, nullptr);
    return fail(r);
  }
  out.mapped = static_cast<std::byte*>(mapped);
  return out;
}

Expected<void, AllocError> DefaultMemory::flush(const StagingMemory& memory, uint64_t offset,
                                                uint64_t size) {
  const VkMappedMemoryRange mapped_range = flush_range(memory, offset, size, atom_);
  if (mapped_range.size == 0) return {};
  if (VkResult r = dispatch_.vkFlushMappedMemoryRanges(device_, 1, &mapped_range);
      r != VK_SUCCESS) {
    last_error_ = r;
    return unexpected(to_alloc_error(r));
  }
  return {};
}

void DefaultMemory::release(const StagingMemory& memory) noexcept {
  if (memory.buffer != VK_NULL_HANDLE) dispatch_.vkDestroyBuffer(device_, memory.buffer, nullptr);
  if (memory.memory != VK_NULL_HANDLE) {
    dispatch_.vkUnmapMemory(device_, memory.memory);
    dispatch_.vkFreeMemory(device_, memory.memory, nullptr);
  }
}

}  // namespace staging::vulkan
