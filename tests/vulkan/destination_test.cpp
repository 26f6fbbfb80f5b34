// Checked destinations: uploads through a described destination (BufferDestination,
// ImageDestination) that would write outside it are refused with a named UploadError before
// anything is placed or recorded — one test per kind of bad input that the unchecked entry points
// accept and the driver then performs out of bounds. Each device test runs under the validation
// layer with synchronization validation (any finding fails it): a refused upload records nothing,
// so the layer stays silent; the frame stays usable, and a good upload after the refusals arrives
// byte for byte. The pure checks are also tested without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "gpu.hpp"
#include "harness.hpp"

namespace staging::vulkan::test {
namespace {

constexpr uint64_t KiB = 1024;

template <typename Handle>
Handle fake_handle(std::uintptr_t value) {
  return reinterpret_cast<Handle>(value);
}

// ---- the checks alone -------------------------------------------------------------------------

TEST(CheckDestination, BufferRangesInsideAreAcceptedUpToTheLastByte) {
  const BufferDestination target{fake_handle<VkBuffer>(0x10), 1024};
  EXPECT_TRUE(check_destination(target, 0, 1024));
  EXPECT_TRUE(check_destination(target, 768, 256));
  EXPECT_TRUE(check_destination(target, 1023, 1));
  EXPECT_EQ(check_destination(target, 4096, 256).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, 900, 256).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, 0, 128 * KiB).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, 1024, 1).error(), UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(target, UINT64_MAX, 2).error(), UploadError::Overflow);
  EXPECT_EQ(check_destination(target, 0, 0).error(), UploadError::ZeroSize);
  EXPECT_EQ(check_destination(BufferDestination{VK_NULL_HANDLE, 1024}, 0, 1).error(),
            UploadError::NullDestination);
  EXPECT_EQ(check_destination(BufferDestination{target.buffer, 0}, 0, 1).error(),
            UploadError::InvalidDestination);
}

