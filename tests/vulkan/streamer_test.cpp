// Streamer on the test device (lavapipe in CI, under validation and synchronization validation):
// buffers and images several times the staging memory, streamed in pieces by the pump thread;
// many producer threads; pieces written in place; a held queue (bounded waits, refusals,
// recovery); the ownership-transfer and layout barriers; depth and stencil copies refused on a
// queue family without GRAPHICS, streamed on one with it. Every destination is read back after
// a submission that waits on the upload's timeline value, and compared byte for byte.
//
// The device has one queue, which the streamer shares with the tests' own submissions: both take
// `queue_mutex` around vkQueueSubmit2.
#include "staging/vulkan/streamer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu.hpp"
#include "harness.hpp"
#include "staging/detail/core/upload_pieces.hpp"
#include "staging/detail/vulkan/default_memory.hpp"
#include "staging/detail/vulkan/format.hpp"
#include "staging/detail/vulkan/stream_target.hpp"

namespace staging::vulkan::test {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

// `n` random bytes (never zero) from `seed`.
std::vector<std::byte> random_bytes(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return test::random_bytes(rng, static_cast<std::size_t>(n));
}

class StreamerTest : public GpuTest {
 protected:
  void TearDown() override {
    streamer.reset();
    if (gpu != nullptr) {
      if (hold != VK_NULL_HANDLE) {
        release();
        vkDeviceWaitIdle(gpu->device);
        gpu->destroy(hold);
      }
      for (auto& b : dst_buffers)
        gpu->destroy(b);
      for (auto& i : dst_images)
        gpu->destroy(i);
    }
    GpuTest::TearDown();
  }

  // A streamer on the test device's one queue (shared with the tests' submissions under
  // queue_mutex), with `ring_bytes` of staging memory.
  StreamerConfig config_for(uint64_t ring_bytes) {
    StreamerConfig config;
    config.queue = gpu->queue;
    config.queue_family = gpu->queue_family;
    config.consumer_family = gpu->queue_family;
    config.queue_mutex = &queue_mutex;
    config.ring_bytes = ring_bytes;
    return config;
  }

  void make(uint64_t ring_bytes, StreamSchedulerConfig schedule = {}, bool pump_thread = true) {
    StreamerConfig config = config_for(ring_bytes);
    config.schedule = schedule;
    config.pump_thread = pump_thread;
    auto made = Streamer::create(gpu->ring_device(), config);
    ASSERT_TRUE(made) << to_string(made.error());
    streamer = std::move(*made);
  }

  // A destination buffer as the streamer's uploads describe it.
  static BufferDestination dest(const TestBuffer& buffer) { return {buffer.buffer, buffer.size}; }
  TestBuffer& device_buffer(uint64_t size) {
    dst_buffers.push_back(gpu->make_buffer(
        size, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false));
    return dst_buffers.back();
  }

  // Submits `cmd` waiting on `waits`, and waits for the queue to be idle.
  void submit_and_wait(VkCommandBuffer cmd, std::span<const VkSemaphoreSubmitInfo> waits) {
    std::lock_guard lock(queue_mutex);
    gpu->submit(cmd, waits, {});
    EXPECT_EQ(vkQueueWaitIdle(gpu->queue), VK_SUCCESS);
    gpu->free_commands(cmd);
  }

