// choose_staging_memory_type() and flush_range(): the documented memory-type order, on the
// memory layouts of real devices, and flush ranges rounded out to nonCoherentAtomSize.
#include "staging/vulkan/memory.hpp"

#include <gtest/gtest.h>

#include <initializer_list>

namespace staging::vulkan {
namespace {

constexpr VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
constexpr VkMemoryPropertyFlags HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
constexpr VkMemoryPropertyFlags HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

VkPhysicalDeviceMemoryProperties types(std::initializer_list<VkMemoryPropertyFlags> flags) {
  VkPhysicalDeviceMemoryProperties p{};
  for (VkMemoryPropertyFlags f : flags)
    p.memoryTypes[p.memoryTypeCount++] = {f, 0};
  p.memoryHeapCount = 1;
  return p;
}

constexpr uint32_t kAll = ~0u;

// The H200's types (docs: device/README.md): DEVICE_LOCAL, HV|HC, HV|HC|CACHED, DL|HV|HC.
TEST(StagingMemoryType, OnTheH200SystemMemoryCoherentUncachedWins) {
  const auto p = types({DL, HV | HC, HV | HC | CA, DL | HV | HC});
  EXPECT_EQ(choose_staging_memory_type(p, kAll), 1u);
  EXPECT_EQ(choose_staging_memory_type(p, kAll, /*prefer_device_local=*/true), 3u);
  EXPECT_EQ(choose_staging_memory_type(p, 0b1100), 2u);  // the buffer only allows 2 and 3
}

// lavapipe: one type with everything.
TEST(StagingMemoryType, AUnifiedMemoryDeviceUsesItsOnlyType) {
  const auto p = types({DL | HV | HC | CA});
  EXPECT_EQ(choose_staging_memory_type(p, kAll), 0u);
}

TEST(StagingMemoryType, CoherenceOutranksLocation) {
  const auto p = types({HV, HV | CA, DL | HV | HC});
  EXPECT_EQ(choose_staging_memory_type(p, kAll), 2u);
}

TEST(StagingMemoryType, NonCoherentMemoryIsUsedWhenItIsAllThereIs) {
  const auto p = types({DL, HV | CA});
  EXPECT_EQ(choose_staging_memory_type(p, kAll), 1u);
}

TEST(StagingMemoryType, NoHostVisibleTypeMeansNone) {
  const auto p = types({DL, DL | HC});
  EXPECT_FALSE(choose_staging_memory_type(p, kAll));
  const auto q = types({DL, HV | HC});
  EXPECT_FALSE(choose_staging_memory_type(q, 0b01));  // the allowed type is not host-visible
}

TEST(StagingMemoryType, TiesKeepTheLowestIndex) {
  const auto p = types({HV | HC, HV | HC});
  EXPECT_EQ(choose_staging_memory_type(p, kAll), 0u);
}

TEST(FlushRange, RoundsOutToTheAtomAndClampsToTheAllocation) {
  StagingMemory memory;
  memory.memory = reinterpret_cast<VkDeviceMemory>(uintptr_t{0x5eed});
  memory.memory_size = 1000;
  auto r = flush_range(memory, 100, 10, 64);
  EXPECT_EQ(r.sType, VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE);
  EXPECT_EQ(r.pNext, nullptr);
  EXPECT_EQ(r.memory, memory.memory);
  EXPECT_EQ(r.offset, 64u);
  EXPECT_EQ(r.size, 64u);
  r = flush_range(memory, 0, 1, 64);
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(r.size, 64u);
  r = flush_range(memory, 64, 64, 64);  // already aligned: unchanged
  EXPECT_EQ(r.offset, 64u);
  EXPECT_EQ(r.size, 64u);
  r = flush_range(memory, 990, 10, 64);  // the end of the allocation need not be a whole atom
  EXPECT_EQ(r.offset, 960u);
  EXPECT_EQ(r.size, 40u);
  r = flush_range(memory, 63, 2, 64);  // straddles an atom boundary
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(r.size, 128u);
  r = flush_range(memory, 5, 0, 64);
  EXPECT_EQ(r.size, 0u);
  r = flush_range(memory, 5, 3, 0);  // atom 0 is treated as 1
  EXPECT_EQ(r.offset, 5u);
  EXPECT_EQ(r.size, 3u);
  memory.memory_size = UINT64_MAX;
  r = flush_range(memory, UINT64_MAX - 10, 10, 64);  // no overflow at the top
  EXPECT_EQ(r.offset + r.size, UINT64_MAX);
}

TEST(AllocError, VulkanResultsMapToAllocErrors) {
  EXPECT_EQ(to_alloc_error(VK_ERROR_OUT_OF_DEVICE_MEMORY), AllocError::OutOfMemory);
  EXPECT_EQ(to_alloc_error(VK_ERROR_OUT_OF_HOST_MEMORY), AllocError::OutOfMemory);
  EXPECT_EQ(to_alloc_error(VK_ERROR_MEMORY_MAP_FAILED), AllocError::MapFailed);
  EXPECT_EQ(to_alloc_error(VK_ERROR_DEVICE_LOST), AllocError::DeviceLost);
  EXPECT_EQ(to_alloc_error(VK_ERROR_UNKNOWN), AllocError::Other);
}

}  // namespace
}  // namespace staging::vulkan