TEST(CheckDestination, ImageRegionsAreCheckedAgainstEveryPartOfTheDescription) {
  const VkImage image = fake_handle<VkImage>(0x20);
  const ImageDestination rgba{image, VK_FORMAT_R8G8B8A8_UNORM, {64, 64, 1}, 7, 2};
  const auto region = [](uint32_t mip, uint32_t layer, uint32_t layers, VkOffset3D offset,
                         VkExtent3D extent) {
    ImageRegion r;
    r.mip_level = mip;
    r.base_layer = layer;
    r.layer_count = layers;
    r.offset = offset;
    r.extent = extent;
    return r;
  };
  EXPECT_TRUE(check_destination(rgba, region(0, 0, 2, {0, 0, 0}, {64, 64, 1})));
  EXPECT_TRUE(check_destination(rgba, region(6, 1, 1, {0, 0, 0}, {1, 1, 1})));  // 1x1
  EXPECT_TRUE(check_destination(rgba, region(2, 0, 1, {15, 15, 0}, {1, 1, 1})));
  EXPECT_EQ(check_destination(rgba, region(0, 0, 1, {0, 0, 0}, {128, 128, 1})).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(rgba, region(0, 0, 1, {60, 60, 0}, {8, 8, 1})).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(rgba, region(2, 0, 1, {16, 0, 0}, {1, 1, 1})).error(),
            UploadError::OutOfBounds);  // mip 2 is 16 wide
  EXPECT_EQ(check_destination(rgba, region(0, 0, 1, {-1, 0, 0}, {1, 1, 1})).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(rgba, region(0, 0, 1, {0, 0, 0}, {1, 1, 2})).error(),
            UploadError::OutOfBounds);  // a 2D image is one texel deep
  EXPECT_EQ(check_destination(rgba, region(7, 0, 1, {0, 0, 0}, {1, 1, 1})).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(check_destination(rgba, region(0, 2, 1, {0, 0, 0}, {1, 1, 1})).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(check_destination(rgba, region(0, 1, 2, {0, 0, 0}, {1, 1, 1})).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(check_destination(rgba, region(0, 1, UINT32_MAX, {0, 0, 0}, {1, 1, 1})).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(check_destination(rgba, region(0, 0, 0, {0, 0, 0}, {1, 1, 1})).error(),
            UploadError::ZeroSize);

  ImageRegion other = region(0, 0, 1, {0, 0, 0}, {4, 4, 1});
  other.image = fake_handle<VkImage>(0x30);
  EXPECT_EQ(check_destination(rgba, other).error(), UploadError::DestinationMismatch);
  ImageRegion wider = region(0, 0, 1, {0, 0, 0}, {4, 4, 1});
  wider.format = VK_FORMAT_R32G32B32A32_SFLOAT;
  EXPECT_EQ(check_destination(rgba, wider).error(), UploadError::FormatMismatch);
  ImageRegion same = wider;
  same.format = VK_FORMAT_R8G8B8A8_UNORM;
  same.image = image;
  EXPECT_TRUE(check_destination(rgba, same));
  const ImageDestination rgba32f{image, VK_FORMAT_R32G32B32A32_SFLOAT, {64, 64, 1}, 1, 1};
  EXPECT_EQ(check_destination(rgba32f, same).error(), UploadError::FormatMismatch);

  // The description itself.
  EXPECT_EQ(check_destination(ImageDestination{image, VK_FORMAT_R8G8B8A8_UNORM, {64, 64, 1}, 8, 1},
                              region(0, 0, 1, {0, 0, 0}, {1, 1, 1}))
                .error(),
            UploadError::InvalidDestination);  // 64x64 has 7 levels
  EXPECT_EQ(check_destination(ImageDestination{image, VK_FORMAT_UNDEFINED, {64, 64, 1}, 1, 1},
                              region(0, 0, 1, {0, 0, 0}, {1, 1, 1}))
                .error(),
            UploadError::InvalidDestination);
  EXPECT_EQ(check_destination(ImageDestination{image, VK_FORMAT_R8G8B8A8_UNORM, {64, 0, 1}, 1, 1},
                              region(0, 0, 1, {0, 0, 0}, {1, 1, 1}))
                .error(),
            UploadError::InvalidDestination);
  EXPECT_EQ(
      check_destination(ImageDestination{VK_NULL_HANDLE, VK_FORMAT_R8G8B8A8_UNORM, {64, 64, 1}},
                        region(0, 0, 1, {0, 0, 0}, {1, 1, 1}))
          .error(),
      UploadError::NullDestination);
}

TEST(CheckDestination, BlockCompressedRegionsAreWholeBlocksExceptAtTheMipLevelsEdge) {
  const ImageDestination bc1{
      fake_handle<VkImage>(0x40), VK_FORMAT_BC1_RGBA_UNORM_BLOCK, {64, 60, 1}, 7, 1};
  const auto region = [](uint32_t mip, VkOffset3D offset, VkExtent3D extent) {
    ImageRegion r;
    r.mip_level = mip;
    r.offset = offset;
    r.extent = extent;
    return r;
  };
  EXPECT_TRUE(check_destination(bc1, region(0, {0, 0, 0}, {64, 60, 1})));
  EXPECT_TRUE(check_destination(bc1, region(0, {8, 4, 0}, {8, 8, 1})));
  EXPECT_TRUE(check_destination(bc1, region(0, {60, 56, 0}, {4, 4, 1})));
  EXPECT_TRUE(check_destination(bc1, region(2, {12, 12, 0}, {4, 3, 1})));  // 16x15: edge
  EXPECT_TRUE(check_destination(bc1, region(5, {0, 0, 0}, {2, 1, 1})));    // 2x1: whole level
  EXPECT_EQ(check_destination(bc1, region(0, {0, 0, 0}, {128, 128, 1})).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(check_destination(bc1, region(0, {0, 0, 0}, {6, 6, 1})).error(),
            UploadError::Misaligned);  // an interior edge inside a block
  EXPECT_EQ(check_destination(bc1, region(0, {2, 0, 0}, {4, 4, 1})).error(),
            UploadError::Misaligned);
  EXPECT_EQ(check_destination(bc1, region(0, {0, 0, 0}, {64, 58, 1})).error(),
            UploadError::Misaligned);  // 2 rows short of the edge
  EXPECT_EQ(check_destination(bc1, region(5, {0, 0, 0}, {1, 1, 1})).error(),
            UploadError::Misaligned);  // part of a block, not reaching the edge
}

// ---- on the device ----------------------------------------------------------------------------

// Every refused buffer upload leaves no trace; the one at the very end of the buffer arrives.
//   buffer (1 KiB): [ .................................. | 256 B accepted ]
//   refused:               900 [256 B straddles the end) ; 4096 [256 B) ; 0 [128 KiB)
TEST_F(GpuTest, BufferUploadsOutsideTheDescribedSizeAreRefusedAndRecordNothing) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  Harness h(*gpu, 1 * KiB, 31);
  const BufferDestination target{h.dst.buffer, 1 * KiB};
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 4 * KiB).value();
  const std::vector<std::byte> data = random_bytes(h.rng, 256);
  const std::vector<std::byte> large = random_bytes(h.rng, 128 * KiB);
  EXPECT_EQ(frame.upload(target, 4096, data).error(), UploadError::OutOfBounds);
  EXPECT_EQ(frame.upload(target, 900, data).error(), UploadError::OutOfBounds);
  EXPECT_EQ(frame.upload(target, 0, large).error(), UploadError::OutOfBounds);
  EXPECT_EQ(frame.reserve(target, 1000, 100).error(), UploadError::OutOfBounds);
  EXPECT_EQ(frame.upload(target, UINT64_MAX - 10, data).error(), UploadError::Overflow);
  EXPECT_EQ(frame.upload(BufferDestination{h.dst.buffer, 0}, 0, data).error(),
            UploadError::InvalidDestination);
  Stats s = ring.stats();
  EXPECT_EQ(s.staged_uploads, 0u);
  EXPECT_EQ(s.oneoff_uploads + s.update_buffer_uploads, 0u);
  EXPECT_EQ(frame.staged_bytes(), 0u);

  ASSERT_TRUE(frame.upload(target, 768, data));  // ends exactly at the buffer's end
  std::memcpy(h.model.data() + 768, data.data(), data.size());
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
  s = ring.stats();
  EXPECT_EQ(s.staged_uploads, 1u);
  EXPECT_EQ(s.copy_commands, 1u);
}

// An RGBA8 64x64 image, one mip, one layer: every region outside it, or of another format, is
// refused; the full mip level uploaded afterwards reads back byte for byte.
TEST_F(GpuTest, ImageRegionsOutsideTheDescribedImageAreRefusedAndRecordNothing) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  TestImage image = gpu->make_image(VK_FORMAT_R8G8B8A8_UNORM, {64, 64, 1}, 1, 1);
  ASSERT_NE(image.image, VK_NULL_HANDLE);
  const ImageDestination target{image.image, image.format, image.extent, 1, 1};
  std::mt19937_64 rng(test_seed(32));
  const auto region = [](VkOffset3D offset, VkExtent3D extent) {
    ImageRegion r;
    r.offset = offset;
    r.extent = extent;
    r.new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    return r;
  };
  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin(cmd, 64 * KiB).value();
  const std::vector<std::byte> big = random_bytes(rng, 128 * 128 * 4);
  EXPECT_EQ(frame.upload(target, region({0, 0, 0}, {128, 128, 1}), big).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(frame.upload(target, region({60, 60, 0}, {8, 8, 1}), random_bytes(rng, 256)).error(),
            UploadError::OutOfBounds);
  ImageRegion layer3 = region({0, 0, 0}, {4, 4, 1});
  layer3.base_layer = 3;
  EXPECT_EQ(frame.upload(target, layer3, random_bytes(rng, 64)).error(),
            UploadError::NoSuchSubresource);
  ImageRegion mip5 = region({0, 0, 0}, {2, 2, 1});
  mip5.mip_level = 5;
  EXPECT_EQ(frame.upload(target, mip5, random_bytes(rng, 16)).error(),
            UploadError::NoSuchSubresource);
  ImageRegion rgba32f = region({0, 0, 0}, {4, 4, 1});
  rgba32f.format = VK_FORMAT_R32G32B32A32_SFLOAT;
  EXPECT_EQ(frame.upload(target, rgba32f, random_bytes(rng, 4 * 4 * 16)).error(),
            UploadError::FormatMismatch);
  EXPECT_EQ(frame.reserve(target, rgba32f).error(), UploadError::FormatMismatch);
  EXPECT_EQ(ring.stats().staged_uploads, 0u);
  EXPECT_EQ(frame.staged_bytes(), 0u);

  const std::vector<std::byte> texels = random_bytes(rng, 64 * 64 * 4);
  ASSERT_TRUE(frame.upload(target, region({0, 0, 0}, {64, 64, 1}), texels));
  const RetirementPoint point = frame.finish(kAfterCopies).value();
  const VkSemaphoreSubmitInfo signal = point.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(point.semaphore, point.value);
  EXPECT_EQ(ring.stats().copy_commands, 1u);

  TestBuffer back = gpu->make_buffer(texels.size(), VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  VkCommandBuffer read = gpu->begin_commands();
  const uint64_t offsets[] = {0};
  gpu->record_image_readback(read, image, VK_IMAGE_ASPECT_COLOR_BIT, back.buffer, offsets);
  gpu->submit_and_wait(read);
  EXPECT_EQ(first_difference(texels, {back.mapped, texels.size()}), -1);
  gpu->free_commands(cmd);
  gpu->destroy(back);
  gpu->destroy(image);
}

// The other direction of a format mismatch: an RGBA8 region into an RGBA32F image would read
// four times its data past the staging slot.
TEST_F(GpuTest, ARegionOfANarrowerFormatThanTheImageIsRefused) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  TestImage image = gpu->make_image(VK_FORMAT_R32G32B32A32_SFLOAT, {16, 16, 1}, 1, 1);
  ASSERT_NE(image.image, VK_NULL_HANDLE);
  const ImageDestination target{image.image, image.format, image.extent, 1, 1};
  std::mt19937_64 rng(test_seed(33));
  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin(cmd, 16 * KiB).value();
  ImageRegion rgba8;
  rgba8.format = VK_FORMAT_R8G8B8A8_UNORM;
  rgba8.extent = {16, 16, 1};
  EXPECT_EQ(frame.upload(target, rgba8, random_bytes(rng, 16 * 16 * 4)).error(),
            UploadError::FormatMismatch);
  ImageRegion elsewhere = rgba8;
  elsewhere.format = VK_FORMAT_UNDEFINED;
  elsewhere.image = reinterpret_cast<VkImage>(std::uintptr_t{0x1234});
  EXPECT_EQ(frame.upload(target, elsewhere, random_bytes(rng, 16 * 16 * 16)).error(),
            UploadError::DestinationMismatch);
  EXPECT_EQ(ring.stats().staged_uploads, 0u);
  frame = StagingFrame();  // dropped: nothing was recorded
  gpu->free_commands(cmd);
  gpu->destroy(image);
}

// A block-compressed image: a region larger than it, and an interior region that is not whole
// blocks, are refused; a region of whole blocks ending at the edge is not.
TEST_F(GpuTest, BlockCompressedRegionsOutsideOrNotWholeBlocksAreRefused) {
  if (!gpu->bc_formats) GTEST_SKIP() << "no textureCompressionBC";
  Ring ring = Ring::create(gpu->ring_device()).value();
  TestImage image = gpu->make_image(VK_FORMAT_BC1_RGBA_UNORM_BLOCK, {64, 64, 1}, 1, 1);
  ASSERT_NE(image.image, VK_NULL_HANDLE);
  const ImageDestination target{image.image, image.format, image.extent, 1, 1};
  std::mt19937_64 rng(test_seed(34));
  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin(cmd, 16 * KiB).value();
  ImageRegion r;
  r.extent = {128, 128, 1};
  EXPECT_EQ(frame.upload(target, r, random_bytes(rng, 32 * 32 * 8)).error(),
            UploadError::OutOfBounds);
  r.extent = {6, 6, 1};
  EXPECT_EQ(frame.upload(target, r, random_bytes(rng, 2 * 2 * 8)).error(), UploadError::Misaligned);
  EXPECT_EQ(ring.stats().staged_uploads, 0u);
  r.offset = {60, 60, 0};
  r.extent = {4, 4, 1};
  r.new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  ASSERT_TRUE(frame.upload(target, r, random_bytes(rng, 8)));
  const RetirementPoint point = frame.finish(kAfterCopies).value();
  const VkSemaphoreSubmitInfo signal = point.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(point.semaphore, point.value);
  EXPECT_EQ(ring.stats().copy_commands, 1u);
  gpu->free_commands(cmd);
  gpu->destroy(image);
}

}  // namespace
}  // namespace staging::vulkan::test
