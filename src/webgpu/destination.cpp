// Checked destinations: a buffer range or a texture region against the destination the caller
// described (BufferDestination, TextureDestination), under WebGPU's copy rules. Pure functions; the
// frame calls them before writing or recording anything.
#include <bit>

#include "staging/detail/core/align.hpp"
#include "staging/detail/core/copy_layout.hpp"
#include "staging/webgpu/staging_ring.hpp"

namespace staging::webgpu {

Expected<void, UploadError> check_destination(const BufferDestination& target, uint64_t offset,
                                              uint64_t size) noexcept {
  if (target.buffer == nullptr) return unexpected(UploadError::NullDestination);
  if (target.size == 0) return unexpected(UploadError::InvalidDestination);
  if (size == 0) return unexpected(UploadError::ZeroSize);
  const std::optional<uint64_t> end = checked_add(offset, size);
  if (!end || *end > target.size) return unexpected(UploadError::OutOfBounds);
  return {};
}

namespace {

// One dimension: [origin, origin + extent) inside the mip level's size rounded up to whole
// blocks, origin and extent whole blocks.
Expected<void, UploadError> check_span(uint32_t origin, uint32_t extent, uint32_t size,
                                       uint32_t block) noexcept {
  const uint64_t physical = (uint64_t{size} + block - 1) / block * block;
  if (uint64_t{origin} + extent > physical) return unexpected(UploadError::OutOfBounds);
  if (origin % block != 0 || extent % block != 0) return unexpected(UploadError::Misaligned);
  return {};
}

}  // namespace

Expected<void, UploadError> check_destination(const TextureDestination& target,
                                              const TextureUpload& region) noexcept {
  if (target.texture == nullptr) return unexpected(UploadError::NullDestination);
  const WGPUExtent3D& s = target.size;
  const bool is_3d = target.dimension == WGPUTextureDimension_3D;
  const uint32_t mipped = s.width | s.height | (is_3d ? s.depthOrArrayLayers : 0);
  if (target.format == WGPUTextureFormat_Undefined || s.width == 0 || s.height == 0 ||
      s.depthOrArrayLayers == 0 || target.mip_level_count == 0 ||
      target.mip_level_count > static_cast<uint32_t>(std::bit_width(mipped))) {
    return unexpected(UploadError::InvalidDestination);
  }
  if (region.texture != nullptr && region.texture != target.texture)
    return unexpected(UploadError::DestinationMismatch);
  if (region.format != WGPUTextureFormat_Undefined && region.format != target.format)
    return unexpected(UploadError::FormatMismatch);
  const WGPUExtent3D& e = region.extent;
  if (e.width == 0 || e.height == 0 || e.depthOrArrayLayers == 0)
    return unexpected(UploadError::ZeroSize);
  if (region.block.bytes == 0 || region.block.width == 0 || region.block.height == 0)
    return unexpected(UploadError::UnsupportedFormat);
  if (region.mip_level >= target.mip_level_count) return unexpected(UploadError::NoSuchSubresource);
  const TexelExtent mip =
      mip_extent({s.width, s.height, is_3d ? s.depthOrArrayLayers : 1}, region.mip_level);
  const uint64_t z_end = uint64_t{region.origin.z} + e.depthOrArrayLayers;
  if (!is_3d && z_end > s.depthOrArrayLayers) return unexpected(UploadError::NoSuchSubresource);
  const Expected<void, UploadError> spans[] = {
      check_span(region.origin.x, e.width, mip.width, region.block.width),
      check_span(region.origin.y, e.height, mip.height, region.block.height),
      is_3d ? check_span(region.origin.z, e.depthOrArrayLayers, mip.depth, 1)
            : Expected<void, UploadError>{},
  };
  for (const auto& span : spans) {
    if (!span && span.error() == UploadError::OutOfBounds) return span;
  }
  for (const auto& span : spans) {
    if (!span) return span;
  }
  return {};
}

}  // namespace staging::webgpu
