// Recording helpers shared by the Vulkan tests, staging-bench and the examples (internal: not
// installed): barriers written as "from this scope to that one", layout transitions, the copy
// regions of a tightly packed mip chain, and the read-back of an image into a host buffer.
//
// Every function records into a command buffer the caller has begun, through volk's
// vkCmdPipelineBarrier2 (or vkCmdPipelineBarrier2KHR on a Vulkan 1.2 device): valid once a
// TestDevice exists. Threading: as for the command buffer (one thread records into it at a time).
#pragma once

#include <volk.h>

#include <cstdint>
#include <span>
#include <vector>

namespace staging::vulkan::support {

/// One side of a barrier: pipeline stages and the memory accesses in them.
struct Scope {
  VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_NONE;
  VkAccessFlags2 access = VK_ACCESS_2_NONE;
};

/// Every write of every earlier command.
inline constexpr Scope kAnyWrite{VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                 VK_ACCESS_2_MEMORY_WRITE_BIT};
/// Every read and write of every later command.
inline constexpr Scope kAnyAccess{VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                  VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT};
/// Copy commands reading their source.
inline constexpr Scope kCopyRead{VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT};
/// Copy commands writing their destination.
inline constexpr Scope kCopyWrite{VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT};
/// The host reading mapped memory (after the submission's fence or semaphore wait).
inline constexpr Scope kHostRead{VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT};

/// Records a global memory barrier from `src` to `dst`.
void memory_barrier(VkCommandBuffer cmd, Scope src, Scope dst);
/// Records a barrier from every earlier write to every later access (kAnyWrite -> kAnyAccess).
void full_barrier(VkCommandBuffer cmd);
/// Records a barrier over bytes [offset, offset + size) of `buffer` from `src` to `dst` (no
/// queue family transfer).
void buffer_barrier(VkCommandBuffer cmd, VkBuffer buffer, uint64_t offset, uint64_t size, Scope src,
                    Scope dst);

/// A barrier that moves levels [0, mips) and layers [0, layers) of `image` from layout `from` to
/// `to`, after `src` and before `dst` (no queue family transfer). Record it with
/// pipeline_barrier().
[[nodiscard]] VkImageMemoryBarrier2 layout_barrier(
    VkImage image, uint32_t mips, VkImageLayout from, VkImageLayout to, Scope src, Scope dst,
    uint32_t layers = 1, VkImageAspectFlags aspect = VK_IMAGE_ASPECT_COLOR_BIT);
/// Records `images` (and `memory`, when given) as one dependency.
void pipeline_barrier(VkCommandBuffer cmd, std::span<const VkImageMemoryBarrier2> images,
                      const VkMemoryBarrier2* memory = nullptr);

/// The copy regions of levels [0, mips) of a `width` x `height` colour image of `texel_bytes`
/// bytes a texel (an uncompressed format), packed back to back in a buffer from `offset` on.
[[nodiscard]] std::vector<VkBufferImageCopy> packed_mip_copies(uint32_t width, uint32_t height,
                                                               uint32_t mips, uint64_t texel_bytes,
                                                               uint64_t offset = 0);

/// Records the read-back of an image that is in `layout` and was last used in `last_use`: to
/// TRANSFER_SRC_OPTIMAL (levels [0, mips), layer 0), the copies `regions` into `dst`, back to
/// `layout` for `next_use`, and the copied bytes made visible to the host.
void record_image_readback(VkCommandBuffer cmd, VkImage image, uint32_t mips, VkImageLayout layout,
                           Scope last_use, Scope next_use,
                           std::span<const VkBufferImageCopy> regions, VkBuffer dst);

}  // namespace staging::vulkan::support
