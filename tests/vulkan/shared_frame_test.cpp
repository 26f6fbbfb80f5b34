// Many producer threads writing one Vulkan frame through the library: StagingFrame::share() on a
// ring (slot strategy and byte strategy), on the test device (lavapipe in CI, under validation and
// synchronization validation). Eight threads join the shared space, take uploads from one
// shuffled list (buffer ranges of 1 byte to 64 KiB, and every level and layer of RGBA8 and —
// where the device has them — BC1 and BC7 mip chains), place and write them through the checked
// destinations; the shared space holds only about 3/4 of them, so some are refused (DoesNotFit)
// and handed to the owner, which uploads them through the frame itself. The owner seals the space
// while the threads are still writing; finish() answers WritersActive while a writer is inside,
// then records every copy into one command buffer. Every destination byte is read back and
// compared.
//
//   shared space [ t3:b17 | t0:img(2,1) | t5:b4 | t0:b9 ... ]  full: the rest go through the frame
//   commands      barrier(images -> TRANSFER_DST) · copies · barrier(-> readers) · readbacks
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <latch>
#include <mutex>
#include <random>
#include <thread>
#include <variant>
#include <vector>

#include "gpu.hpp"
#include "staging/detail/core/upload_pieces.hpp"
#include "staging/detail/vulkan/format.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan::test {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t KiB = 1024;

// One upload: `size` bytes of `from`, to bytes [offset, ...) of the buffer (image == UINT32_MAX),
// or to one layer of one level of an image.
struct Item {
  uint32_t image = UINT32_MAX;  // index into the test's images; UINT32_MAX: the buffer
  uint32_t level = 0;
  uint32_t layer = 0;
  uint64_t offset = 0;  // buffer: the destination offset
  const std::byte* from = nullptr;
  uint64_t size = 0;
};

struct Mips {
  VkFormat format = VK_FORMAT_UNDEFINED;
  ImageShape shape;
  TestImage image;
  std::vector<std::byte> bytes;  // packed, every level (layers of a level together)
};

