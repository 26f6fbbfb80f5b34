// Where a streamed upload goes, and the barriers around it: layouts, and queue family ownership
// between the streamer's queue (a transfer queue) and the queue that uses the resource.
//
// On the streamer's queue, per upload:
//   before its first piece   images: old_layout -> TRANSFER_DST_OPTIMAL (the whole range written)
//   its pieces' copies       vkCmdCopyBuffer / vkCmdCopyBufferToImage
//   after its last piece     images: TRANSFER_DST_OPTIMAL -> final_layout;
//                            Sharing::Exclusive with two families: the release of ownership to
//                            the consumer's family (buffers too)
// On the consumer's queue, after waiting on the upload's timeline value:
//   Exclusive with two families: the matching acquire (acquire_barrier() / record_acquire()),
//   into the consumer's command buffer before the first use. Otherwise nothing: the semaphore wait
//   makes the copies visible to the stages it names.
//
// The release and acquire barriers of one upload match exactly (families, layouts, ranges), as
// the specification requires; they are built from the same target by the same functions.
// Pure functions over plain data; safe from any thread.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <optional>

#include "staging/detail/core/enum_names.hpp"
#include "staging/vulkan/dispatch.hpp"

namespace staging::vulkan {

/// The names of this layer's enums that have a name table (Sharing, the Streamer's errors):
/// staging's generic to_string(), visible here beside the layer's own overloads.
using staging::to_string;

/// How a streamed resource is shared between the streamer's queue family and the consumer's.
enum class Sharing : uint8_t {
  /// VK_SHARING_MODE_EXCLUSIVE: with two different families, ownership moves by a release on the
  /// streamer's queue and an acquire the consumer records (record_acquire()).
  Exclusive,
  /// VK_SHARING_MODE_CONCURRENT across both families (or one family for both): no ownership
  /// transfer; the consumer only waits on the timeline value.
  Concurrent,
};

/// Names of Sharing's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<Sharing>) noexcept {
  return std::to_array<std::string_view>({"Exclusive", "Concurrent"});
}
static_assert(enum_names_complete<Sharing>(), "Sharing: a value has no name");

/// The two queue families of a stream.
struct QueueFamilies {
  uint32_t stream = 0;    ///< the family of the streamer's queue
  uint32_t consumer = 0;  ///< the family of the queue that uses the uploaded resources
};

/// A buffer destination: bytes [offset, offset + the upload's size) of `buffer` (created with
/// TRANSFER_DST usage, not in use by any queue while the upload streams).
struct BufferTarget {
  VkBuffer buffer = VK_NULL_HANDLE;      ///< the destination
  uint64_t offset = 0;                   ///< where the upload's first byte goes
  Sharing sharing = Sharing::Exclusive;  ///< the buffer's sharing mode
};

/// An image destination: levels [base_level, base_level + levels) and layers [base_layer,
/// base_layer + layers) of `image` (optimal tiling, TRANSFER_DST usage, not in use by any queue
/// while the upload streams), every texel of them written.
struct ImageTarget {
  VkImage image = VK_NULL_HANDLE;         ///< the destination
  VkFormat format = VK_FORMAT_UNDEFINED;  ///< its format (texel_block() must know it)
  /// The aspect written (0: the format's only aspect; depth/stencil formats with both aspects
  /// need one named, and are transitioned with both).
  VkImageAspectFlags aspect = 0;
  VkExtent3D extent{0, 0, 1};  ///< level 0's extent in texels (of the image, not of base_level)
  uint32_t base_level = 0;     ///< the first level written
  uint32_t levels = 1;         ///< levels written (>= 1)
  uint32_t base_layer = 0;     ///< the first array layer written
  uint32_t layers = 1;         ///< layers written (>= 1)
  /// The subresources' layout before the upload; UNDEFINED discards their contents (right for a
  /// texture being filled).
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  /// The layout the upload leaves them in (not UNDEFINED or PREINITIALIZED).
  VkImageLayout final_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
  Sharing sharing = Sharing::Exclusive;  ///< the image's sharing mode
};

/// True when an upload to a resource of `sharing` needs an ownership transfer between `families`
/// (Exclusive, and two different families).
[[nodiscard]] bool transfers_ownership(Sharing sharing, const QueueFamilies& families) noexcept;

/// The aspects an image barrier of `target` names: both for a combined depth/stencil format,
/// else the written aspect (resolved from 0). 0 for a format texel_block() does not know.
[[nodiscard]] VkImageAspectFlags barrier_aspects(const ImageTarget& target) noexcept;

/// The barrier recorded on the streamer's queue before an image upload's first copy: old_layout
/// to TRANSFER_DST_OPTIMAL over the upload's range, after nothing (the resource is not in use)
/// and before the copies.
[[nodiscard]] VkImageMemoryBarrier2 image_begin_barrier(const ImageTarget& target) noexcept;

/// The barrier recorded on the streamer's queue after an image upload's last copy:
/// TRANSFER_DST_OPTIMAL to final_layout, and the release to the consumer's family when
/// transfers_ownership(). Its second scope is empty: the timeline semaphore's signal orders it
/// before the consumer's wait.
[[nodiscard]] VkImageMemoryBarrier2 image_end_barrier(const ImageTarget& target,
                                                      const QueueFamilies& families) noexcept;

/// The release barrier of a buffer upload of `size` bytes, when transfers_ownership() (none
/// otherwise: the semaphore alone makes the copies visible).
[[nodiscard]] std::optional<VkBufferMemoryBarrier2> buffer_end_barrier(
    const BufferTarget& target, uint64_t size, const QueueFamilies& families) noexcept;

/// The acquire barrier the consumer records for an image upload (matching image_end_barrier()),
/// making the copies visible to `stages`/`access`; none when !transfers_ownership().
[[nodiscard]] std::optional<VkImageMemoryBarrier2> image_acquire_barrier(
    const ImageTarget& target, const QueueFamilies& families, VkPipelineStageFlags2 stages,
    VkAccessFlags2 access) noexcept;

/// The acquire barrier for a buffer upload of `size` bytes (matching buffer_end_barrier()); none
/// when !transfers_ownership().
[[nodiscard]] std::optional<VkBufferMemoryBarrier2> buffer_acquire_barrier(
    const BufferTarget& target, uint64_t size, const QueueFamilies& families,
    VkPipelineStageFlags2 stages, VkAccessFlags2 access) noexcept;

/// The family of `families` (vkGetPhysicalDeviceQueueFamilyProperties's answer, `count` of them)
/// that supports TRANSFER and neither GRAPHICS nor COMPUTE — a dedicated copy engine — or none.
/// Create the device with a queue of it and give that queue to the Streamer.
[[nodiscard]] std::optional<uint32_t> transfer_only_family(const VkQueueFamilyProperties* families,
                                                           uint32_t count) noexcept;

}  // namespace staging::vulkan