  // Reads `size` bytes at `offset` of `buffer` back, after `ticket`'s value.
  // `before` records into the readback's command buffer first (an ownership acquire).
  std::vector<std::byte> read_buffer(const StreamTicket& ticket, VkBuffer buffer, uint64_t offset,
                                     uint64_t size,
                                     const std::function<void(VkCommandBuffer)>& before = {}) {
    TestBuffer back = gpu->make_buffer(size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    VkCommandBuffer cmd = gpu->begin_commands();
    if (before) before(cmd);
    gpu->record_readback(cmd, buffer, offset, size, back.buffer, 0);
    const std::optional<RetirementPoint> done = streamer->point(ticket);
    EXPECT_TRUE(done.has_value());
    const VkSemaphoreSubmitInfo wait =
        done ? done->submit_info(VK_PIPELINE_STAGE_2_COPY_BIT) : VkSemaphoreSubmitInfo{};
    submit_and_wait(cmd, done ? std::span(&wait, 1) : std::span<const VkSemaphoreSubmitInfo>{});
    std::vector<std::byte> out(back.mapped, back.mapped + size);
    gpu->destroy(back);
    return out;
  }

  // Reads every level of `image` (left in TRANSFER_SRC_OPTIMAL) back in the packed layout.
  std::vector<std::byte> read_image(const StreamTicket& ticket, const TestImage& image,
                                    const ImageShape& shape,
                                    const std::function<void(VkCommandBuffer)>& before = {}) {
    const uint64_t total = staging::image_bytes(shape).value();
    TestBuffer back = gpu->make_buffer(total, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    std::vector<uint64_t> offsets;
    for (uint32_t m = 0; m < shape.levels; ++m)
      offsets.push_back(level_layout(shape, m).value().offset);
    VkCommandBuffer cmd = gpu->begin_commands();
    if (before) before(cmd);
    gpu->record_image_readback(cmd, image, default_aspect(image.format), back.buffer, offsets);
    const std::optional<RetirementPoint> done = streamer->point(ticket);
    EXPECT_TRUE(done.has_value());
    const VkSemaphoreSubmitInfo wait =
        done ? done->submit_info(VK_PIPELINE_STAGE_2_COPY_BIT) : VkSemaphoreSubmitInfo{};
    submit_and_wait(cmd, done ? std::span(&wait, 1) : std::span<const VkSemaphoreSubmitInfo>{});
    std::vector<std::byte> out(back.mapped, back.mapped + total);
    gpu->destroy(back);
    return out;
  }

  // An image of `format` with `mips` levels and `layers` layers, its target (left in
  // TRANSFER_SRC_OPTIMAL for the readback) and its packed shape.
  struct Img {
    TestImage* image = nullptr;
    ImageDestination dest;
    ImageLevels levels;  // every level and layer, left in TRANSFER_SRC_OPTIMAL
    ImageShape shape;
  };
  Img image(VkFormat format, uint32_t width, uint32_t height, uint32_t mips, uint32_t layers) {
    dst_images.push_back(gpu->make_image(format, {width, height, 1}, mips, layers));
    Img out;
    out.image = &dst_images.back();
    out.dest = ImageDestination{.image = dst_images.back().image,
                                .format = format,
                                .extent = {width, height, 1},
                                .mip_levels = mips,
                                .array_layers = layers};
    out.levels.new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    const TexelBlock b = texel_block(format).value();
    out.shape = ImageShape{b, {width, height, 1}, 0, mips, 0, layers};
    return out;
  }

  // The held queue: a submission waiting for the host; everything behind it waits too.
  void hold_queue() {
    hold = gpu->make_timeline(0);
    const VkSemaphoreSubmitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                     .semaphore = hold,
                                     .value = 1,
                                     .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
    std::lock_guard lock(queue_mutex);
    gpu->submit(VK_NULL_HANDLE, {&wait, 1}, {});
  }
  void release() {
    if (released) return;
    released = true;
    const VkSemaphoreSignalInfo info{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = hold, .value = 1};
    ASSERT_EQ(vkSignalSemaphore(gpu->device, &info), VK_SUCCESS);
  }

  std::mutex queue_mutex;
  std::unique_ptr<Streamer> streamer;
  std::deque<TestBuffer> dst_buffers;
  std::deque<TestImage> dst_images;
  VkSemaphore hold = VK_NULL_HANDLE;
  bool released = false;
};

TEST_F(StreamerTest, ABufferFourTimesTheRingArrivesWhole) {
  make(1 * MiB);
  const auto data = random_bytes(4 * MiB + 12345, 1);
  TestBuffer& dst = device_buffer(data.size() + 64);
  auto ticket = streamer->upload(dest(dst), 64, data, StreamPriority::Now).value();
  ASSERT_EQ(streamer->wait(ticket, 60s), StreamStatus::Complete);
  EXPECT_EQ(read_buffer(ticket, dst.buffer, 64, data.size()), data);
  const auto s = streamer->stats();
  EXPECT_GE(s.stream.batches, 17u);  // batches of at most ring / 4
  EXPECT_LE(s.ring.peak_held_bytes, 1 * MiB);
  EXPECT_EQ(s.submissions, s.stream.batches);
}

TEST_F(StreamerTest, ATextureFourTimesTheRingStreamsByRowsAndLevels) {
  // RGBA8 1024 x 1024 with 11 levels: 5.3 MiB through a 1 MiB ring; level 0 alone is 4 MiB,
  // so it goes by rows.
  make(1 * MiB);
  Img img = image(VK_FORMAT_R8G8B8A8_UNORM, 1024, 1024, 11, 1);
  ASSERT_NE(img.image->image, VK_NULL_HANDLE);
  const auto texels = random_bytes(streamer->image_bytes(img.dest, img.levels).value(), 2);
  EXPECT_GE(texels.size(), 4 * MiB);
  auto ticket = streamer->upload(img.dest, img.levels, texels, StreamPriority::Prefetch).value();
  ASSERT_EQ(streamer->wait(ticket, 60s), StreamStatus::Complete);
  const auto back = read_image(ticket, *img.image, img.shape);
  for (uint32_t level = 0; level < 11; ++level) {
    const LevelLayout l = level_layout(img.shape, level).value();
    EXPECT_TRUE(std::equal(back.begin() + l.offset, back.begin() + l.offset + l.layout.packed_bytes,
                           texels.begin() + l.offset))
        << "level " << level;
  }
}

TEST_F(StreamerTest, BlockCompressedMipChainsWithLayers) {
  if (!gpu->bc_formats) GTEST_SKIP() << "no BC formats on this device";
  make(512 * KiB);
  Img bc7 = image(VK_FORMAT_BC7_UNORM_BLOCK, 1000, 600, 10, 3);  // partial blocks at the edges
  Img bc1 = image(VK_FORMAT_BC1_RGBA_UNORM_BLOCK, 512, 512, 10, 2);
  const auto t7 = random_bytes(streamer->image_bytes(bc7.dest, bc7.levels).value(), 3);
  const auto t1 = random_bytes(streamer->image_bytes(bc1.dest, bc1.levels).value(), 4);
  auto a = streamer->upload(bc7.dest, bc7.levels, t7, StreamPriority::Prefetch).value();
  auto b = streamer->upload(bc1.dest, bc1.levels, t1, StreamPriority::Now).value();
  ASSERT_EQ(streamer->wait(a, 60s), StreamStatus::Complete);
  ASSERT_EQ(streamer->wait(b, 60s), StreamStatus::Complete);
  EXPECT_EQ(read_image(a, *bc7.image, bc7.shape), t7);
  EXPECT_EQ(read_image(b, *bc1.image, bc1.shape), t1);
}

TEST_F(StreamerTest, ManyThreadsRandomUploadsEveryByteArrives) {
  // 6 producer threads × 6 uploads each: buffers of 1 byte to 3 × the ring, RGBA8 images with
  // mips and layers (and BC7 where supported), both priorities.
  make(256 * KiB);
  struct Upload {
    std::vector<std::byte> data;
    StreamTicket ticket;
    TestBuffer* buffer = nullptr;
    uint64_t offset = 0;
    std::optional<Img> img;
  };
  constexpr int kThreads = 6, kEach = 6;
  std::vector<std::vector<Upload>> uploads(kThreads);
  // Destinations are made on this thread (the test device is not thread-safe for that).
  std::mt19937_64 rng(99);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) {
      Upload u;
      if (rng() % 3 == 0) {
        const bool bc = gpu->bc_formats && rng() % 2 == 0;
        const uint32_t w = 4 + static_cast<uint32_t>(rng() % 300);
        const uint32_t h = 4 + static_cast<uint32_t>(rng() % 300);
        uint32_t mips = 1;
        while (mips < 5 && (std::max(w, h) >> mips) > 0)
          ++mips;
        u.img = image(bc ? VK_FORMAT_BC7_UNORM_BLOCK : VK_FORMAT_R8G8B8A8_UNORM, w, h, mips,
                      1 + static_cast<uint32_t>(rng() % 3));
        u.data = random_bytes(streamer->image_bytes(u.img->dest, u.img->levels).value(), rng());
      } else {
        const uint64_t size = 1 + rng() % (rng() % 3 == 0 ? 768 * KiB : 4 * KiB);
        u.offset = rng() % 256;
        u.buffer = &device_buffer(size + u.offset);
        u.data = random_bytes(size, rng());
      }
      uploads[t].push_back(std::move(u));
    }
  }
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      std::mt19937_64 r(t);
      for (Upload& u : uploads[t]) {
        const auto p = r() % 3 == 0 ? StreamPriority::Now : StreamPriority::Prefetch;
        auto ticket = u.img ? streamer->upload(u.img->dest, u.img->levels, u.data, p, 60s)
                            : streamer->upload(dest(*u.buffer), u.offset, u.data, p, 60s);
        ASSERT_TRUE(ticket) << to_string(ticket.error());
        u.ticket = *ticket;
      }
    });
  }
  for (auto& p : producers)
    p.join();
  for (auto& per_thread : uploads) {
    for (Upload& u : per_thread) {
      ASSERT_EQ(streamer->wait(u.ticket, 60s), StreamStatus::Complete);
      if (u.img) {
        EXPECT_EQ(read_image(u.ticket, *u.img->image, u.img->shape), u.data);
      } else {
        EXPECT_EQ(read_buffer(u.ticket, u.buffer->buffer, u.offset, u.data.size()), u.data);
      }
    }
  }
  EXPECT_LE(streamer->stats().ring.peak_held_bytes, 256 * KiB);
}

TEST_F(StreamerTest, PiecesWrittenInPlaceArrive) {
  make(256 * KiB);
  Img img = image(VK_FORMAT_R8G8B8A8_UNORM, 512, 300, 4, 2);
  const auto texels = random_bytes(streamer->image_bytes(img.dest, img.levels).value(), 5);
  auto ticket = streamer->write_in_place(img.dest, img.levels, StreamPriority::Now).value();
  uint64_t written = 0;
  for (;;) {
    auto piece = streamer->next_piece(ticket, 10s);
    if (!piece) {
      ASSERT_EQ(piece.error(), UploadError::Done);
      break;
    }
    // The "decoder" writes the piece's part of the image straight into staging memory.
    std::memcpy(piece->bytes.data(), texels.data() + piece->source_offset, piece->bytes.size());
    written += piece->bytes.size();
    ASSERT_TRUE(streamer->commit(ticket, *piece));
  }
  EXPECT_EQ(written, texels.size());
  ASSERT_EQ(streamer->wait(ticket, 60s), StreamStatus::Complete);
  EXPECT_EQ(read_image(ticket, *img.image, img.shape), texels);
}

