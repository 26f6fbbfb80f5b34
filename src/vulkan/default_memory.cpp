#include "staging/detail/vulkan/default_memory.hpp"

#include <algorithm>

#include "staging/detail/core/align.hpp"

namespace staging::vulkan {

DefaultMemory::DefaultMemory(VkPhysicalDevice physical_device, VkDevice device,
                             const Dispatch& dispatch, bool prefer_device_local) noexcept
    : device_(device), dispatch_(dispatch), prefer_device_local_(prefer_device_local) {
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
      choose_staging_memory_type(properties_, requirements.memoryTypeBits, prefer_device_local_);
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
