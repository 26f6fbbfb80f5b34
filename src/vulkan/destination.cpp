// Checked destinations: a buffer range or an image region against the destination the caller
// described (BufferDestination, ImageDestination). Pure functions; the frame calls them before
// placing anything, so a refused upload leaves no trace.
#include <bit>

#include "staging/detail/core/align.hpp"
#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/vulkan/format.hpp"
#include "staging/vulkan/frame.hpp"

namespace staging::vulkan {

Expected<void, UploadError> check_destination(const BufferDestination& target, uint64_t offset,
                                              uint64_t size) noexcept {
  if (target.buffer == VK_NULL_HANDLE) return unexpected(UploadError::NullDestination);
  if (target.size == 0) return unexpected(UploadError::InvalidDestination);
  if (size == 0) return unexpected(UploadError::ZeroSize);
  const std::optional<uint64_t> end = checked_add(offset, size);
  if (!end) return unexpected(UploadError::Overflow);
  if (*end > target.size) return unexpected(UploadError::OutOfBounds);
  return {};
}

namespace {

// One dimension of a region: [offset, offset + extent) inside [0, edge), block-aligned at its
// start, and at its end unless the end is the edge. Extents are > 0 (checked before).
Expected<void, UploadError> check_span(int32_t offset, uint32_t extent, uint32_t edge,
                                       uint32_t block) noexcept {
  if (offset < 0) return unexpected(UploadError::OutOfBounds);
  const uint64_t begin = static_cast<uint32_t>(offset);
  const uint64_t end = begin + extent;  // < 2^33: no overflow
  if (end > edge) return unexpected(UploadError::OutOfBounds);
  if (begin % block != 0 || (end != edge && end % block != 0))
    return unexpected(UploadError::Misaligned);
  return {};
}

}  // namespace

Expected<void, UploadError> check_destination(const ImageDestination& target,
                                              const ImageRegion& region) noexcept {
  if (target.image == VK_NULL_HANDLE) return unexpected(UploadError::NullDestination);
  const VkExtent3D& e = target.extent;
  if (target.format == VK_FORMAT_UNDEFINED || e.width == 0 || e.height == 0 || e.depth == 0 ||
      target.mip_levels == 0 || target.array_layers == 0 ||
      target.mip_levels > static_cast<uint32_t>(std::bit_width(e.width | e.height | e.depth))) {
    return unexpected(UploadError::InvalidDestination);
  }
  if (region.image != VK_NULL_HANDLE && region.image != target.image)
    return unexpected(UploadError::DestinationMismatch);
  if (region.format != VK_FORMAT_UNDEFINED && region.format != target.format)
    return unexpected(UploadError::FormatMismatch);
  const Expected<TexelBlock, FormatError> block = texel_block(target.format, region.aspect);
  if (!block) {
    return unexpected(block.error() == FormatError::Unsupported ? UploadError::UnsupportedFormat
                                                                : UploadError::BadAspect);
  }
  if (region.extent.width == 0 || region.extent.height == 0 || region.extent.depth == 0 ||
      region.layer_count == 0) {
    return unexpected(UploadError::ZeroSize);
  }
  if (region.mip_level >= target.mip_levels || region.base_layer >= target.array_layers ||
      region.layer_count > target.array_layers - region.base_layer) {
    return unexpected(UploadError::NoSuchSubresource);
  }
  const TexelExtent mip = mip_extent({e.width, e.height, e.depth}, region.mip_level);
  // Every dimension's bounds first (OutOfBounds wins over Misaligned), then alignment.
  const Expected<void, UploadError> spans[] = {
      check_span(region.offset.x, region.extent.width, mip.width, block->width),
      check_span(region.offset.y, region.extent.height, mip.height, block->height),
      check_span(region.offset.z, region.extent.depth, mip.depth, block->depth),
  };
  for (const auto& s : spans) {
    if (!s && s.error() == UploadError::OutOfBounds) return s;
  }
  for (const auto& s : spans) {
    if (!s) return s;
  }
  return {};
}

}  // namespace staging::vulkan
