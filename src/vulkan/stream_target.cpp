// Stream targets and their barriers: see include/staging/detail/vulkan/stream_target.hpp.
#include "staging/detail/vulkan/stream_target.hpp"

#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/vulkan/format.hpp"

namespace staging::vulkan {

namespace detail {

namespace {

VkImageSubresourceRange range_of(const ImageTarget& t) noexcept {
  return {barrier_aspects(t), t.base_level, t.levels, t.base_layer, t.layers};
}

}  // namespace

bool transfers_ownership(VkSharingMode sharing, const QueueFamilies& families) noexcept {
  return sharing == VK_SHARING_MODE_EXCLUSIVE && families.stream != families.consumer;
}

VkImageAspectFlags copy_aspect(const ImageTarget& target) noexcept {
  return target.aspect != 0 ? target.aspect : default_aspect(target.format);
}

VkImageAspectFlags barrier_aspects(const ImageTarget& target) noexcept {
  if (is_depth_stencil(target.format)) {
    const VkImageAspectFlags only = default_aspect(target.format);
    // A combined depth/stencil format (default_aspect 0) is transitioned with both aspects.
    return only != 0 ? only : (VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT);
  }
  return copy_aspect(target);
}

bool copies_need_graphics(const ImageTarget& target) noexcept {
  return (copy_aspect(target) & (VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT)) != 0;
}

VkImageMemoryBarrier2 image_begin_barrier(const ImageTarget& target) noexcept {
  return VkImageMemoryBarrier2{
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
      .srcStageMask = VK_PIPELINE_STAGE_2_NONE,
      .srcAccessMask = VK_ACCESS_2_NONE,
      .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
      .dstAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
      .oldLayout = target.old_layout,
      .newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = target.image,
      .subresourceRange = range_of(target),
  };
}

VkImageMemoryBarrier2 image_end_barrier(const ImageTarget& target,
                                        const QueueFamilies& families) noexcept {
  const bool release = transfers_ownership(target.sharing, families);
  return VkImageMemoryBarrier2{
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
      .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
      .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
      // A release's second scope is ignored; a plain transition is ordered before the timeline
      // signal (whose first scope is every command of the submission).
      .dstStageMask = release ? VK_PIPELINE_STAGE_2_NONE : VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
      .dstAccessMask = VK_ACCESS_2_NONE,
      .oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
      .newLayout = target.final_layout,
      .srcQueueFamilyIndex = release ? families.stream : VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = release ? families.consumer : VK_QUEUE_FAMILY_IGNORED,
      .image = target.image,
      .subresourceRange = range_of(target),
  };
}

std::optional<VkBufferMemoryBarrier2> buffer_end_barrier(const BufferTarget& target, uint64_t size,
                                                         const QueueFamilies& families) noexcept {
  if (!transfers_ownership(target.sharing, families)) return std::nullopt;
  return VkBufferMemoryBarrier2{
      .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
      .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
      .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
      .dstStageMask = VK_PIPELINE_STAGE_2_NONE,
      .dstAccessMask = VK_ACCESS_2_NONE,
      .srcQueueFamilyIndex = families.stream,
      .dstQueueFamilyIndex = families.consumer,
      .buffer = target.buffer,
      .offset = target.offset,
      .size = size,
  };
}

std::optional<VkImageMemoryBarrier2> image_acquire_barrier(const ImageTarget& target,
                                                           const QueueFamilies& families,
                                                           VkPipelineStageFlags2 stages,
                                                           VkAccessFlags2 access) noexcept {
  if (!transfers_ownership(target.sharing, families)) return std::nullopt;
  VkImageMemoryBarrier2 b = image_end_barrier(target, families);
  b.srcStageMask = VK_PIPELINE_STAGE_2_NONE;  // an acquire's first scope is ignored
  b.srcAccessMask = VK_ACCESS_2_NONE;
  b.dstStageMask = stages;
  b.dstAccessMask = access;
  return b;
}

std::optional<VkBufferMemoryBarrier2> buffer_acquire_barrier(const BufferTarget& target,
                                                             uint64_t size,
                                                             const QueueFamilies& families,
                                                             VkPipelineStageFlags2 stages,
                                                             VkAccessFlags2 access) noexcept {
  auto b = buffer_end_barrier(target, size, families);
  if (!b) return std::nullopt;
  b->srcStageMask = VK_PIPELINE_STAGE_2_NONE;
  b->srcAccessMask = VK_ACCESS_2_NONE;
  b->dstStageMask = stages;
  b->dstAccessMask = access;
  return b;
}

Expected<BufferTarget, UploadError> buffer_target(const BufferDestination& destination,
                                                  uint64_t offset, uint64_t size) noexcept {
  if (auto checked = check_destination(destination, offset, size); !checked) {
    return unexpected(checked.error());
  }
  return BufferTarget{destination.buffer, offset, destination.sharing};
}

Expected<ImageTarget, UploadError> image_target(const ImageDestination& destination,
                                                const ImageLevels& levels) noexcept {
  const uint32_t mips = destination.mip_levels;
  const uint32_t layers = destination.array_layers;
  // The first level's whole extent, as a frame's region: the destination, format, aspect, level
  // and layers checked as a frame checks them.
  const TexelExtent first =
      mip_extent({destination.extent.width, destination.extent.height, destination.extent.depth},
                 levels.base_level < 32 ? levels.base_level : 0);
  const ImageRegion region{.aspect = levels.aspect,
                           .mip_level = levels.base_level,
                           .base_layer = levels.base_layer,
                           .layer_count = levels.layers != 0 ? levels.layers : 1,
                           .extent = {first.width, first.height, first.depth}};
  if (auto checked = check_destination(destination, region); !checked) {
    return unexpected(checked.error());
  }
  const uint32_t level_count = levels.levels != 0 ? levels.levels : mips - levels.base_level;
  const uint32_t layer_count = levels.layers != 0 ? levels.layers : layers - levels.base_layer;
  if (level_count > mips - levels.base_level) return unexpected(UploadError::NoSuchSubresource);
  if (levels.new_layout == VK_IMAGE_LAYOUT_UNDEFINED ||
      levels.new_layout == VK_IMAGE_LAYOUT_PREINITIALIZED) {
    return unexpected(UploadError::InvalidArgument);
  }
  return ImageTarget{.image = destination.image,
                     .format = destination.format,
                     .aspect = levels.aspect,
                     .extent = destination.extent,
                     .base_level = levels.base_level,
                     .levels = level_count,
                     .base_layer = levels.base_layer,
                     .layers = layer_count,
                     .old_layout = levels.old_layout,
                     .final_layout = levels.new_layout,
                     .sharing = destination.sharing};
}

}  // namespace detail

std::optional<uint32_t> transfer_only_family(const VkQueueFamilyProperties* families,
                                             uint32_t count) noexcept {
  for (uint32_t i = 0; i < count; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if ((f & VK_QUEUE_TRANSFER_BIT) != 0 && (f & VK_QUEUE_GRAPHICS_BIT) == 0 &&
        (f & VK_QUEUE_COMPUTE_BIT) == 0 && families[i].queueCount > 0) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace staging::vulkan