TEST_F(StreamerTest, AHeldQueueBoundsWaitsRefusesAndRecovers) {
  // The queue is held; the 256 KiB of staging fill with submitted pieces that cannot retire; the
  // queue cap (512 KiB not yet cut) fills behind them. Every pump round and every producer call
  // returns within its bound (refused at once, or timed out); after the release everything
  // arrives. The pump runs on this thread: the validation layer of Debian 12 (1.3.239) reports
  // a false "VkSemaphore-state-timeout" when a timeline semaphore is signalled on the host while
  // another thread is inside vkWaitSemaphores, which a pump thread would be.
  make(256 * KiB, {.max_queued_bytes = 512 * KiB, .wait_slice = 1ms}, /*pump_thread=*/false);
  hold_queue();
  const auto a = random_bytes(2 * MiB, 6);
  TestBuffer& dst = device_buffer(a.size());
  auto first = streamer->upload(dest(dst), 0, a, StreamPriority::Prefetch).value();
  int submitted = 0;
  for (int i = 0; i < 12; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    submitted += streamer->pump_once(5ms) ? 1 : 0;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  }
  EXPECT_EQ(submitted, 4);  // batches of a quarter of the ring, then no room
  EXPECT_EQ(streamer->stats().stream.ring_full, 8u);
  // The first upload is larger than the cap: it was taken alone, and stays queued.
  const auto more = random_bytes(300 * KiB, 7);
  TestBuffer& dst2 = device_buffer(more.size());
  EXPECT_EQ(streamer->upload(dest(dst2), 0, more, StreamPriority::Prefetch).error(),
            UploadError::WouldBlock);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(streamer->upload(dest(dst2), 0, more, StreamPriority::Prefetch, 30ms).error(),
            UploadError::Timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(streamer->wait(first, 20ms), StreamStatus::Streaming);
  // In-place pieces find no room either.
  auto in_place = streamer->write_in_place(dest(dst2), 0, more.size(), StreamPriority::Now).value();
  EXPECT_EQ(streamer->next_piece(in_place, 10ms).error(), UploadError::Timeout);
  EXPECT_EQ(streamer->cancel(in_place), StreamStatus::Cancelled);
  release();
  auto second = streamer->upload(dest(dst2), 0, more, StreamPriority::Now, 60s).value();
  ASSERT_TRUE(streamer->drain(60s));
  ASSERT_EQ(streamer->status(first), StreamStatus::Complete);
  ASSERT_EQ(streamer->status(second), StreamStatus::Complete);
  EXPECT_EQ(read_buffer(first, dst.buffer, 0, a.size()), a);
  EXPECT_EQ(read_buffer(second, dst2.buffer, 0, more.size()), more);
  const auto s = streamer->stats();
  EXPECT_EQ(s.stream.queue_refusals, 1u);
  EXPECT_EQ(s.stream.queue_timeouts, 1u);
  EXPECT_GE(s.stream.ring_full, 8u);
  EXPECT_EQ(s.stream.in_place_timeouts, 1u);
}

TEST_F(StreamerTest, ConcurrentSharingNeedsNoAcquireAndLeavesTheFinalLayout) {
  // One family on this device: with Concurrent sharing (or one family) nothing is released and
  // record_acquire records nothing; the final layout is reached on the streamer's queue.
  make(256 * KiB);
  Img img = image(VK_FORMAT_R8G8B8A8_UNORM, 64, 64, 1, 1);
  img.dest.sharing = VK_SHARING_MODE_CONCURRENT;
  const auto texels = random_bytes(streamer->image_bytes(img.dest, img.levels).value(), 8);
  auto ticket = streamer->upload(img.dest, img.levels, texels, StreamPriority::Now).value();
  ASSERT_EQ(streamer->wait(ticket, 60s), StreamStatus::Complete);
  const uint64_t barriers_before = streamer->stats().barriers;
  VkCommandBuffer cmd = gpu->begin_commands();
  ASSERT_TRUE(streamer->record_acquire(cmd, img.dest, img.levels, VK_PIPELINE_STAGE_2_COPY_BIT,
                                       VK_ACCESS_2_TRANSFER_READ_BIT));
  {
    std::lock_guard lock(queue_mutex);
    gpu->submit_and_wait(cmd);
  }
  EXPECT_EQ(streamer->stats().barriers, barriers_before);
  EXPECT_EQ(read_image(ticket, *img.image, img.shape), texels);
}

TEST_F(StreamerTest, CancelledBeforeStartingNothingArrives) {
  make(256 * KiB, {}, /*pump_thread=*/false);
  const auto data = random_bytes(64 * KiB, 9);
  TestBuffer& dst = device_buffer(data.size());
  auto ticket = streamer->upload(dest(dst), 0, data, StreamPriority::Now).value();
  EXPECT_EQ(streamer->cancel(ticket), StreamStatus::Cancelled);
  EXPECT_TRUE(streamer->drain(10s));
  EXPECT_EQ(streamer->status(ticket), StreamStatus::Cancelled);
  EXPECT_FALSE(streamer->point(ticket));
  EXPECT_EQ(streamer->stats().submissions, 0u);
}

TEST_F(StreamerTest, ErrorsAreValues) {
  make(64 * KiB);
  const auto data = random_bytes(16, 10);
  EXPECT_EQ(streamer->upload(BufferDestination{}, 0, data, StreamPriority::Now).error(),
            UploadError::NullDestination);
  TestBuffer& dst = device_buffer(64);
  // The same checks as a frame's: inside the described buffer, or refused with nothing queued.
  EXPECT_EQ(streamer->upload(dest(dst), 56, data, StreamPriority::Now).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(streamer->write_in_place(dest(dst), 60, 8, StreamPriority::Now).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(streamer->upload(dest(dst), 0, {}, StreamPriority::Now).error(), UploadError::ZeroSize);
  Img img = image(VK_FORMAT_R8G8B8A8_UNORM, 16, 16, 1, 1);
  EXPECT_EQ(streamer->upload(img.dest, img.levels, data, StreamPriority::Now).error(),
            UploadError::SizeMismatch);
  ImageDestination bad = img.dest;
  bad.format = VK_FORMAT_G8_B8R8_2PLANE_420_UNORM;
  EXPECT_EQ(streamer->upload(bad, img.levels, data, StreamPriority::Now).error(),
            UploadError::UnsupportedFormat);
  EXPECT_EQ(streamer->upload(img.dest, {.base_level = 1}, data, StreamPriority::Now).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(streamer->upload(img.dest, {.levels = 2}, data, StreamPriority::Now).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(streamer->upload(img.dest, {.base_layer = 1}, data, StreamPriority::Now).error(),
            UploadError::NoSuchSubresource);
  EXPECT_EQ(
      streamer
          ->upload(img.dest, {.new_layout = VK_IMAGE_LAYOUT_UNDEFINED}, data, StreamPriority::Now)
          .error(),
      UploadError::InvalidArgument);
  EXPECT_EQ(streamer->image_bytes(img.dest).value(), 16u * 16 * 4);
  ImageDestination wide = img.dest;
  wide.extent = {32768, 1, 1};  // one row of 128 KiB: more than the 64 KiB ring
  const auto row = random_bytes(128 * KiB, 11);
  EXPECT_EQ(streamer->upload(wide, img.levels, row, StreamPriority::Now).error(),
            UploadError::TooLarge);

  // One ring, one size: the scheduler's ring_bytes may repeat StreamerConfig's, never differ.
  StreamerConfig config = config_for(64 * KiB);
  config.schedule.ring_bytes = 128 * KiB;
  EXPECT_EQ(Streamer::create(gpu->ring_device(), config).error(), CreateError::InvalidConfig);
  config.schedule.ring_bytes = 64 * KiB;
  EXPECT_TRUE(Streamer::create(gpu->ring_device(), config));
}

// DefaultMemory that reports its memory as not coherent (so every submission flushes it) and
// fails the next `fail` flushes with OutOfMemory.
class FlakyFlushMemory final : public MemoryHook {
 public:
  explicit FlakyFlushMemory(Gpu& gpu) : real_(gpu.physical_device, gpu.device, gpu.dispatch) {}
  Expected<StagingMemory, AllocError> allocate(uint64_t size) override {
    auto made = real_.allocate(size);
    if (made) made->coherent = false;
    return made;
  }
  Expected<void, AllocError> flush(const StagingMemory& m, uint64_t offset,
                                   uint64_t size) override {
    ++flushes;
    if (fail > 0) {
      --fail;
      return unexpected(AllocError::OutOfMemory);
    }
    return real_.flush(m, offset, size);
  }
  void release(const StagingMemory& m) noexcept override { real_.release(m); }
  int fail = 0;
  int flushes = 0;

 private:
  DefaultMemory real_;
};

TEST_F(StreamerTest, AFailedFlushFailsItsUploadBeforeSubmittingAndTheNextOneArrives) {
  FlakyFlushMemory memory(*gpu);
  memory.fail = 1;
  StreamerConfig config = config_for(256 * KiB);
  config.pump_thread = false;
  config.memory = &memory;
  streamer = std::move(Streamer::create(gpu->ring_device(), config).value());
  const auto lost = random_bytes(32 * KiB, 12), kept = random_bytes(32 * KiB, 13);
  TestBuffer& dst = device_buffer(lost.size());
  auto a = streamer->upload(dest(dst), 0, lost, StreamPriority::Now).value();
  (void)streamer->drain(10s);
  EXPECT_EQ(streamer->wait(a, 10s), StreamStatus::Failed);
  EXPECT_EQ(streamer->stats().submissions, 0u);  // nothing read the unflushed bytes
  auto b = streamer->upload(dest(dst), 0, kept, StreamPriority::Now).value();
  EXPECT_TRUE(streamer->drain(10s));
  ASSERT_EQ(streamer->wait(b, 10s), StreamStatus::Complete);
  EXPECT_EQ(read_buffer(b, dst.buffer, 0, kept.size()), kept);
  EXPECT_EQ(memory.flushes, 2);
  EXPECT_EQ(streamer->stats().stream.failed, 1u);
  streamer.reset();  // before the hook it releases its staging memory through
}

// A MemoryHook of the application's that keeps every staging buffer made through it under one
// budget: given to a Ring and a Streamer, it caps what the two hold together. Safe from any thread
// (the ring's thread and the streamer's threads both call it).
class BudgetMemory final : public MemoryHook {
 public:
  BudgetMemory(Gpu& gpu, uint64_t budget)
      : real_(gpu.physical_device, gpu.device, gpu.dispatch), budget_(budget) {}
  Expected<StagingMemory, AllocError> allocate(uint64_t size) override {
    std::lock_guard lock(mutex_);
    if (size > budget_ - held_) return unexpected(AllocError::OutOfMemory);
    auto made = real_.allocate(size);
    if (made) {
      held_ += size;
      peak_ = std::max(peak_, held_);
    }
    return made;
  }
  Expected<void, AllocError> flush(const StagingMemory& m, uint64_t offset,
                                   uint64_t size) override {
    std::lock_guard lock(mutex_);
    return real_.flush(m, offset, size);
  }
  void release(const StagingMemory& m) noexcept override {
    std::lock_guard lock(mutex_);
    held_ -= m.size;
    real_.release(m);
  }
  uint64_t held() const {
    std::lock_guard lock(mutex_);
    return held_;
  }
  uint64_t peak() const {
    std::lock_guard lock(mutex_);
    return peak_;
  }

 private:
  mutable std::mutex mutex_;
  DefaultMemory real_;
  uint64_t budget_, held_ = 0, peak_ = 0;
};

// A Ring and a Streamer under one budget (docs/design.md, "which to use when"): each keeps its own
// ring, both draw their staging buffers from one hook, which refuses what would go over it. While
// the streamer streams a buffer eight times its ring from its pump thread, the ring's frames
// upload on the test's thread through the same queue; every byte of both arrives, and together
// they never hold more than the budget.
//
//   budget 512 KiB: [ the Ring's byte ring, 256 KiB ][ the Streamer's ring, 256 KiB ]  full
//   a second Streamer: refused at create (AllocationFailed), nothing made
TEST_F(StreamerTest, ARingAndAStreamerShareOneBudget) {
  BudgetMemory budget(*gpu, 512 * KiB);
  auto frames = std::make_unique<Harness>(*gpu, 512 * KiB, 22);  // before the pump submits
  RingConfig ring_config;
  ring_config.strategy =
      ByteRingConfig{.capacity = 256 * KiB, .policy = ExhaustionPolicy::Wait, .wait_timeout = 10s};
  ring_config.memory = &budget;
  std::optional<Ring> ring(Ring::create(gpu->ring_device(), ring_config).value());

  StreamerConfig config = config_for(256 * KiB);
  config.memory = &budget;
  streamer = std::move(Streamer::create(gpu->ring_device(), config).value());
  EXPECT_EQ(budget.held(), 512 * KiB);
  const auto over = Streamer::create(gpu->ring_device(), config);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error(), CreateError::AllocationFailed);
  EXPECT_EQ(budget.held(), 512 * KiB);

  const auto streamed = random_bytes(2 * MiB + 4321, 21);
  TestBuffer& dst = device_buffer(streamed.size());
  const auto ticket = streamer->upload(dest(dst), 0, streamed, StreamPriority::Prefetch).value();
  // 24 frames of four uploads (16-19 KiB each, about 70 KiB a frame): the ring reuses its 256 KiB
  // several times (waiting for earlier frames when it must) while the streamer's batches go by.
  for (uint64_t i = 0; i < 24; ++i) {
    VkCommandBuffer cmd = frames->commands();
    StagingFrame frame = ring->begin(cmd, 0).value();
    for (uint64_t j = 0; j < 4; ++j) {
      const uint64_t offset = ((i * 4 + j) % 8) * 64 * KiB;
      ASSERT_TRUE(frames->upload(frame, offset, 16 * KiB + j * 1000));
    }
    const RetirementPoint point = frame.finish(kAfterCopies).value();
    std::lock_guard lock(queue_mutex);
    frames->submit(cmd, point);
  }
  ASSERT_EQ(streamer->wait(ticket, 60s), StreamStatus::Complete);
  EXPECT_EQ(read_buffer(ticket, dst.buffer, 0, streamed.size()), streamed);
  {
    std::lock_guard lock(queue_mutex);  // the pump may still submit: the queue is shared
    frames->verify();
    frames.reset();
  }
  EXPECT_GE(streamer->stats().stream.batches, 8u);
  // 1.7 MiB through 256 KiB: the ring's memory was reused at least six times over. (Not its
  // wraps: when every earlier frame has already retired, a frame may start at the region's start
  // without skipping a tail, which a fast machine does often.)
  const ByteRingStats ring_stats = std::get<ByteRingStats>(ring->stats().strategy);
  EXPECT_EQ(ring_stats.reservations, 96u);
  EXPECT_GT(ring_stats.bytes_reserved, 6 * 256 * KiB);
  EXPECT_LE(budget.peak(), 512 * KiB);
  streamer.reset();  // before the hook it releases its staging memory through
  EXPECT_EQ(budget.held(), 256 * KiB);
  ring.reset();
  EXPECT_EQ(budget.held(), 0u);
}

// --- ownership transfer with an explicit family pair, recorded on this device ----------------
//
// The device has one family, so a release to a second family cannot be submitted. The streamer
// runs with families {this one, a second} through a dispatch whose vkCmdPipelineBarrier2 records
// every barrier and forwards those that name no foreign family: the test sees exactly what the
// streamer records, in which submission, and the device executes the rest.

struct CapturedBarrier {
  uint64_t submission = 0;  // submissions seen before it
  std::vector<VkImageMemoryBarrier2> images;
  std::vector<VkBufferMemoryBarrier2> buffers;
};
std::mutex g_capture_mutex;
std::vector<CapturedBarrier> g_captured;
PFN_vkCmdPipelineBarrier2 g_real_barrier = nullptr;
PFN_vkQueueSubmit2 g_real_submit = nullptr;
uint32_t g_foreign_family = 0;
uint64_t g_submissions = 0;

void VKAPI_CALL capture_barrier(VkCommandBuffer cmd, const VkDependencyInfo* dep) {
  std::lock_guard lock(g_capture_mutex);
  CapturedBarrier c;
  c.submission = g_submissions;
  c.images.assign(dep->pImageMemoryBarriers,
                  dep->pImageMemoryBarriers + dep->imageMemoryBarrierCount);
  c.buffers.assign(dep->pBufferMemoryBarriers,
                   dep->pBufferMemoryBarriers + dep->bufferMemoryBarrierCount);
  g_captured.push_back(c);
  std::vector<VkImageMemoryBarrier2> images;
  std::vector<VkBufferMemoryBarrier2> buffers;
  for (const auto& b : c.images) {
    if (b.dstQueueFamilyIndex != g_foreign_family) images.push_back(b);
  }
  for (const auto& b : c.buffers) {
    if (b.dstQueueFamilyIndex != g_foreign_family) buffers.push_back(b);
  }
  if (images.empty() && buffers.empty()) return;
  VkDependencyInfo forwarded = *dep;
  forwarded.imageMemoryBarrierCount = static_cast<uint32_t>(images.size());
  forwarded.pImageMemoryBarriers = images.data();
  forwarded.bufferMemoryBarrierCount = static_cast<uint32_t>(buffers.size());
  forwarded.pBufferMemoryBarriers = buffers.data();
  g_real_barrier(cmd, &forwarded);
}

VkResult VKAPI_CALL count_submit(VkQueue queue, uint32_t count, const VkSubmitInfo2* submits,
                                 VkFence fence) {
  {
    std::lock_guard lock(g_capture_mutex);
    ++g_submissions;
  }
  return g_real_submit(queue, count, submits, fence);
}

TEST_F(StreamerTest, OwnershipMovesByAReleaseAfterTheLastPieceAndAMatchingAcquire) {
  const detail::QueueFamilies families{.stream = gpu->queue_family,
                                       .consumer = gpu->queue_family + 1};
  g_foreign_family = families.consumer;
  g_captured.clear();
  g_submissions = 0;
  Dispatch d = gpu->dispatch;
  g_real_barrier = d.vkCmdPipelineBarrier2;
  g_real_submit = d.vkQueueSubmit2;
  d.vkCmdPipelineBarrier2 = &capture_barrier;
  d.vkQueueSubmit2 = &count_submit;
  StreamerConfig config = config_for(64 * KiB);
  config.consumer_family = g_foreign_family;
  streamer =
      std::move(Streamer::create(Device{gpu->physical_device, gpu->device, d}, config).value());

  Img img = image(VK_FORMAT_R8G8B8A8_UNORM, 128, 128, 2, 1);  // 80 KiB: several pieces
  img.levels.new_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
  const auto texels = random_bytes(streamer->image_bytes(img.dest, img.levels).value(), 12);
  const auto bytes = random_bytes(100 * KiB, 13);
  TestBuffer& dst = device_buffer(bytes.size() + 512);
  const BufferDestination buffer = dest(dst);
  auto ti = streamer->upload(img.dest, img.levels, texels, StreamPriority::Now).value();
  ASSERT_EQ(streamer->wait(ti, 60s), StreamStatus::Complete);
  auto tb = streamer->upload(buffer, 512, bytes, StreamPriority::Now).value();
  ASSERT_EQ(streamer->wait(tb, 60s), StreamStatus::Complete);
  const uint64_t image_submission = *ti.value(), buffer_submission = *tb.value();

  std::unique_lock lock(g_capture_mutex);
  std::vector<std::pair<uint64_t, VkImageMemoryBarrier2>> images;
  std::vector<std::pair<uint64_t, VkBufferMemoryBarrier2>> buffers;
  for (const auto& c : g_captured) {
    for (const auto& b : c.images)
      images.push_back({c.submission + 1, b});
    for (const auto& b : c.buffers)
      buffers.push_back({c.submission + 1, b});
  }
  // The image: one transition before its first piece (submission 1), one release after its last.
  ASSERT_EQ(images.size(), 2u);
  EXPECT_EQ(images[0].first, 1u);
  EXPECT_EQ(images[0].second.oldLayout, VK_IMAGE_LAYOUT_UNDEFINED);
  EXPECT_EQ(images[0].second.newLayout, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
  EXPECT_EQ(images[0].second.srcQueueFamilyIndex, VK_QUEUE_FAMILY_IGNORED);
  EXPECT_EQ(images[1].first, image_submission);
  EXPECT_GT(image_submission, 1u);
  EXPECT_EQ(images[1].second.newLayout, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
  EXPECT_EQ(images[1].second.srcQueueFamilyIndex, families.stream);
  EXPECT_EQ(images[1].second.dstQueueFamilyIndex, families.consumer);
  EXPECT_EQ(images[1].second.subresourceRange.levelCount, 2u);
  // The buffer: its release after its last piece, over exactly the bytes written.
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(buffers[0].first, buffer_submission);
  EXPECT_EQ(buffers[0].second.offset, 512u);
  EXPECT_EQ(buffers[0].second.size, bytes.size());
  EXPECT_EQ(buffers[0].second.dstQueueFamilyIndex, families.consumer);
  // The consumer's acquires match the releases field for field (the second scope aside).
  g_captured.clear();
  lock.unlock();
  VkCommandBuffer cmd = gpu->begin_commands();
  ASSERT_TRUE(streamer->record_acquire(cmd, img.dest, img.levels,
                                       VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
                                       VK_ACCESS_2_SHADER_SAMPLED_READ_BIT));
  ASSERT_TRUE(streamer->record_acquire(cmd, buffer, 512, bytes.size(),
                                       VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT,
                                       VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT));
  // Arguments an upload would refuse record nothing.
  EXPECT_EQ(streamer->record_acquire(cmd, buffer, 512, buffer.size, 0, 0).error(),
            UploadError::OutOfBounds);
  lock.lock();
  ASSERT_EQ(g_captured.size(), 2u);
  const VkImageMemoryBarrier2& acquire = g_captured[0].images.at(0);
  EXPECT_EQ(acquire.srcQueueFamilyIndex, images[1].second.srcQueueFamilyIndex);
  EXPECT_EQ(acquire.dstQueueFamilyIndex, images[1].second.dstQueueFamilyIndex);
  EXPECT_EQ(acquire.oldLayout, images[1].second.oldLayout);
  EXPECT_EQ(acquire.newLayout, images[1].second.newLayout);
  EXPECT_EQ(std::memcmp(&acquire.subresourceRange, &images[1].second.subresourceRange,
                        sizeof acquire.subresourceRange),
            0);
  EXPECT_EQ(acquire.dstStageMask, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT);
  const VkBufferMemoryBarrier2& b_acquire = g_captured[1].buffers.at(0);
  EXPECT_EQ(b_acquire.offset, buffers[0].second.offset);
  EXPECT_EQ(b_acquire.size, buffers[0].second.size);
  EXPECT_EQ(b_acquire.srcQueueFamilyIndex, families.stream);
  vkEndCommandBuffer(cmd);
  gpu->free_commands(cmd);
}

// --- depth and stencil copies need a queue with GRAPHICS support -----------------------------
//
// The device's one family supports GRAPHICS, COMPUTE and TRANSFER. The streamer reads its
// family's flags through the dispatch: this vkGetPhysicalDeviceQueueFamilyProperties reports the
// real families with `g_cleared_flags` cleared (GRAPHICS and COMPUTE: a transfer-only family).

PFN_vkGetPhysicalDeviceQueueFamilyProperties g_real_families = nullptr;
VkQueueFlags g_cleared_flags = 0;

void VKAPI_CALL families_without_flags(VkPhysicalDevice physical_device, uint32_t* count,
                                       VkQueueFamilyProperties* families) {
  g_real_families(physical_device, count, families);
  if (families == nullptr) return;
  for (uint32_t i = 0; i < *count; ++i)
    families[i].queueFlags &= ~g_cleared_flags;
}

// The test device's dispatch, its families reported without `cleared`.
Dispatch dispatch_without(const Gpu& gpu, VkQueueFlags cleared) {
  Dispatch d = gpu.dispatch;
  EXPECT_NE(d.vkGetPhysicalDeviceQueueFamilyProperties, nullptr);  // Dispatch::load() fills it
  g_real_families = d.vkGetPhysicalDeviceQueueFamilyProperties;
  g_cleared_flags = cleared;
  d.vkGetPhysicalDeviceQueueFamilyProperties = &families_without_flags;
  return d;
}

// The name of the error held, or "(accepted)": a test expecting a refusal fails, not aborts.
template <class T, class E>
std::string refusal(const Expected<T, E>& result) {
  return result ? "(accepted)" : std::string(to_string(result.error()));
}

// The depth/stencil formats texel_block() knows (each tried where transfer images of it exist).
constexpr VkFormat kDepthStencilFormats[] = {
    VK_FORMAT_D16_UNORM,         VK_FORMAT_X8_D24_UNORM_PACK32, VK_FORMAT_D32_SFLOAT,
    VK_FORMAT_S8_UINT,           VK_FORMAT_D16_UNORM_S8_UINT,   VK_FORMAT_D24_UNORM_S8_UINT,
    VK_FORMAT_D32_SFLOAT_S8_UINT};

TEST_F(StreamerTest, OnAFamilyWithoutGraphicsDepthAndStencilCopiesAreRefused) {
  StreamerConfig config = config_for(256 * KiB);
  const Dispatch d = dispatch_without(*gpu, VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT);
  streamer =
      std::move(Streamer::create(Device{gpu->physical_device, gpu->device, d}, config).value());

  // Each aspect of each depth/stencil format: refused by every call that takes the image, before
  // anything is queued or any staging memory is taken.
  int refused = 0;
  for (const VkFormat format : kDepthStencilFormats) {
    dst_images.push_back(gpu->make_image(format, {64, 48, 1}, 2, 1));
    if (dst_images.back().image == VK_NULL_HANDLE) continue;  // not supported here
    const ImageDestination dest{
        .image = dst_images.back().image, .format = format, .extent = {64, 48, 1}, .mip_levels = 2};
    // 0: the format's only aspect.
    for (const VkImageAspectFlags aspect : std::initializer_list<VkImageAspectFlags>{
             0, VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_ASPECT_STENCIL_BIT}) {
      const auto block = texel_block(format, aspect);
      if (!block) continue;  // not an aspect of the format (or 0 for two)
      const ImageLevels levels{.aspect = aspect};
      const ImageShape shape{*block, {64, 48, 1}, 0, 2, 0, 1};
      const auto texels = random_bytes(staging::image_bytes(shape).value(), 40 + refused);
      SCOPED_TRACE(testing::Message() << "format " << format << ", aspect " << aspect);
      EXPECT_EQ(refusal(streamer->upload(dest, levels, texels, StreamPriority::Now)), "BadAspect");
      EXPECT_EQ(refusal(streamer->write_in_place(dest, levels, StreamPriority::Now)), "BadAspect");
      EXPECT_EQ(refusal(streamer->image_bytes(dest, levels)), "BadAspect");
      // Nothing to acquire: nothing would be recorded into the (null) command buffer.
      EXPECT_EQ(refusal(streamer->record_acquire(VK_NULL_HANDLE, dest, levels,
                                                 VK_PIPELINE_STAGE_2_COPY_BIT,
                                                 VK_ACCESS_2_TRANSFER_READ_BIT)),
                "BadAspect");
      ++refused;
    }
  }
  if (refused == 0) GTEST_SKIP() << "no depth/stencil format for transfer images here";
  ASSERT_TRUE(streamer->drain(10s));
  auto s = streamer->stats();
  EXPECT_EQ(s.stream.enqueued, 0u);
  EXPECT_EQ(s.stream.pieces, 0u);
  EXPECT_EQ(s.ring.reservations, 0u);
  EXPECT_EQ(s.submissions, 0u);
  EXPECT_EQ(s.copy_commands, 0u);

  // The streamer goes on: a colour image streams, every byte arrives.
  Img rgba = image(VK_FORMAT_R8G8B8A8_UNORM, 256, 200, 3, 2);
  ASSERT_NE(rgba.image->image, VK_NULL_HANDLE);
  const auto texels = random_bytes(streamer->image_bytes(rgba.dest, rgba.levels).value(), 41);
  auto ticket = streamer->upload(rgba.dest, rgba.levels, texels, StreamPriority::Now).value();
  ASSERT_EQ(streamer->wait(ticket, 60s), StreamStatus::Complete);
  EXPECT_EQ(read_image(ticket, *rgba.image, rgba.shape), texels);
  s = streamer->stats();
  EXPECT_EQ(s.stream.enqueued, 1u);
  EXPECT_GE(s.submissions, 1u);
}

TEST_F(StreamerTest, OnAGraphicsFamilyDepthAndStencilStreamAndArrive) {
  // The device's family as it is (GRAPHICS), then a dispatch without
  // vkGetPhysicalDeviceQueueFamilyProperties (nothing checked, GRAPHICS assumed: as before the
  // check). A depth and a stencil image, each larger than the ring, arrive whole.
  int streamed = 0;
  for (const bool query : {true, false}) {
    SCOPED_TRACE(query ? "families read" : "no family query");
    Dispatch d = gpu->dispatch;
    if (!query) d.vkGetPhysicalDeviceQueueFamilyProperties = nullptr;
    streamer = std::move(
        Streamer::create(Device{gpu->physical_device, gpu->device, d}, config_for(64 * KiB))
            .value());
    for (const VkFormat format : {VK_FORMAT_D16_UNORM, VK_FORMAT_S8_UINT}) {
      Img img = image(format, 256, 200, 3, 2);
      if (img.image->image == VK_NULL_HANDLE) continue;  // not supported here
      const auto texels =
          random_bytes(streamer->image_bytes(img.dest, img.levels).value(), 50 + streamed);
      EXPECT_GT(texels.size(), 64 * KiB);
      auto ticket = streamer->upload(img.dest, img.levels, texels, StreamPriority::Now).value();
      ASSERT_EQ(streamer->wait(ticket, 60s), StreamStatus::Complete);
      EXPECT_EQ(read_image(ticket, *img.image, img.shape), texels) << "format " << format;
      ++streamed;
    }
    streamer.reset();
  }
  if (streamed == 0) GTEST_SKIP() << "neither D16_UNORM nor S8_UINT transfer images here";
}

TEST_F(StreamerTest, CreateRefusesAFamilyTheDeviceLacksOrOneThatCannotCopy) {
  uint32_t count = 0;
  gpu->dispatch.vkGetPhysicalDeviceQueueFamilyProperties(gpu->physical_device, &count, nullptr);
  ASSERT_GT(count, gpu->queue_family);
  StreamerConfig config = config_for(64 * KiB);
  config.queue_family = count;
  EXPECT_EQ(refusal(Streamer::create(gpu->ring_device(), config)), "InvalidConfig");
  config.queue_family = ~0u;
  EXPECT_EQ(refusal(Streamer::create(gpu->ring_device(), config)), "InvalidConfig");
  // A family that supports none of TRANSFER, GRAPHICS and COMPUTE copies nothing.
  config.queue_family = gpu->queue_family;
  const Dispatch d =
      dispatch_without(*gpu, VK_QUEUE_TRANSFER_BIT | VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT);
  EXPECT_EQ(refusal(Streamer::create(Device{gpu->physical_device, gpu->device, d}, config)),
            "InvalidConfig");
  // GRAPHICS or COMPUTE alone implies copies (a family need not report TRANSFER then).
  const Dispatch compute = dispatch_without(*gpu, VK_QUEUE_TRANSFER_BIT | VK_QUEUE_GRAPHICS_BIT);
  EXPECT_TRUE(Streamer::create(Device{gpu->physical_device, gpu->device, compute}, config));
}

// --- the barriers, without submitting --------------------------------------------------------

TEST_F(StreamerTest, OnATransferOnlyFamilyOwnershipMovesToTheConsumersFamily) {
  // The real split: the streamer on the device's transfer-only queue, the readbacks (the
  // consumer) on the graphics queue, images and buffers in exclusive sharing. Each upload's
  // last piece releases it on the transfer queue; the consumer acquires it before reading.
  const support::Queue* transfer = gpu->context->transfer();
  if (transfer == nullptr) GTEST_SKIP() << "the device has no transfer-only queue family";
  StreamerConfig config;
  config.queue = transfer->queue;
  config.queue_family = transfer->family;
  config.consumer_family = gpu->queue_family;
  config.ring_bytes = 256 * KiB;
  streamer = std::move(Streamer::create(gpu->ring_device(), config).value());

  // 4 x the ring each: a texture by rows and levels, a BC7 mip chain with layers, a buffer.
  Img rgba = image(VK_FORMAT_R8G8B8A8_UNORM, 512, 512, 10, 1);
  const auto texels = random_bytes(streamer->image_bytes(rgba.dest, rgba.levels).value(), 31);
  std::optional<Img> bc;
  std::vector<std::byte> blocks;
  if (gpu->bc_formats) {
    bc = image(VK_FORMAT_BC7_UNORM_BLOCK, 512, 256, 10, 4);
    blocks = random_bytes(streamer->image_bytes(bc->dest, bc->levels).value(), 32);
  }
  const auto bytes = random_bytes(MiB + 3, 33);
  TestBuffer& dst = device_buffer(bytes.size() + 256);
  const BufferDestination buffer = dest(dst);

  auto ti = streamer->upload(rgba.dest, rgba.levels, texels, StreamPriority::Now, 60s).value();
  auto tb = streamer->upload(buffer, 256, bytes, StreamPriority::Prefetch, 60s).value();
  StreamTicket tc;
  if (bc)
    tc = streamer->upload(bc->dest, bc->levels, blocks, StreamPriority::Prefetch, 60s).value();
  ASSERT_EQ(streamer->wait(ti, 60s), StreamStatus::Complete);
  ASSERT_EQ(streamer->wait(tb, 60s), StreamStatus::Complete);
  if (bc) {
    ASSERT_EQ(streamer->wait(tc, 60s), StreamStatus::Complete);
  }

  const auto acquire_image = [&](const Img& img) {
    return [&](VkCommandBuffer cmd) {
      ASSERT_TRUE(streamer->record_acquire(cmd, img.dest, img.levels, VK_PIPELINE_STAGE_2_COPY_BIT,
                                           VK_ACCESS_2_TRANSFER_READ_BIT));
    };
  };
  EXPECT_EQ(read_image(ti, *rgba.image, rgba.shape, acquire_image(rgba)), texels);
  EXPECT_EQ(read_buffer(tb, dst.buffer, 256, bytes.size(),
                        [&](VkCommandBuffer cmd) {
                          ASSERT_TRUE(streamer->record_acquire(cmd, buffer, 256, bytes.size(),
                                                               VK_PIPELINE_STAGE_2_COPY_BIT,
                                                               VK_ACCESS_2_TRANSFER_READ_BIT));
                        }),
            bytes);
  if (bc) {
    EXPECT_EQ(read_image(tc, *bc->image, bc->shape, acquire_image(*bc)), blocks);
  }
  EXPECT_LE(streamer->stats().ring.peak_held_bytes, 256 * KiB);
}

// The targets and barriers themselves (internal, pure functions).
using detail::BufferTarget;
using detail::ImageTarget;
using detail::QueueFamilies;

TEST(StreamTargets, ZeroLevelsOrLayersMeanTheRestOfTheImage) {
  const ImageDestination dest{.image = reinterpret_cast<VkImage>(uintptr_t{0x1234}),
                              .format = VK_FORMAT_R8G8B8A8_UNORM,
                              .extent = {64, 32, 1},
                              .mip_levels = 5,
                              .array_layers = 3,
                              .sharing = VK_SHARING_MODE_CONCURRENT};
  const ImageTarget t = detail::image_target(dest, {.base_level = 2, .base_layer = 1}).value();
  EXPECT_EQ(t.levels, 3u);
  EXPECT_EQ(t.layers, 2u);
  EXPECT_EQ(t.extent.width, 64u);  // level 0's, whatever base_level
  EXPECT_EQ(t.final_layout, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
  EXPECT_EQ(t.sharing, VK_SHARING_MODE_CONCURRENT);
  EXPECT_EQ(detail::image_target(dest, {.base_level = 2, .levels = 4}).error(),
            UploadError::NoSuchSubresource);
  const BufferDestination buffer{reinterpret_cast<VkBuffer>(uintptr_t{0x99}), 1000};
  EXPECT_EQ(detail::buffer_target(buffer, 600, 400).value().offset, 600u);
  EXPECT_EQ(detail::buffer_target(buffer, 601, 400).error(), UploadError::OutOfBounds);
}

TEST(StreamBarriers, ReleaseAndAcquireMatchForAFamilyPair) {
  const QueueFamilies families{.stream = 1, .consumer = 0};
  const ImageTarget image{.image = reinterpret_cast<VkImage>(uintptr_t{0x1234}),
                          .format = VK_FORMAT_BC7_UNORM_BLOCK,
                          .extent = {256, 256, 1},
                          .base_level = 1,
                          .levels = 3,
                          .base_layer = 2,
                          .layers = 4};
  const VkImageMemoryBarrier2 release = image_end_barrier(image, families);
  const VkImageMemoryBarrier2 acquire =
      image_acquire_barrier(image, families, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
                            VK_ACCESS_2_SHADER_SAMPLED_READ_BIT)
          .value();
  EXPECT_EQ(release.srcQueueFamilyIndex, 1u);
  EXPECT_EQ(release.dstQueueFamilyIndex, 0u);
  EXPECT_EQ(release.srcStageMask, VK_PIPELINE_STAGE_2_COPY_BIT);
  EXPECT_EQ(release.dstStageMask, VK_PIPELINE_STAGE_2_NONE);
  // The acquire names the same families, layouts and range; only its second scope is the
  // consumer's.
  EXPECT_EQ(acquire.srcQueueFamilyIndex, release.srcQueueFamilyIndex);
  EXPECT_EQ(acquire.dstQueueFamilyIndex, release.dstQueueFamilyIndex);
  EXPECT_EQ(acquire.oldLayout, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL);
  EXPECT_EQ(acquire.newLayout, release.newLayout);
  EXPECT_EQ(acquire.image, release.image);
  EXPECT_EQ(acquire.subresourceRange.baseMipLevel, 1u);
  EXPECT_EQ(acquire.subresourceRange.levelCount, 3u);
  EXPECT_EQ(acquire.subresourceRange.baseArrayLayer, 2u);
  EXPECT_EQ(acquire.subresourceRange.layerCount, 4u);
  EXPECT_EQ(acquire.subresourceRange.aspectMask, VK_IMAGE_ASPECT_COLOR_BIT);
  EXPECT_EQ(acquire.srcStageMask, VK_PIPELINE_STAGE_2_NONE);
  EXPECT_EQ(acquire.dstStageMask, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT);
  EXPECT_EQ(acquire.dstAccessMask, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT);

  const BufferTarget buffer{.buffer = reinterpret_cast<VkBuffer>(uintptr_t{0x99}), .offset = 256};
  const auto b_release = buffer_end_barrier(buffer, 1000, families).value();
  const auto b_acquire =
      buffer_acquire_barrier(buffer, 1000, families, VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT,
                             VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT)
          .value();
  EXPECT_EQ(b_release.offset, 256u);
  EXPECT_EQ(b_release.size, 1000u);
  EXPECT_EQ(b_acquire.offset, b_release.offset);
  EXPECT_EQ(b_acquire.size, b_release.size);
  EXPECT_EQ(b_acquire.srcQueueFamilyIndex, 1u);
  EXPECT_EQ(b_acquire.dstQueueFamilyIndex, 0u);
}

TEST(StreamBarriers, ConcurrentOrOneFamilyTransfersNothing) {
  const ImageTarget image{.image = reinterpret_cast<VkImage>(uintptr_t{0x1234}),
                          .format = VK_FORMAT_R8G8B8A8_UNORM,
                          .extent = {16, 16, 1},
                          .sharing = VK_SHARING_MODE_CONCURRENT};
  const QueueFamilies two{.stream = 1, .consumer = 0};
  EXPECT_FALSE(image_acquire_barrier(image, two, 0, 0));
  const VkImageMemoryBarrier2 end = image_end_barrier(image, two);
  EXPECT_EQ(end.srcQueueFamilyIndex, VK_QUEUE_FAMILY_IGNORED);
  EXPECT_EQ(end.newLayout, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
  ImageTarget exclusive = image;
  exclusive.sharing = VK_SHARING_MODE_EXCLUSIVE;
  EXPECT_FALSE(image_acquire_barrier(exclusive, {.stream = 2, .consumer = 2}, 0, 0));
  EXPECT_FALSE(buffer_end_barrier(BufferTarget{.sharing = VK_SHARING_MODE_CONCURRENT}, 4, two));
}

TEST(StreamBarriers, DepthStencilImagesAreTransitionedWithBothAspects) {
  ImageTarget image{.format = VK_FORMAT_D24_UNORM_S8_UINT, .aspect = VK_IMAGE_ASPECT_DEPTH_BIT};
  EXPECT_EQ(barrier_aspects(image), VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT);
  image.format = VK_FORMAT_D32_SFLOAT;
  image.aspect = 0;
  EXPECT_EQ(barrier_aspects(image), VK_IMAGE_ASPECT_DEPTH_BIT);
}

TEST(StreamTargets, DepthAndStencilCopiesNeedAGraphicsQueue) {
  EXPECT_TRUE(detail::copies_need_graphics({.format = VK_FORMAT_D32_SFLOAT}));  // its only aspect
  EXPECT_TRUE(detail::copies_need_graphics(
      {.format = VK_FORMAT_D24_UNORM_S8_UINT, .aspect = VK_IMAGE_ASPECT_STENCIL_BIT}));
  EXPECT_FALSE(detail::copies_need_graphics({.format = VK_FORMAT_R8G8B8A8_UNORM}));
  EXPECT_FALSE(detail::copies_need_graphics(
      {.format = VK_FORMAT_BC7_UNORM_BLOCK, .aspect = VK_IMAGE_ASPECT_COLOR_BIT}));
}

TEST(StreamBarriers, TheTransferOnlyFamilyIsFound) {
  const VkQueueFamilyProperties families[] = {
      {.queueFlags = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT,
       .queueCount = 16},
      {.queueFlags = VK_QUEUE_TRANSFER_BIT | VK_QUEUE_SPARSE_BINDING_BIT, .queueCount = 2},
      {.queueFlags = VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT, .queueCount = 8}};
  EXPECT_EQ(transfer_only_family(families, 3), 1u);
  EXPECT_FALSE(transfer_only_family(families, 1));
}

}  // namespace
}  // namespace staging::vulkan::test
