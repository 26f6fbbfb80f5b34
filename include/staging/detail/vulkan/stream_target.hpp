// Internal: a streamed upload's destination as the streamer records it (BufferTarget,
// ImageTarget: the public BufferDestination / ImageDestination with the part written resolved and
// checked), and the barriers around its copies (see the Streamer's header for which are recorded
// where). Pure functions over plain data; safe from any thread.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <optional>

#include "staging/core/errors.hpp"
#include "staging/vulkan/frame.hpp"
#include "staging/vulkan/streamer.hpp"

namespace staging::vulkan::detail {

/// The two queue families of a stream (StreamerConfig::queue_family, consumer_family).
struct QueueFamilies {
  uint32_t stream = 0;    ///< the family of the streamer's queue
  uint32_t consumer = 0;  ///< the family of the queue that uses the uploaded resources
};

/// A buffer destination: bytes [offset, offset + the upload's size) of `buffer` (created with
/// TRANSFER_DST usage, not in use by any queue while the upload streams).
struct BufferTarget {
  VkBuffer buffer = VK_NULL_HANDLE;  ///< the destination
  uint64_t offset = 0;               ///< where the upload's first byte goes
  /// The buffer's VkBufferCreateInfo::sharingMode. EXCLUSIVE with two different families:
  /// ownership moves by a release on the streamer's queue and an acquire the consumer records
  /// (record_acquire()). CONCURRENT across both families (or one family for both): no ownership
  /// transfer; the consumer only waits on the timeline value.
  VkSharingMode sharing = VK_SHARING_MODE_EXCLUSIVE;
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
  /// The image's VkImageCreateInfo::sharingMode (see BufferTarget::sharing).
  VkSharingMode sharing = VK_SHARING_MODE_EXCLUSIVE;
};

/// True when an upload to a resource of `sharing` needs an ownership transfer between `families`
/// (Exclusive, and two different families).
[[nodiscard]] bool transfers_ownership(VkSharingMode sharing,
                                       const QueueFamilies& families) noexcept;

/// The aspects an image barrier of `target` names: both for a combined depth/stencil format,
/// else the written aspect (resolved from 0). 0 for a format texel_block() does not know.
[[nodiscard]] VkImageAspectFlags barrier_aspects(const ImageTarget& target) noexcept;

/// The aspect an image target's copies write: its aspect, resolved from 0 to the format's only
/// aspect.
[[nodiscard]] VkImageAspectFlags copy_aspect(const ImageTarget& target) noexcept;

/// True when Vulkan allows the target's copies only on a queue whose family supports GRAPHICS:
/// they write a depth or stencil aspect (vkCmdCopyBufferToImage).
[[nodiscard]] bool copies_need_graphics(const ImageTarget& target) noexcept;

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

/// The target of a buffer upload of `size` bytes at `offset` of `destination`, checked as
/// check_destination() does. Errors: NullDestination, InvalidDestination, ZeroSize, Overflow,
/// OutOfBounds.
[[nodiscard]] Expected<BufferTarget, UploadError> buffer_target(
    const BufferDestination& destination, uint64_t offset, uint64_t size) noexcept;

/// The target of an upload of `levels` of `destination` (0 counts resolved to the rest of the
/// image), checked. Errors, in this order: NullDestination, InvalidDestination (as
/// check_destination()), UnsupportedFormat, BadAspect, NoSuchSubresource (a level or layer the
/// image does not have), InvalidArgument (new_layout UNDEFINED or PREINITIALIZED).
[[nodiscard]] Expected<ImageTarget, UploadError> image_target(const ImageDestination& destination,
                                                              const ImageLevels& levels) noexcept;

}  // namespace staging::vulkan::detail
