// Many producer threads writing one Vulkan frame: a SharedFrame over a mapped staging buffer on
// the test device (lavapipe in CI, under validation and synchronization validation). Eight
// threads join the open frame, take uploads from one shuffled list (buffer ranges of 1 byte to
// 64 KiB, and every level and layer of RGBA8 and — where the device has them — BC1 and BC7 mip
// chains), place and write them; the owner seals the frame while they are still writing, waits
// for them to leave, records one copy per placement into one command buffer (one barrier before,
// one after) and submits it once. Every destination byte is read back and compared.
//
//   staging  [ t3:b17 | t0:img(2,1) | t5:b4 | t0:b9 ... |   free   ]   placed by 8 threads
//   commands  barrier(images -> TRANSFER_DST) · copy × placements · barrier(-> readers)
#include "staging/core/shared_frame.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <latch>
#include <random>
#include <thread>
#include <vector>

#include "gpu.hpp"
#include "staging/core/upload_pieces.hpp"

namespace staging::vulkan::test {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t KiB = 1024;

// Where a placement goes: a range of the destination buffer, or one layer of one level of an
// image (the payload the owner records each copy from).
struct Destination {
  uint32_t image = UINT32_MAX;  // index into the test's images; UINT32_MAX: the buffer
  uint32_t level = 0;
  uint32_t layer = 0;
  uint64_t offset = 0;  // buffer: the destination offset
};

// One upload: `size` bytes of `source` from `from`, to `to`.
struct Item {
  Destination to;
  const std::byte* from = nullptr;
  uint64_t size = 0;
  uint64_t alignment = 1;
};

struct Mips {
  VkFormat format = VK_FORMAT_UNDEFINED;
  ImageShape shape;
  TestImage image;
  std::vector<std::byte> bytes;  // packed, every level (layers of a level together)
};

class SharedVulkanFrameTest : public GpuTest {
 protected:
  void TearDown() override {
    if (gpu != nullptr) {
      gpu->destroy(staging);
      gpu->destroy(dst);
      for (Mips& m : images)
        gpu->destroy(m.image);
    }
    GpuTest::TearDown();
  }

  void add_image(VkFormat format, uint32_t width, uint32_t height, uint32_t mips, uint32_t layers,
                 std::mt19937_64& rng) {
    Mips m;
    m.format = format;
    m.shape = ImageShape{texel_block(format).value(), {width, height, 1}, 0, mips, 0, layers};
    m.image = gpu->make_image(format, {width, height, 1}, mips, layers);
    ASSERT_NE(m.image.image, VK_NULL_HANDLE);
    m.bytes = random_bytes(rng, static_cast<std::size_t>(image_bytes(m.shape).value()));
    images.push_back(std::move(m));
  }

