// The WebGPU backend's destination checks, on the host (pure functions over the WebGPU C API's
// types; the frame's use of them runs in the browser tests).
#include <gtest/gtest.h>

#include <cstdint>

#include "staging/webgpu/staging_ring.hpp"

namespace staging::webgpu {
namespace {

template <typename Handle>
Handle fake(std::uintptr_t value) {
  return reinterpret_cast<Handle>(value);
}

TEST(WebGpuCheckDestination, BufferRangesMustLieInsideTheDescribedSize) {
  const BufferDestination target{fake<WGPUBuffer>(0x10), 1024};
  EXPECT_TRUE(check_destination(target, 768, 256));
  EXPECT_EQ(check_destination(target, 4096, 256).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, 900, 256).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, 0, 128 * 1024).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, UINT64_MAX - 3, 8).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, 0, 0).error(), UploadError::ZeroSize);
  EXPECT_EQ(check_destination(BufferDestination{nullptr, 1024}, 0, 4).error(),
            UploadError::NullDestination);
  EXPECT_EQ(check_destination(BufferDestination{target.buffer, 0}, 0, 4).error(),
            UploadError::InvalidDestination);
}

TEST(WebGpuCheckDestination, TextureRegionsAreCheckedAgainstEveryPartOfTheDescription) {
  const WGPUTexture texture = fake<WGPUTexture>(0x20);
  const TextureDestination rgba{texture, WGPUTextureFormat_RGBA8Unorm, {64, 64, 2}, 7};
  const auto region = [](uint32_t mip, WGPUOrigin3D origin, WGPUExtent3D extent) {
    TextureUpload r;
    r.mip_level = mip;
    r.origin = origin;
    r.extent = extent;
    return r;
  };
  EXPECT_TRUE(check_destination(rgba, region(0, {0, 0, 0}, {64, 64, 2})));
  EXPECT_TRUE(check_destination(rgba, region(6, {0, 0, 1}, {1, 1, 1})));
  EXPECT_EQ(check_destination(rgba, region(0, {0, 0, 0}, {128, 128, 1})).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(rgba, region(0, {60, 60, 0}, {8, 8, 1})).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(rgba, region(7, {0, 0, 0}, {1, 1, 1})).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(check_destination(rgba, region(0, {0, 0, 2}, {1, 1, 1})).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(check_destination(rgba, region(0, {0, 0, 1}, {1, 1, UINT32_MAX})).error(),
            UploadError::NoSuchSubresource);
  TextureUpload other = region(0, {0, 0, 0}, {4, 4, 1});
  other.texture = fake<WGPUTexture>(0x30);
  EXPECT_EQ(check_destination(rgba, other).error(), UploadError::DestinationMismatch);
  TextureUpload wider = region(0, {0, 0, 0}, {4, 4, 1});
  wider.format = WGPUTextureFormat_RGBA32Float;
  EXPECT_EQ(check_destination(rgba, wider).error(), UploadError::FormatMismatch);
  const TextureDestination rgba32f{texture, WGPUTextureFormat_RGBA32Float, {64, 64, 1}, 1};
  TextureUpload narrower = region(0, {0, 0, 0}, {4, 4, 1});
  narrower.format = WGPUTextureFormat_RGBA8Unorm;
  EXPECT_EQ(check_destination(rgba32f, narrower).error(), UploadError::FormatMismatch);
  EXPECT_EQ(
      check_destination(TextureDestination{texture, WGPUTextureFormat_RGBA8Unorm, {64, 64, 1}, 8},
                        region(0, {0, 0, 0}, {1, 1, 1}))
          .error(),
      UploadError::InvalidDestination);
  // A 3D texture's depth is mipped: depth 8 has 4 slices at mip 1.
  const TextureDestination volume{
      texture, WGPUTextureFormat_RGBA8Unorm, {16, 16, 8}, 5, WGPUTextureDimension_3D};
  EXPECT_TRUE(check_destination(volume, region(1, {0, 0, 0}, {8, 8, 4})));
  EXPECT_EQ(check_destination(volume, region(1, {0, 0, 0}, {8, 8, 5})).error(),
            UploadError::OutOfBounds);
}

TEST(WebGpuCheckDestination, BlockCompressedRegionsAreWholeBlocksOfThePhysicalSize) {
  const TextureDestination bc1{
      fake<WGPUTexture>(0x40), WGPUTextureFormat_BC1RGBAUnorm, {60, 60, 1}, 6};
  TextureUpload r;
  r.block = {8, 4, 4, 1};
  r.extent = {60, 60, 1};
  EXPECT_TRUE(check_destination(bc1, r));
  r.extent = {64, 60, 1};
  EXPECT_EQ(check_destination(bc1, r).error(), UploadError::OutOfBounds);
  r.mip_level = 4;  // 3x3 texels: one block, its physical size 4x4
  r.extent = {4, 4, 1};
  EXPECT_TRUE(check_destination(bc1, r));
  r.mip_level = 0;
  r.extent = {6, 6, 1};
  EXPECT_EQ(check_destination(bc1, r).error(), UploadError::Misaligned);
  r.extent = {4, 4, 1};
  r.origin = {2, 0, 0};
  EXPECT_EQ(check_destination(bc1, r).error(), UploadError::Misaligned);
  r.origin = {0, 0, 0};
  r.mip_level = 5;  // 1x1 texels, one 4x4 block
  EXPECT_TRUE(check_destination(bc1, r));
}

}  // namespace
}  // namespace staging::webgpu
