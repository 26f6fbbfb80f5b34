// texel_block(): the buffer layout of every format family a staging upload can target, and the
// offset alignment a buffer-to-image copy needs (texel block size; 4 for depth/stencil).
#include "staging/detail/vulkan/format.hpp"

#include <gtest/gtest.h>

#include <utility>

#include "staging/detail/core/limits.hpp"

namespace staging::vulkan {
namespace {

TexelBlock block(VkFormat f, VkImageAspectFlags aspect = 0) {
  return texel_block(f, aspect).value();
}

TEST(TexelBlock, UncompressedColourFormatsAreOneTexelBlocks) {
  EXPECT_EQ(block(VK_FORMAT_R8_UNORM).bytes, 1u);
  EXPECT_EQ(block(VK_FORMAT_R8G8_SNORM).bytes, 2u);
  EXPECT_EQ(block(VK_FORMAT_B8G8R8_SRGB).bytes, 3u);
  EXPECT_EQ(block(VK_FORMAT_R8G8B8A8_UNORM).bytes, 4u);
  EXPECT_EQ(block(VK_FORMAT_A2B10G10R10_SINT_PACK32).bytes, 4u);
  EXPECT_EQ(block(VK_FORMAT_R16G16B16_SFLOAT).bytes, 6u);
  EXPECT_EQ(block(VK_FORMAT_R16G16B16A16_SFLOAT).bytes, 8u);
  EXPECT_EQ(block(VK_FORMAT_R32G32B32_SFLOAT).bytes, 12u);
  EXPECT_EQ(block(VK_FORMAT_R32G32B32A32_UINT).bytes, 16u);
  EXPECT_EQ(block(VK_FORMAT_R64G64B64A64_SFLOAT).bytes, 32u);
  EXPECT_EQ(block(VK_FORMAT_E5B9G9R9_UFLOAT_PACK32).bytes, 4u);
  EXPECT_EQ(block(VK_FORMAT_A4B4G4R4_UNORM_PACK16).bytes, 2u);
  const TexelBlock rgba = block(VK_FORMAT_R8G8B8A8_SRGB);
  EXPECT_EQ(rgba.width, 1u);
  EXPECT_EQ(rgba.height, 1u);
  EXPECT_EQ(rgba.offset_alignment, 4u);
  EXPECT_EQ(block(VK_FORMAT_R32G32B32_SFLOAT).offset_alignment, 12u);  // not a power of two
}

TEST(TexelBlock, BlockCompressedFormatsUseTheirBlockSize) {
  for (VkFormat f :
       {VK_FORMAT_BC1_RGB_UNORM_BLOCK, VK_FORMAT_BC1_RGBA_SRGB_BLOCK, VK_FORMAT_BC4_SNORM_BLOCK,
        VK_FORMAT_ETC2_R8G8B8A1_UNORM_BLOCK, VK_FORMAT_EAC_R11_UNORM_BLOCK}) {
    const TexelBlock b = block(f);
    EXPECT_EQ(b.bytes, 8u) << f;
    EXPECT_EQ(b.width, 4u) << f;
    EXPECT_EQ(b.height, 4u) << f;
    EXPECT_EQ(b.offset_alignment, 8u) << f;
  }
  for (VkFormat f : {VK_FORMAT_BC2_UNORM_BLOCK, VK_FORMAT_BC3_SRGB_BLOCK, VK_FORMAT_BC5_UNORM_BLOCK,
                     VK_FORMAT_BC6H_SFLOAT_BLOCK, VK_FORMAT_BC7_UNORM_BLOCK,
                     VK_FORMAT_ETC2_R8G8B8A8_SRGB_BLOCK, VK_FORMAT_EAC_R11G11_SNORM_BLOCK}) {
    const TexelBlock b = block(f);
    EXPECT_EQ(b.bytes, 16u) << f;
    EXPECT_EQ(b.width, 4u) << f;
  }
}

TEST(TexelBlock, AstcBlocksHaveTheirExtents) {
  EXPECT_EQ(block(VK_FORMAT_ASTC_4x4_UNORM_BLOCK).width, 4u);
  EXPECT_EQ(block(VK_FORMAT_ASTC_4x4_SRGB_BLOCK).height, 4u);
  const TexelBlock b = block(VK_FORMAT_ASTC_10x8_SRGB_BLOCK);
  EXPECT_EQ(b.bytes, 16u);
  EXPECT_EQ(b.width, 10u);
  EXPECT_EQ(b.height, 8u);
  const TexelBlock last = block(VK_FORMAT_ASTC_12x12_UNORM_BLOCK);
  EXPECT_EQ(last.width, 12u);
  EXPECT_EQ(last.height, 12u);
  const TexelBlock hdr = block(VK_FORMAT_ASTC_6x5_SFLOAT_BLOCK);
  EXPECT_EQ(hdr.width, 6u);
  EXPECT_EQ(hdr.height, 5u);
}

// Depth/stencil: one aspect per copy, the offset a multiple of 4 whatever the texel size.
TEST(TexelBlock, DepthStencilAspectsAreCopiedSeparatelyAtFourByteOffsets) {
  EXPECT_EQ(block(VK_FORMAT_D16_UNORM).bytes, 2u);
  EXPECT_EQ(block(VK_FORMAT_D16_UNORM).offset_alignment, 4u);
  EXPECT_EQ(block(VK_FORMAT_X8_D24_UNORM_PACK32).bytes, 4u);
  EXPECT_EQ(block(VK_FORMAT_S8_UINT).bytes, 1u);
  EXPECT_EQ(block(VK_FORMAT_S8_UINT).offset_alignment, 4u);
  EXPECT_EQ(block(VK_FORMAT_D24_UNORM_S8_UINT, VK_IMAGE_ASPECT_DEPTH_BIT).bytes, 4u);
  EXPECT_EQ(block(VK_FORMAT_D24_UNORM_S8_UINT, VK_IMAGE_ASPECT_STENCIL_BIT).bytes, 1u);
  EXPECT_EQ(block(VK_FORMAT_D32_SFLOAT_S8_UINT, VK_IMAGE_ASPECT_DEPTH_BIT).bytes, 4u);
  EXPECT_EQ(texel_block(VK_FORMAT_D24_UNORM_S8_UINT).error(), FormatError::BadAspect);
  EXPECT_EQ(texel_block(VK_FORMAT_D24_UNORM_S8_UINT,
                        VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT)
                .error(),
            FormatError::BadAspect);
  EXPECT_EQ(texel_block(VK_FORMAT_D32_SFLOAT, VK_IMAGE_ASPECT_STENCIL_BIT).error(),
            FormatError::BadAspect);
  EXPECT_EQ(default_aspect(VK_FORMAT_D32_SFLOAT), VkImageAspectFlags{VK_IMAGE_ASPECT_DEPTH_BIT});
  EXPECT_EQ(default_aspect(VK_FORMAT_S8_UINT), VkImageAspectFlags{VK_IMAGE_ASPECT_STENCIL_BIT});
  EXPECT_EQ(default_aspect(VK_FORMAT_D16_UNORM_S8_UINT), 0u);
  EXPECT_TRUE(is_depth_stencil(VK_FORMAT_D16_UNORM_S8_UINT));
  EXPECT_FALSE(is_depth_stencil(VK_FORMAT_R8_UNORM));
}

TEST(TexelBlock, UnknownAndMultiPlanarFormatsAreRefused) {
  EXPECT_EQ(texel_block(VK_FORMAT_UNDEFINED).error(), FormatError::Unsupported);
  EXPECT_EQ(texel_block(VK_FORMAT_G8_B8R8_2PLANE_420_UNORM).error(), FormatError::Unsupported);
  EXPECT_EQ(texel_block(VK_FORMAT_G8B8G8R8_422_UNORM).error(), FormatError::Unsupported);
  EXPECT_EQ(texel_block(VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_ASPECT_DEPTH_BIT).error(),
            FormatError::BadAspect);
  EXPECT_EQ(default_aspect(VK_FORMAT_UNDEFINED), 0u);
}

// A copy into an image from a queue without graphics or compute needs a staging offset that is
// a multiple of 4, whatever the format's block and the device's optimal alignment say.
TEST(TexelBlock, ImageCopyOffsetsAreMultiplesOfFourAndOfTheOptimalAlignment) {
  VkPhysicalDeviceLimits limits{};
  for (const auto& [optimal, expected] : {std::pair<uint32_t, uint64_t>{0, 4},
                                          {1, 4},
                                          {2, 4},
                                          {4, 4},
                                          {64, 64},
                                          {6, 12},
                                          {256, 256}}) {
    limits.optimalBufferCopyOffsetAlignment = optimal;
    EXPECT_EQ(image_copy_alignment(limits), expected) << optimal;
  }
  // With an R8 image (1-byte blocks), offsets land on multiples of 4 on every device.
  limits.optimalBufferCopyOffsetAlignment = 1;
  CopyLimits copy;
  copy.texture_copy_alignment = image_copy_alignment(limits);
  EXPECT_EQ(texture_offset_alignment(copy, block(VK_FORMAT_R8_UNORM).bytes).value() % 4, 0u);
}

}  // namespace
}  // namespace staging::vulkan