class SharedVulkanFrameTest : public GpuTest, public ::testing::WithParamInterface<Setup> {
 protected:
  void TearDown() override {
    if (gpu != nullptr) {
      vkDeviceWaitIdle(gpu->device);
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

  // Uploads `item` through `to` (a SharedWriter or the StagingFrame: the same calls).
  template <class To>
  Expected<void, UploadError> put(To& to, const Item& item) {
    const std::span<const std::byte> bytes(item.from, static_cast<std::size_t>(item.size));
    if (item.image == UINT32_MAX)
      return to.upload(BufferDestination{dst.buffer, dst_size}, item.offset, bytes);
    const Mips& m = images[item.image];
    const TexelExtent e = mip_extent(m.shape.extent, item.level);
    const ImageDestination target{m.image.image,
                                  m.format,
                                  {m.shape.extent.width, m.shape.extent.height, 1},
                                  m.shape.levels,
                                  m.shape.layers};
    ImageRegion region;
    region.mip_level = item.level;
    region.base_layer = item.layer;
    region.extent = {e.width, e.height, 1};
    region.new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;  // for the readback
    return to.upload(target, region, bytes);
  }

  // Runs `uploads` (64 random bytes given) on a frame with a 4 KiB shared space and a 256-byte
  // destination, then expects finish() to refuse the frame and the ring to drop it: nothing is
  // recorded.
  using Uploads = std::function<void(StagingFrame&, const SharedUploads&, const BufferDestination&,
                                     std::span<const std::byte>)>;
  void expect_conflict_at_finish(uint64_t seed, const Uploads& uploads) {
    std::mt19937_64 rng(test_seed(seed));
    const std::vector<std::byte> bytes = random_bytes(rng, 64);
    dst_size = 256;
    dst = gpu->make_buffer(dst_size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, false);
    Ring ring = Ring::create(gpu->ring_device(), with_setup({}, GetParam(), 1024 * KiB)).value();
    VkCommandBuffer cmd = gpu->begin_commands();
    {
      StagingFrame frame = ring.begin(cmd, 8 * KiB).value();
      const SharedUploads shared = frame.share(4 * KiB).value();
      uploads(frame, shared, BufferDestination{dst.buffer, dst_size}, bytes);
      EXPECT_EQ(frame.finish().error(), FinishError::SharedConflict);
    }  // dropped: nothing recorded
    EXPECT_EQ(ring.stats().frames_dropped, 1u);
    gpu->free_commands(cmd);
  }

  // The test's ring setup (GetParam()) of `byte_capacity` with both checkers on: `checker` sees
  // every staging range written (the shared space's among them), and a byte ring checks its own
  // invariants on every operation.
  RingConfig checked_setup(StagingChecker& checker, uint64_t byte_capacity) const {
    RingConfig config = with_setup({.observer = &checker}, GetParam(), byte_capacity);
    if (auto* bytes = std::get_if<ByteRingConfig>(&config.strategy)) bytes->check_invariants = true;
    return config;
  }

  TestBuffer dst;
  uint64_t dst_size = 0;
  std::deque<Mips> images;
};

TEST_P(SharedVulkanFrameTest, EightProducersRandomUploadsOneFrameEveryByteArrives) {
  std::mt19937_64 rng(test_seed(20261130));
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
    items.push_back({UINT32_MAX, 0, 0, at, buffer_source.data() + at, s});
    at += s;
  }
  uint64_t image_total = 0;
  for (uint32_t i = 0; i < images.size(); ++i) {
    const Mips& m = images[i];
    for (uint32_t level = 0; level < m.shape.levels; ++level) {
      const LevelLayout l = level_layout(m.shape, level).value();
      const uint64_t layer_bytes = l.layout.packed_bytes / m.shape.layers;
      for (uint32_t layer = 0; layer < m.shape.layers; ++layer) {
        items.push_back(
            {i, level, layer, 0, m.bytes.data() + l.offset + layer * layer_bytes, layer_bytes});
        image_total += layer_bytes;
      }
    }
  }
  std::shuffle(items.begin(), items.end(), rng);

  dst_size = buffer_bytes;
  dst = gpu->make_buffer(
      buffer_bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false);
  ASSERT_NE(dst.buffer, VK_NULL_HANDLE);

  // The ring holds every byte twice over (the shared space, and the uploads it refuses placed by
  // the owner, with alignment padding); the shared space about 3/4 of them.
  const uint64_t total = buffer_bytes + image_total;
  const uint64_t needed = 2 * total + 64 * KiB;
  const uint64_t shared_bytes = total / 4 * 3;
  StagingChecker checker(*gpu);
  Ring ring = Ring::create(gpu->ring_device(), checked_setup(checker, needed)).value();
  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin(cmd, needed).value();
  ASSERT_EQ(frame.route(), Route::Ring);
  const SharedUploads shared = frame.share(shared_bytes).value();
  EXPECT_EQ(shared.capacity(), shared_bytes);
  EXPECT_EQ(frame.share(16).error(), UploadError::AlreadyShared);

  // The owner's own writer keeps the space from draining until it leaves (finish() is refused
  // while it is inside).
  SharedWriter held = shared.join().value();

  constexpr uint32_t kThreads = 8;
  std::atomic<std::size_t> next{0};
  std::mutex refused_lock;
  std::vector<std::size_t> refused;  // indices into items
  std::atomic<int> errors{0};
  std::latch joined(kThreads);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads place from blocks of their own, half straight from the shared cursor.
      auto writer = shared.join(t % 2 == 0 ? 64 * KiB : 0);
      joined.count_down();
      if (!writer) {
        errors.fetch_add(1);
        return;
      }
      for (std::size_t i = next.fetch_add(1); i < items.size(); i = next.fetch_add(1)) {
        const auto done = put(*writer, items[i]);
        if (done) continue;
        if (done.error() == UploadError::DoesNotFit) {
          const std::lock_guard lock(refused_lock);
          refused.push_back(i);
        } else {
          errors.fetch_add(1);
        }
      }
      writer->leave();
    });
  }
  // Seal while the producers are still writing: later writers are refused by name; finish()
  // waits for none.
  joined.wait();
  shared.seal();
  EXPECT_TRUE(shared.sealed());
  EXPECT_EQ(shared.join().error(), UploadError::Sealed);
  EXPECT_EQ(frame.finish().error(), FinishError::WritersActive);
  held.leave();
  EXPECT_EQ(held.upload(dst.buffer, 0, std::span(buffer_source.data(), 1)).error(),
            UploadError::Inactive);
  ASSERT_TRUE(shared.wait_drained(60s));
  for (auto& t : threads)
    t.join();
  ASSERT_EQ(errors.load(), 0);
  EXPECT_GT(refused.size(), 0u) << "the shared space holds 3/4 of the bytes";
  // What did not fit, through the frame itself on the owner thread.
  for (std::size_t i : refused) {
    const auto done = put(frame, items[i]);
    ASSERT_TRUE(done) << to_string(done.error());
  }
  const RetirementPoint point =
      frame
          .finish({.stages = VK_PIPELINE_STAGE_2_COPY_BIT, .access = VK_ACCESS_2_TRANSFER_READ_BIT})
          .value();
  std::printf("[vulkan] %zu uploads, %zu through the shared space, %zu refused (DoesNotFit)\n",
              items.size(), items.size() - refused.size(), refused.size());

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
  const VkSemaphoreSubmitInfo signal = point.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(point.semaphore, point.value);
  ASSERT_TRUE(ring.wait_idle(60s));
  gpu->free_commands(cmd);

  const std::byte* got = back.mapped;
  EXPECT_EQ(first_difference({got, static_cast<std::size_t>(buffer_bytes)}, buffer_source), -1)
      << "buffer uploads";
  got += round16(buffer_bytes);
  for (const Mips& m : images) {
    EXPECT_EQ(first_difference({got, m.bytes.size()}, m.bytes), -1)
        << "image of format " << static_cast<int>(m.format);
    got += round16(m.bytes.size());
  }
  EXPECT_EQ(checker.violations, 0u);
  EXPECT_GE(checker.writes, 1 + refused.size()) << "the shared space and each refused upload";
  gpu->destroy(back);
}

