#include "staging/detail/vulkan/format.hpp"

#include <algorithm>
#include <array>
#include <numeric>

namespace staging::vulkan {

namespace {

// A run of consecutive VkFormat values sharing one block layout.
struct FormatRange {
  VkFormat first;
  VkFormat last;
  uint32_t bytes;
  uint32_t width = 1;
  uint32_t height = 1;
};

// Colour formats, in enum order. Depth/stencil formats are handled separately below.
constexpr std::array kColorFormats = {
    FormatRange{VK_FORMAT_R4G4_UNORM_PACK8, VK_FORMAT_R4G4_UNORM_PACK8, 1},
    FormatRange{VK_FORMAT_R4G4B4A4_UNORM_PACK16, VK_FORMAT_A1R5G5B5_UNORM_PACK16, 2},
    FormatRange{VK_FORMAT_R8_UNORM, VK_FORMAT_R8_SRGB, 1},
    FormatRange{VK_FORMAT_R8G8_UNORM, VK_FORMAT_R8G8_SRGB, 2},
    FormatRange{VK_FORMAT_R8G8B8_UNORM, VK_FORMAT_B8G8R8_SRGB, 3},
    FormatRange{VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_A2B10G10R10_SINT_PACK32, 4},
    FormatRange{VK_FORMAT_R16_UNORM, VK_FORMAT_R16_SFLOAT, 2},
    FormatRange{VK_FORMAT_R16G16_UNORM, VK_FORMAT_R16G16_SFLOAT, 4},
    FormatRange{VK_FORMAT_R16G16B16_UNORM, VK_FORMAT_R16G16B16_SFLOAT, 6},
    FormatRange{VK_FORMAT_R16G16B16A16_UNORM, VK_FORMAT_R16G16B16A16_SFLOAT, 8},
    FormatRange{VK_FORMAT_R32_UINT, VK_FORMAT_R32_SFLOAT, 4},
    FormatRange{VK_FORMAT_R32G32_UINT, VK_FORMAT_R32G32_SFLOAT, 8},
    FormatRange{VK_FORMAT_R32G32B32_UINT, VK_FORMAT_R32G32B32_SFLOAT, 12},
    FormatRange{VK_FORMAT_R32G32B32A32_UINT, VK_FORMAT_R32G32B32A32_SFLOAT, 16},
    FormatRange{VK_FORMAT_R64_UINT, VK_FORMAT_R64_SFLOAT, 8},
    FormatRange{VK_FORMAT_R64G64_UINT, VK_FORMAT_R64G64_SFLOAT, 16},
    FormatRange{VK_FORMAT_R64G64B64_UINT, VK_FORMAT_R64G64B64_SFLOAT, 24},
    FormatRange{VK_FORMAT_R64G64B64A64_UINT, VK_FORMAT_R64G64B64A64_SFLOAT, 32},
    FormatRange{VK_FORMAT_B10G11R11_UFLOAT_PACK32, VK_FORMAT_E5B9G9R9_UFLOAT_PACK32, 4},
    // Block-compressed: BC
    FormatRange{VK_FORMAT_BC1_RGB_UNORM_BLOCK, VK_FORMAT_BC1_RGBA_SRGB_BLOCK, 8, 4, 4},
    FormatRange{VK_FORMAT_BC2_UNORM_BLOCK, VK_FORMAT_BC3_SRGB_BLOCK, 16, 4, 4},
    FormatRange{VK_FORMAT_BC4_UNORM_BLOCK, VK_FORMAT_BC4_SNORM_BLOCK, 8, 4, 4},
    FormatRange{VK_FORMAT_BC5_UNORM_BLOCK, VK_FORMAT_BC7_SRGB_BLOCK, 16, 4, 4},
    // ETC2 / EAC
    FormatRange{VK_FORMAT_ETC2_R8G8B8_UNORM_BLOCK, VK_FORMAT_ETC2_R8G8B8A1_SRGB_BLOCK, 8, 4, 4},
    FormatRange{VK_FORMAT_ETC2_R8G8B8A8_UNORM_BLOCK, VK_FORMAT_ETC2_R8G8B8A8_SRGB_BLOCK, 16, 4, 4},
    FormatRange{VK_FORMAT_EAC_R11_UNORM_BLOCK, VK_FORMAT_EAC_R11_SNORM_BLOCK, 8, 4, 4},
    FormatRange{VK_FORMAT_EAC_R11G11_UNORM_BLOCK, VK_FORMAT_EAC_R11G11_SNORM_BLOCK, 16, 4, 4},
    // 4444 (Vulkan 1.3)
    FormatRange{VK_FORMAT_A4R4G4B4_UNORM_PACK16, VK_FORMAT_A4B4G4R4_UNORM_PACK16, 2},
};

// ASTC block extents, in the order of the enum (each extent has two formats, UNORM and SRGB, in
// the LDR range; the HDR SFLOAT range has one format per extent).
constexpr std::array<std::array<uint32_t, 2>, 14> kAstcExtents = {{{4, 4},
                                                                   {5, 4},
                                                                   {5, 5},
                                                                   {6, 5},
                                                                   {6, 6},
                                                                   {8, 5},
                                                                   {8, 6},
                                                                   {8, 8},
                                                                   {10, 5},
                                                                   {10, 6},
                                                                   {10, 8},
                                                                   {10, 10},
                                                                   {12, 10},
                                                                   {12, 12}}};

std::optional<TexelBlock> color_block(VkFormat format) {
  const auto v = static_cast<int64_t>(format);
  for (const FormatRange& r : kColorFormats) {
    if (v >= r.first && v <= r.last) {
      return TexelBlock{r.bytes, r.width, r.height, 1, r.bytes};
    }
  }
  if (v >= VK_FORMAT_ASTC_4x4_UNORM_BLOCK && v <= VK_FORMAT_ASTC_12x12_SRGB_BLOCK) {
    const auto& e = kAstcExtents[static_cast<std::size_t>(v - VK_FORMAT_ASTC_4x4_UNORM_BLOCK) / 2];
    return TexelBlock{16, e[0], e[1], 1, 16};
  }
  if (v >= VK_FORMAT_ASTC_4x4_SFLOAT_BLOCK && v <= VK_FORMAT_ASTC_12x12_SFLOAT_BLOCK) {
    const auto& e = kAstcExtents[static_cast<std::size_t>(v - VK_FORMAT_ASTC_4x4_SFLOAT_BLOCK)];
    return TexelBlock{16, e[0], e[1], 1, 16};
  }
  return std::nullopt;
}

// Bytes per texel of the depth and stencil aspects in a buffer (0: the aspect does not exist).
struct DepthStencil {
  uint32_t depth;
  uint32_t stencil;
};

std::optional<DepthStencil> depth_stencil(VkFormat format) {
  switch (format) {
    case VK_FORMAT_D16_UNORM:
      return DepthStencil{2, 0};
    case VK_FORMAT_X8_D24_UNORM_PACK32:
    case VK_FORMAT_D32_SFLOAT:
      return DepthStencil{4, 0};
    case VK_FORMAT_S8_UINT:
      return DepthStencil{0, 1};
    case VK_FORMAT_D16_UNORM_S8_UINT:
      return DepthStencil{2, 1};
    case VK_FORMAT_D24_UNORM_S8_UINT:  // depth copied as 4 bytes (24 bits in the low bits)
    case VK_FORMAT_D32_SFLOAT_S8_UINT:
      return DepthStencil{4, 1};
    default:
      return std::nullopt;
  }
}

}  // namespace

bool is_depth_stencil(VkFormat format) noexcept {
  return depth_stencil(format).has_value();
}

VkImageAspectFlags default_aspect(VkFormat format) noexcept {
  if (const auto ds = depth_stencil(format)) {
    if (ds->depth != 0 && ds->stencil != 0) return 0;
    return ds->depth != 0 ? VK_IMAGE_ASPECT_DEPTH_BIT : VK_IMAGE_ASPECT_STENCIL_BIT;
  }
  return color_block(format) ? VK_IMAGE_ASPECT_COLOR_BIT : 0;
}

Expected<TexelBlock, FormatError> texel_block(VkFormat format, VkImageAspectFlags aspect) noexcept {
  if (const auto ds = depth_stencil(format)) {
    if (aspect == 0) aspect = default_aspect(format);
    uint32_t bytes = 0;
    if (aspect == VK_IMAGE_ASPECT_DEPTH_BIT) bytes = ds->depth;
    if (aspect == VK_IMAGE_ASPECT_STENCIL_BIT) bytes = ds->stencil;
    if (bytes == 0) return unexpected(FormatError::BadAspect);
    return TexelBlock{bytes, 1, 1, 1, 4};
  }
  const std::optional<TexelBlock> block = color_block(format);
  if (!block) return unexpected(FormatError::Unsupported);
  if (aspect != 0 && aspect != VK_IMAGE_ASPECT_COLOR_BIT) return unexpected(FormatError::BadAspect);
  return *block;
}

uint64_t image_copy_alignment(const VkPhysicalDeviceLimits& limits) noexcept {
  return std::lcm(std::max<uint64_t>(1, limits.optimalBufferCopyOffsetAlignment), uint64_t{4});
}

}  // namespace staging::vulkan