  TestBuffer staging;
  TestBuffer dst;
  std::deque<Mips> images;
};

TEST_F(SharedVulkanFrameTest, EightProducersRandomUploadsOneFrameEveryByteArrives) {
  std::mt19937_64 rng(20261130);
  // The buffer uploads: sizes from 1 byte to 64 KiB (many small, some large), back to back in the
  // destination so no two overlap.
  std::vector<uint64_t> sizes;
  for (int i = 0; i < 400; ++i) {
    const int kind = static_cast<int>(rng() % 4);
    const uint64_t cap = kind == 0 ? 16 : kind == 1 ? 256 : kind == 2 ? 4 * KiB : 64 * KiB;
    sizes.push_back(1 + rng() % cap);
  }
  uint64_t buffer_bytes = 0;
  for (uint64_t s : sizes)
    buffer_bytes += s;
  const std::vector<std::byte> buffer_source =
      random_bytes(rng, static_cast<std::size_t>(buffer_bytes));

  add_image(VK_FORMAT_R8G8B8A8_UNORM, 128, 96, 8, 2, rng);
  if (gpu->bc_formats) {
    add_image(VK_FORMAT_BC1_RGBA_UNORM_BLOCK, 64, 64, 7, 3, rng);
    add_image(VK_FORMAT_BC7_UNORM_BLOCK, 100, 36, 7, 1, rng);  // edges not multiples of 4
  }
  if (HasFatalFailure()) return;

  std::vector<Item> items;
  uint64_t at = 0;
  for (uint64_t s : sizes) {
    items.push_back({Destination{UINT32_MAX, 0, 0, at}, buffer_source.data() + at, s,
                     uint64_t{1} << (rng() % 5)});
    at += s;
  }
  uint64_t image_total = 0;
  for (uint32_t i = 0; i < images.size(); ++i) {
    const Mips& m = images[i];
    for (uint32_t level = 0; level < m.shape.levels; ++level) {
      const LevelLayout l = level_layout(m.shape, level).value();
      const uint64_t layer_bytes = l.layout.packed_bytes / m.shape.layers;
      for (uint32_t layer = 0; layer < m.shape.layers; ++layer) {
        // Image copies start at a multiple of the block size (and of 4).
        items.push_back({Destination{i, level, layer, 0},
                         m.bytes.data() + l.offset + layer * layer_bytes, layer_bytes, 16});
        image_total += layer_bytes;
      }
    }
  }
  std::shuffle(items.begin(), items.end(), rng);

  constexpr uint32_t kThreads = 8;
  constexpr uint64_t kRun = 64 * KiB;
  // Room for every byte twice: alignment padding and the tails of runs a writer gave up on (a
  // placement larger than what is left of its run takes a new run) are gaps no copy reads.
  const uint64_t capacity = 2 * (buffer_bytes + image_total) + 2 * kThreads * kRun;
  staging = gpu->make_buffer(capacity, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true);
  dst = gpu->make_buffer(
      buffer_bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false);
  ASSERT_NE(staging.buffer, VK_NULL_HANDLE);
  ASSERT_NE(dst.buffer, VK_NULL_HANDLE);

  SharedFrame<Destination> frame;
  frame.open(std::span(staging.mapped, static_cast<std::size_t>(capacity)));
  std::atomic<std::size_t> next{0};
  std::atomic<int> refused{0};
  std::atomic<uint64_t> refused_free{0};
  std::latch joined(kThreads);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads place from private runs, half straight from the shared cursor.
      auto writer = frame.join({.run_bytes = t % 2 == 0 ? kRun : 0, .run_entries = 8});
      joined.count_down();
      if (!writer) return;
      for (std::size_t i = next.fetch_add(1); i < items.size(); i = next.fetch_add(1)) {
        const Item& item = items[i];
        auto placed = writer->place(item.size, item.alignment, item.to);
        if (!placed) {
          refused.fetch_add(1);
          refused_free.store(placed.error().free);
          continue;
        }
        std::memcpy(placed->bytes.data(), item.from, static_cast<std::size_t>(item.size));
      }
      writer->leave();
    });
  }
  // Seal while the producers are still writing: finish() waits for the last one to leave.
  joined.wait();
  auto placements = frame.finish(DrainMode::Wait, 60s);
  for (auto& t : threads)
    t.join();
  ASSERT_TRUE(placements.has_value()) << placements.error().writers << " writers still inside";
  ASSERT_EQ(refused.load(), 0) << "last refusal with " << refused_free.load() << " bytes free of "
                               << capacity << " (" << frame.used_bytes() << " used)";
  ASSERT_EQ(placements->size(), items.size());

  // One command buffer: images to TRANSFER_DST, one copy per placement (in offset order), then
  // everything to the readers (the readback copies).
  const Dispatch& d = gpu->dispatch;
  VkCommandBuffer cmd = gpu->begin_commands();
  std::vector<VkImageMemoryBarrier2> to_dst;
  std::vector<VkImageMemoryBarrier2> to_src;
  for (const Mips& m : images) {
    VkImageMemoryBarrier2 b{
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
        .srcStageMask = VK_PIPELINE_STAGE_2_NONE,
        .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
        .dstAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
        .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
        .newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = m.image.image,
        .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, m.shape.levels, 0, m.shape.layers}};
    to_dst.push_back(b);
    b.srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT;
    b.srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_2_TRANSFER_READ_BIT;
    b.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
    b.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    to_src.push_back(b);
  }
  const VkDependencyInfo before{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                .imageMemoryBarrierCount = static_cast<uint32_t>(to_dst.size()),
                                .pImageMemoryBarriers = to_dst.data()};
  d.vkCmdPipelineBarrier2(cmd, &before);
  uint64_t last_end = 0;
  for (const auto& p : *placements) {
    EXPECT_GE(p.offset, last_end) << "placements overlap";
    last_end = p.offset + p.size;
    if (p.payload.image == UINT32_MAX) {
      const VkBufferCopy copy{p.offset, p.payload.offset, p.size};
      d.vkCmdCopyBuffer(cmd, staging.buffer, dst.buffer, 1, &copy);
      continue;
    }
    const Mips& m = images[p.payload.image];
    const TexelExtent e = mip_extent(m.shape.extent, p.payload.level);
    const VkBufferImageCopy copy{
        .bufferOffset = p.offset,
        .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, p.payload.level, p.payload.layer, 1},
        .imageExtent = {e.width, e.height, 1}};
    d.vkCmdCopyBufferToImage(cmd, staging.buffer, m.image.image,
                             VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &copy);
  }
  const VkMemoryBarrier2 buffers{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                                 .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                 .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                 .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                 .dstAccessMask = VK_ACCESS_2_TRANSFER_READ_BIT};
  const VkDependencyInfo after{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                               .memoryBarrierCount = 1,
                               .pMemoryBarriers = &buffers,
                               .imageMemoryBarrierCount = static_cast<uint32_t>(to_src.size()),
                               .pImageMemoryBarriers = to_src.data()};
  d.vkCmdPipelineBarrier2(cmd, &after);

  // The readbacks, in the same command buffer (each image's at a multiple of 16 bytes, as image
  // copies want).
  const auto round16 = [](uint64_t n) { return (n + 15) / 16 * 16; };
  uint64_t back_bytes = round16(buffer_bytes);
  for (const Mips& m : images)
    back_bytes += round16(m.bytes.size());
  TestBuffer back = gpu->make_buffer(back_bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  ASSERT_NE(back.buffer, VK_NULL_HANDLE);
  gpu->record_readback(cmd, dst.buffer, 0, buffer_bytes, back.buffer, 0);
  uint64_t image_at = round16(buffer_bytes);
  for (const Mips& m : images) {
    std::vector<uint64_t> offsets;
    for (uint32_t level = 0; level < m.shape.levels; ++level)
      offsets.push_back(image_at + level_layout(m.shape, level).value().offset);
    gpu->record_image_readback(cmd, m.image, VK_IMAGE_ASPECT_COLOR_BIT, back.buffer, offsets);
    image_at += round16(m.bytes.size());
  }
  gpu->submit_and_wait(cmd);

  const std::byte* got = back.mapped;
  EXPECT_EQ(std::memcmp(got, buffer_source.data(), static_cast<std::size_t>(buffer_bytes)), 0)
      << "buffer uploads";
  got += round16(buffer_bytes);
  for (const Mips& m : images) {
    EXPECT_EQ(std::memcmp(got, m.bytes.data(), m.bytes.size()), 0)
        << "image of format " << static_cast<int>(m.format);
    got += round16(m.bytes.size());
  }
  gpu->destroy(back);
}

}  // namespace
}  // namespace staging::vulkan::test