// Shared uploads cannot be checked against each other while threads place them: finish() finds
// the overlap and refuses to record the frame, which is then dropped.
TEST_P(SharedVulkanFrameTest, OverlapWithTheFramesOwnUploadIsRefusedAtFinish) {
  std::mt19937_64 rng(test_seed(7));
  const std::vector<std::byte> bytes = random_bytes(rng, 64);
  dst_size = 256;
  dst = gpu->make_buffer(dst_size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, false);
  Ring ring = Ring::create(gpu->ring_device(), with_setup({}, GetParam(), 1024 * KiB)).value();
  VkCommandBuffer cmd = gpu->begin_commands();
  {
    StagingFrame frame = ring.begin(cmd, 4 * KiB).value();
    const SharedUploads shared = frame.share(1 * KiB).value();
    std::thread([&] {
      SharedWriter w = shared.join().value();
      EXPECT_TRUE(w.upload(BufferDestination{dst.buffer, dst_size}, 0, std::span(bytes).first(32)));
      EXPECT_EQ(
          w.upload(BufferDestination{dst.buffer, dst_size}, 250, std::span(bytes).first(8)).error(),
          UploadError::OutOfBounds);
      EXPECT_EQ(w.reserve(dst.buffer, 0, 2 * KiB).error(), UploadError::DoesNotFit);
    }).join();
    ASSERT_TRUE(frame.upload(dst.buffer, 16, std::span(bytes).first(32)));
    EXPECT_EQ(frame.finish().error(), FinishError::SharedConflict);
    EXPECT_EQ(frame.finish().error(), FinishError::SharedConflict);
  }  // dropped: nothing recorded
  EXPECT_EQ(ring.stats().frames_dropped, 1u);
  gpu->free_commands(cmd);
}

// Writers' uploads that overlap each other, and not the frame's own, are found at finish() as
// well; a third writer's uploads between them in staging order do not hide the overlap:
//   staging   [ A: dst [0, 64) [64, 128) | B: dst [160, 192) | C: dst [120, 136) ]
//   dst, sorted: A [0, 128) · C [120, 136) · B [160, 192) · the frame's own [200, 216)
//                         ^^^ overlap
TEST_P(SharedVulkanFrameTest, OverlapBetweenTwoWritersIsRefusedAtFinish) {
  expect_conflict_at_finish(9, [](StagingFrame& frame, const SharedUploads& shared,
                                  const BufferDestination& to, std::span<const std::byte> bytes) {
    SharedWriter a = shared.join(1 * KiB).value();
    SharedWriter b = shared.join(1 * KiB).value();
    SharedWriter c = shared.join(1 * KiB).value();
    ASSERT_TRUE(a.upload(to, 0, bytes.first(64)));
    ASSERT_TRUE(a.upload(to, 64, bytes.first(64)));
    ASSERT_TRUE(b.upload(to, 160, bytes.first(32)));
    ASSERT_TRUE(c.upload(to, 120, bytes.first(16)));
    a.leave();
    b.leave();
    c.leave();
    ASSERT_TRUE(frame.upload(to.buffer, 200, bytes.first(16)));
  });
}

// One writer's uploads written back to back are joined into one placement as they are placed;
// an upload of the same writer that lands inside that run's destination bytes is still an overlap
// (it is a placement of its own: it does not continue the run):
//   staging   [ A: dst [0, 64) [64, 128) [32, 48) ]   -> placements [0, 128) and [32, 48)
//   dst       [0, 128) · [32, 48)  overlap
TEST_P(SharedVulkanFrameTest, AnUploadInsideItsOwnWritersJoinedRunIsRefusedAtFinish) {
  expect_conflict_at_finish(11, [](StagingFrame&, const SharedUploads& shared,
                                   const BufferDestination& to, std::span<const std::byte> bytes) {
    SharedWriter a = shared.join(1 * KiB).value();
    ASSERT_TRUE(a.upload(to, 0, bytes.first(64)));
    ASSERT_TRUE(a.upload(to, 64, bytes.first(64)));
    ASSERT_TRUE(a.upload(to, 32, bytes.first(16)));
    a.leave();
  });
}

// Four writer threads fill four quarters of a buffer back to back, each quarter in 64-byte
// uploads (upwards or downwards), in the reverse of their order in the space; the frame's own
// uploads hold the two ends, taken before the writers' runs are merged in at finish(). Nothing
// overlaps, so the frame is recorded, and every byte arrives:
//   dst  [ own | W3's quarter | W2's | W1's | W0's | own ]
//          0   64                                  4160  4224
TEST_P(SharedVulkanFrameTest, WritersFillingABufferBackToBackInAnyOrderEveryByteArrives) {
  std::mt19937_64 rng(test_seed(10));
  constexpr uint64_t kQuarter = 1 * KiB;
  constexpr uint64_t kUpload = 64;
  dst_size = 64 + 4 * kQuarter + 64;
  const std::vector<std::byte> source = random_bytes(rng, dst_size);
  dst = gpu->make_buffer(
      dst_size, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false);
  Ring ring = Ring::create(gpu->ring_device(), with_setup({}, GetParam(), 1024 * KiB)).value();
  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin(cmd, 64 * KiB).value();
  const auto part = [&](uint64_t at, uint64_t size) { return std::span(source).subspan(at, size); };
  ASSERT_TRUE(frame.upload(dst.buffer, 0, part(0, 64)));
  ASSERT_TRUE(frame.upload(dst.buffer, dst_size - 64, part(dst_size - 64, 64)));
  const SharedUploads shared = frame.share(32 * KiB).value();
  const BufferDestination to{dst.buffer, dst_size};
  std::atomic<unsigned> failures{0};
  std::vector<std::thread> writers;
  for (unsigned k = 0; k < 4; ++k) {
    writers.emplace_back([&, k] {
      SharedWriter w = shared.join().value();
      const uint64_t base = 64 + (3 - k) * kQuarter;
      for (uint64_t i = 0; i < kQuarter / kUpload; ++i) {
        const uint64_t at = base + (k % 2 == 0 ? i : kQuarter / kUpload - 1 - i) * kUpload;
        if (!w.upload(to, at, part(at, kUpload))) failures.fetch_add(1);
      }
    });
    writers.back().join();  // in turn: W0's block first in the space
  }
  EXPECT_EQ(failures.load(), 0u);
  const RetirementPoint point =
      frame
          .finish({.stages = VK_PIPELINE_STAGE_2_COPY_BIT, .access = VK_ACCESS_2_TRANSFER_READ_BIT})
          .value();
  // Copies are batched per source and destination: the frame's two uploads and the four writers'
  // 64 placements, all from the ring's one buffer into `dst`, are one copy command (at most one
  // region per upload; fewer where the device's copy alignment lets a writer's uploads join).
  const Stats stats = ring.stats();
  EXPECT_EQ(stats.copy_commands, 1u);
  EXPECT_LE(stats.copy_regions, 2u + 4 * kQuarter / kUpload);
  TestBuffer back = gpu->make_buffer(dst_size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  ASSERT_NE(back.buffer, VK_NULL_HANDLE);
  gpu->record_readback(cmd, dst.buffer, 0, dst_size, back.buffer, 0);
  const VkSemaphoreSubmitInfo signal = point.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(point.semaphore, point.value);
  ASSERT_TRUE(ring.wait_idle(60s));
  gpu->free_commands(cmd);
  EXPECT_EQ(first_difference({back.mapped, static_cast<std::size_t>(dst_size)}, source), -1);
  gpu->destroy(back);
}

// A writer's block ends where another writer placed after it: that end is stranded (counted,
// never copied). Both writers on this thread, 1 KiB blocks, 16-byte uploads:
//   space [ A0 ....... A's block (1 KiB) ........ | B0 ... B's block ... ]
//           A leaves: its 1008 unused bytes stay (B is after them); B leaves last: its end is
//           given back to the space.
TEST_P(SharedVulkanFrameTest, TheUnusedEndOfABlockAnotherWriterPlacedAfterIsStranded) {
  std::mt19937_64 rng(test_seed(8));
  const std::vector<std::byte> bytes = random_bytes(rng, 32);
  dst_size = 256;
  dst = gpu->make_buffer(dst_size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, false);
  Ring ring = Ring::create(gpu->ring_device(), with_setup({}, GetParam(), 1024 * KiB)).value();
  VkCommandBuffer cmd = gpu->begin_commands();
  {
    StagingFrame frame = ring.begin(cmd, 64 * KiB).value();
    const SharedUploads shared = frame.share(16 * KiB).value();
    SharedWriter a = shared.join(1 * KiB).value();
    SharedWriter b = shared.join(1 * KiB).value();
    ASSERT_TRUE(a.upload(BufferDestination{dst.buffer, dst_size}, 0, std::span(bytes).first(16)));
    ASSERT_TRUE(b.upload(BufferDestination{dst.buffer, dst_size}, 16, std::span(bytes).last(16)));
    a.leave();
    b.leave();
    EXPECT_EQ(shared.stranded_bytes(), 1 * KiB - 16);
    EXPECT_EQ(shared.used_bytes(), 1 * KiB + 16);
  }  // dropped unfinished
  gpu->free_commands(cmd);
}

// When the shared space is full a writer is answered DoesNotFit at once (it never waits on the GPU
// or allocates on a job thread); the owner uploads what was refused through the frame itself,
// where the ring's own exhaustion policy answers: Wait waits for the frame in flight to retire,
// Grow grows the ring, Fallback (and a slot ring's full slot) sends the upload by the fallback
// route. The frame stays usable throughout, and every byte arrives. A byte ring of 256 KiB:
//
//   frame A (in flight)  [ A: 160 KiB ............. | B's space 64 KiB | 32 KiB free ]
//   frame B: two writers place 4 uploads of 24 KiB into the space: 2 fit, 2 are refused;
//            the owner's first refused upload fits the free 32 KiB, the second does not:
//            the policy answers it
//
// The ring's invariant checker (check_invariants) and the staging-range checker (observer) see
// every reservation, the shared space's among them.
class SharedVulkanFramePolicyTest : public SharedVulkanFrameTest {};

TEST_P(SharedVulkanFramePolicyTest, UploadsAWriterCouldNotPlaceGetTheRingsPolicyThroughTheOwner) {
  std::mt19937_64 rng(test_seed(12));
  constexpr uint64_t kUpload = 24 * KiB;
  constexpr uint64_t kFirst = 160 * KiB;
  dst_size = 4 * kUpload;
  const std::vector<std::byte> source = random_bytes(rng, dst_size);
  const std::vector<std::byte> first = random_bytes(rng, kFirst);
  dst = gpu->make_buffer(
      dst_size, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false);
  TestBuffer scratch = gpu->make_buffer(kFirst, VK_BUFFER_USAGE_TRANSFER_DST_BIT, false);
  StagingChecker checker(*gpu);
  RingConfig config = checked_setup(checker, 256 * KiB);
  if (auto* bytes = std::get_if<ByteRingConfig>(&config.strategy)) {
    bytes->wait_timeout = 60s;  // Wait: however late the other thread submits frame A
  }
  Ring ring = Ring::create(gpu->ring_device(), config).value();

  // Frame A: 160 KiB, recorded and finished, submitted only once the policy has answered (so it
  // is still in flight then) — under Wait, by another thread 50 ms into the owner's wait.
  VkCommandBuffer cmd_a = gpu->begin_commands();
  StagingFrame a = ring.begin(cmd_a, kFirst).value();
  ASSERT_TRUE(a.upload(scratch.buffer, 0, first));
  const RetirementPoint point_a = a.finish().value();
  const VkSemaphoreSubmitInfo signal_a = point_a.submit_info();
  const auto submit_a = [&] { gpu->submit(cmd_a, {}, {&signal_a, 1}); };

  // Frame B: a 64 KiB shared space (a slot ring's slot is exactly that), two writers placing
  // straight from the shared cursor (no blocks), so exactly two of the four uploads fit.
  VkCommandBuffer cmd_b = gpu->begin_commands();
  StagingFrame b = ring.begin(cmd_b, 64 * KiB).value();
  ASSERT_EQ(b.route(), Route::Ring);
  const SharedUploads shared = b.share(64 * KiB).value();
  const BufferDestination to{dst.buffer, dst_size};
  const auto part = [&](uint64_t k) { return std::span(source).subspan(k * kUpload, kUpload); };
  std::mutex refused_lock;
  std::vector<uint64_t> refused;
  std::atomic<unsigned> errors{0};
  std::vector<std::thread> writers;
  for (uint64_t t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      SharedWriter w = shared.join(0).value();
      for (uint64_t k = t; k < 4; k += 2) {
        const auto done = w.upload(to, k * kUpload, part(k));
        if (done) continue;
        if (done.error() != UploadError::DoesNotFit) errors.fetch_add(1);
        const std::lock_guard lock(refused_lock);
        refused.push_back(k);
      }
    });
  }
  for (auto& w : writers)
    w.join();
  ASSERT_EQ(errors.load(), 0u);
  ASSERT_EQ(refused.size(), 2u) << "a 64 KiB space holds two uploads of 24 KiB";
  std::thread later;
  if (GetParam() == Setup::BytesWait) {
    later = std::thread([&] {
      std::this_thread::sleep_for(50ms);
      submit_a();
    });
  }
  for (uint64_t k : refused) {
    const auto done = b.upload(to, k * kUpload, part(k));
    EXPECT_TRUE(done) << to_string(done.error());
  }
  if (later.joinable()) {
    later.join();
  } else {
    submit_a();
  }
  const Stats stats = ring.stats();
  switch (GetParam()) {
    case Setup::Slots:
      EXPECT_GT(stats.ring_full_fallbacks, 0u) << "the slot is full: the fallback route";
      break;
    case Setup::BytesWait:
      EXPECT_GT(std::get<ByteRingStats>(stats.strategy).waits, 0u) << "waited for frame A";
      break;
    case Setup::BytesGrow:
      EXPECT_GT(std::get<ByteRingStats>(stats.strategy).grows, 0u) << "the ring grew";
      break;
    case Setup::BytesFallback:
      EXPECT_GT(std::get<ByteRingStats>(stats.strategy).fallbacks + stats.ring_full_fallbacks, 0u)
          << "a fallback region or the fallback route";
      break;
  }

  const RetirementPoint point_b =
      b.finish({.stages = VK_PIPELINE_STAGE_2_COPY_BIT, .access = VK_ACCESS_2_TRANSFER_READ_BIT})
          .value();
  TestBuffer back = gpu->make_buffer(dst_size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  ASSERT_NE(back.buffer, VK_NULL_HANDLE);
  gpu->record_readback(cmd_b, dst.buffer, 0, dst_size, back.buffer, 0);
  const VkSemaphoreSubmitInfo signal_b = point_b.submit_info();
  gpu->submit(cmd_b, {}, {&signal_b, 1});
  gpu->wait(point_b.semaphore, point_b.value);
  ASSERT_TRUE(ring.wait_idle(60s));
  gpu->free_commands(cmd_a);
  gpu->free_commands(cmd_b);
  EXPECT_EQ(first_difference({back.mapped, static_cast<std::size_t>(dst_size)}, source), -1);
  EXPECT_EQ(checker.violations, 0u);
  EXPECT_GE(checker.writes, 2u);
  gpu->destroy(back);
  gpu->destroy(scratch);
}

INSTANTIATE_TEST_SUITE_P(Policies, SharedVulkanFramePolicyTest,
                         ::testing::Values(Setup::Slots, Setup::BytesWait, Setup::BytesGrow,
                                           Setup::BytesFallback),
                         [](const auto& param) { return std::string(setup_name(param.param)); });

INSTANTIATE_TEST_SUITE_P(Strategies, SharedVulkanFrameTest,
                         ::testing::Values(Setup::Slots, Setup::BytesFallback),
                         [](const auto& param) { return std::string(setup_name(param.param)); });

}  // namespace
}  // namespace staging::vulkan::test
