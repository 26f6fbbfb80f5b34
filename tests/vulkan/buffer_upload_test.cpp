// Buffer uploads through a StagingFrame, read back and compared byte for byte: one frame, then
// hundreds of frames of random sizes (1 byte to 4 MiB) at random offsets, several frames in
// flight, copy-from-pointer and in-place writes mixed, with StagingChecker watching every staging
// range the CPU is handed (I1, I4) against the semaphore's real value.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <string_view>

#include "gpu.hpp"

namespace staging::vulkan::test {
namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr VkBufferUsageFlags kDstUsage =
    VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;

// The copies are read by the readback copy; earlier frames' copies and readbacks touched the
// same destinations.
constexpr Visibility kReadBack{
    .stages = VK_PIPELINE_STAGE_2_COPY_BIT,
    .access = VK_ACCESS_2_TRANSFER_READ_BIT,
    .prior_stages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
    .prior_access = VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT,
};

// Log-uniform in [1, max]: as many tiny uploads as huge ones.
uint64_t random_size(std::mt19937_64& rng, uint64_t max) {
  std::uniform_real_distribution<double> e(0.0, std::log2(static_cast<double>(max)));
  return std::max<uint64_t>(1, std::min<uint64_t>(max, static_cast<uint64_t>(std::exp2(e(rng)))));
}

TEST_F(GpuTest, ReportsTheDeviceAndValidationState) {
  RecordProperty("device", gpu->describe());
  const char* mode = std::getenv("STAGING_VULKAN_VALIDATION");
  if (gpu->properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
      !(mode && std::string_view(mode) == "off")) {
    EXPECT_TRUE(gpu->validation) << "lavapipe (CI) runs must be validated";
  }
  EXPECT_EQ(gpu->validation, gpu->sync_validation) << "validation without sync validation";
}

TEST_F(GpuTest, OneFrameUploadsABufferAndItReadsBackByteForByte) {
  StagingChecker checker(*gpu);
  Ring ring = Ring::create(gpu->ring_device(), {.observer = &checker}).value();
  TestBuffer dst = gpu->make_buffer(4096, kDstUsage, false);
  TestBuffer back = gpu->make_buffer(4096, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  std::mt19937_64 rng(1);
  const std::vector<std::byte> data = random_bytes(rng, 1000);

  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin(cmd, ring.buffer_footprint(data.size())).value();
  EXPECT_EQ(frame.route(), Route::Ring);
  ASSERT_TRUE(frame.upload(dst.buffer, 17, data));
  const RetirementPoint point = frame.finish(kReadBack).value();
  EXPECT_EQ(point.semaphore, ring.semaphore());
  EXPECT_EQ(point.value, 1u);
  gpu->record_readback(cmd, dst.buffer, 17, data.size(), back.buffer, 0);
  const VkSemaphoreSubmitInfo signal = point.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(point.semaphore, point.value);

  EXPECT_EQ(first_difference(data, {back.mapped, data.size()}), -1);
  EXPECT_EQ(ring.in_flight(), 1u);
  EXPECT_EQ(ring.poll(), 1u);
  EXPECT_EQ(ring.in_flight(), 0u);
  EXPECT_EQ(detail::slot(ring, 0)->state, SlotState::Ready);
  const Stats stats = ring.stats();
  EXPECT_EQ(stats.staged_uploads, 1u);
  EXPECT_EQ(stats.copy_commands, 1u);
  EXPECT_EQ(stats.barriers, 2u);  // prior users declared: one before, one after the copies
  EXPECT_EQ(checker.violations, 0u);
  EXPECT_EQ(checker.writes, 1u);
  gpu->free_commands(cmd);
  gpu->destroy(dst);
  gpu->destroy(back);
}

// Consecutive uploads that continue each other in staging memory and in the destination are
// one copy region, not one per upload (a thousand 256-byte uploads cost the driver one region).
//   staging: [A 4K][B 4K][C 4K][D 4K]      destination: [A][B][C] .. gap .. [D]
//   regions: {A+B+C -> 0, 12K}, {D -> 20K, 4K}
TEST_F(GpuTest, AdjacentUploadsAreMergedIntoOneCopyRegion) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  constexpr uint64_t kPiece = 4096;  // a multiple of every device's copy-offset alignment
  TestBuffer dst = gpu->make_buffer(8 * kPiece, kDstUsage, false);
  TestBuffer back = gpu->make_buffer(8 * kPiece, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  std::mt19937_64 rng(7);
  const std::vector<std::byte> data = random_bytes(rng, 4 * kPiece);
  const uint64_t dst_offsets[] = {0, kPiece, 2 * kPiece, 5 * kPiece};

  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin(cmd, 4 * ring.buffer_footprint(kPiece)).value();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(
        frame.upload(dst.buffer, dst_offsets[i], std::span(data).subspan(i * kPiece, kPiece)));
  }
  const RetirementPoint point = frame.finish(kReadBack).value();
  gpu->record_readback(cmd, dst.buffer, 0, 8 * kPiece, back.buffer, 0);
  const VkSemaphoreSubmitInfo signal = point.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(point.semaphore, point.value);

  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(first_difference(std::span(data).subspan(i * kPiece, kPiece),
                               {back.mapped + dst_offsets[i], kPiece}),
              -1)
        << "upload " << i;
  }
  const Stats stats = ring.stats();
  EXPECT_EQ(stats.staged_uploads, 4u);
  EXPECT_EQ(stats.copy_commands, 1u);
  EXPECT_EQ(stats.copy_regions, 2u);
  gpu->free_commands(cmd);
  gpu->destroy(dst);
  gpu->destroy(back);
}

// The canary: synchronization validation sees the ring's copies. A frame whose destination was
// just read by an earlier copy, finished without declaring that prior reader, is a
// write-after-read hazard the layer must report; declaring it (kReadBack) is clean.
TEST_F(GpuTest, SynchronizationValidationSeesAnUndeclaredPriorReader) {
  if (!gpu->sync_validation) GTEST_SKIP() << "synchronization validation is off on this device";
  Ring ring = Ring::create(gpu->ring_device()).value();
  TestBuffer dst = gpu->make_buffer(4096, kDstUsage, false);
  TestBuffer back = gpu->make_buffer(4096, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  std::mt19937_64 rng(2);
  const std::vector<std::byte> data = random_bytes(rng, 256);
  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame first = ring.begin(cmd, 1024).value();
  ASSERT_TRUE(first.upload(dst.buffer, 0, data));
  (void)first.finish(kReadBack).value();
  gpu->record_readback(cmd, dst.buffer, 0, data.size(), back.buffer, 0);  // reads dst
  {
    ExpectValidationMessages expect;
    StagingFrame second = ring.begin(cmd, 1024).value();
    ASSERT_TRUE(second.upload(dst.buffer, 0, data));
    (void)second
        .finish({.stages = VK_PIPELINE_STAGE_2_COPY_BIT,
                 .access = VK_ACCESS_2_TRANSFER_READ_BIT})  // no prior_stages
        .value();
    ASSERT_FALSE(expect.ids.empty()) << "no hazard reported";
    EXPECT_EQ(expect.ids.front().rfind("SYNC-HAZARD-WRITE-AFTER-READ", 0), 0u)
        << expect.ids.front();
  }
  StagingFrame third = ring.begin(cmd, 1024).value();
  ASSERT_TRUE(third.upload(dst.buffer, 0, data));
  const RetirementPoint last = third.finish(kReadBack).value();  // declared: no message
  const VkSemaphoreSubmitInfo signal = last.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(last.semaphore, last.value);
  EXPECT_EQ(ring.poll(), 3u);  // point 3 retires points 1 and 2 too (same timeline)
  gpu->free_commands(cmd);
  gpu->destroy(dst);
  gpu->destroy(back);
}

// The checkers' canary: a staging range handed out over another open frame's range is reported,
// by StagingChecker's own check and by the core's InvariantChecker it feeds (I1); a range past
// its buffer's end too (I4).
TEST_F(GpuTest, TheStagingCheckersReportAnOverlapAndAnOverrun) {
  StagingChecker checker(*gpu);
  const VkBuffer buffer = reinterpret_cast<VkBuffer>(uintptr_t{0x1000});  // never dereferenced
  // Runs `write` and returns the failures it reported (captured, so this test does not fail).
  const auto reported = [](auto write) {
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter capture(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      write();
    }
    std::string all;
    for (int i = 0; i < failures.size(); ++i)
      all += std::string(failures.GetTestPartResult(i).message()) + "\n";
    return all;
  };
  checker.on_write(1, buffer, 4096, 0, 1024);
  const std::string overlap = reported([&] { checker.on_write(2, buffer, 4096, 512, 1024); });
  EXPECT_NE(overlap.find("I1: frame 2 writes [512, 1536) over open frame 1"), std::string::npos)
      << overlap;
  EXPECT_NE(overlap.find("core InvariantChecker: I1"), std::string::npos) << overlap;
  EXPECT_EQ(checker.violations, 2u);
  checker.on_release(1, /*retired=*/false);
  checker.on_release(2, /*retired=*/false);
  checker.on_write(3, buffer, 4096, 0, 256);  // frames 1 and 2 released: their bytes are free
  EXPECT_EQ(checker.violations, 2u);
  const std::string overrun = reported([&] { checker.on_write(4, buffer, 4096, 4000, 200); });
  EXPECT_NE(overrun.find("I4"), std::string::npos) << overrun;
  EXPECT_NE(overrun.find("core InvariantChecker: I4"), std::string::npos) << overrun;
}

// Two 6 MiB destination buffers; every frame uploads 1–6 random ranges (1 byte .. 4 MiB, random
// offsets, disjoint within the frame) into them, then reads both buffers back whole. Up to four
// frames are in flight. Slots: three slots, so some frames find every slot busy and take the
// fallback route, and a quarter of the frames underestimate their size, so some uploads overflow
// their slot. Bytes: a 6 MiB byte ring that waits, grows or falls back as its policy says (the
// core's InvariantChecker sees every reservation); the first frame (two 6 MiB uploads) never fits
// it, so its second upload times out at once (Wait: the frame would wait for itself), grows the
// ring or gets a dedicated region. (How often the ring wraps depends on how far the GPU lags the
// host; byte_strategy_test.cpp wraps it deterministically.) Every frame's readback must equal the
// model of both buffers after that frame.
class BufferStress : public GpuTest, public ::testing::WithParamInterface<Setup> {};

TEST_P(BufferStress, HundredsOfFramesOfRandomBufferUploadsArriveByteForByte) {
  constexpr uint64_t kDst = 6 * MiB;
  constexpr int kFrames = 240;
  constexpr std::size_t kInFlight = 4;
  StagingChecker checker(*gpu);
  InvariantChecker invariants(InvariantChecker::Mode::Record);
  RingConfig config;
  config.strategy =
      StagingRingConfig{.slots = 3, .min_slot_bytes = 64 * KiB, .max_slot_bytes = 8 * MiB};
  config.policy = ExhaustionPolicy::Fallback;
  config.fallback_max_oneoff_bytes = 160 * MiB;
  config.observer = &checker;
  config.checker = &invariants;
  config = with_setup(config, GetParam(), 6 * MiB);
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  std::mt19937_64 rng(test_seed(20261129));

  TestBuffer dst[2] = {gpu->make_buffer(kDst, kDstUsage, false),
                       gpu->make_buffer(kDst, kDstUsage, false)};
  std::vector<TestBuffer> back;
  for (std::size_t i = 0; i < kInFlight; ++i)
    back.push_back(gpu->make_buffer(2 * kDst, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true));
  std::vector<std::byte> model[2] = {random_bytes(rng, kDst), random_bytes(rng, kDst)};

  struct InFlight {
    RetirementPoint point;
    VkCommandBuffer cmd;
    std::size_t back;
    std::vector<std::byte> expect[2];
  };
  std::deque<InFlight> in_flight;
  std::vector<std::size_t> free_back;
  for (std::size_t i = 0; i < kInFlight; ++i)
    free_back.push_back(i);
  uint64_t bytes_checked = 0;
  const auto verify_oldest = [&] {
    InFlight& f = in_flight.front();
    gpu->wait(f.point.semaphore, f.point.value);
    for (int b = 0; b < 2; ++b) {
      const std::span<const std::byte> got(back[f.back].mapped + b * kDst, kDst);
      const int64_t diff = first_difference(f.expect[b], got);
      ASSERT_EQ(diff, -1) << "buffer " << b << " differs at byte " << diff << " after the frame "
                          << "with point " << f.point.value;
      bytes_checked += kDst;
    }
    gpu->free_commands(f.cmd);
    free_back.push_back(f.back);
    in_flight.pop_front();
  };

  for (int n = 0; n <= kFrames; ++n) {
    if (in_flight.size() == kInFlight) {
      verify_oldest();
      if (HasFatalFailure()) return;
    }
    struct Upload {
      int buffer;
      uint64_t offset;
      std::vector<std::byte> data;
      bool in_place;
    };
    std::vector<Upload> uploads;
    if (n == 0) {  // the first frame fills both buffers (too large for a slot: fallback route)
      for (int b = 0; b < 2; ++b)
        uploads.push_back({b, 0, model[b], false});
    } else {
      const int count = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < count; ++i) {
        const int b = static_cast<int>(rng() % 2);
        uint64_t size = random_size(rng, 4 * MiB);
        uint64_t offset = rng() % (kDst - size + 1);
        if (rng() % 2 == 0) {  // 4-byte aligned: the vkCmdUpdateBuffer path is legal for these
          size = std::max<uint64_t>(4, size & ~uint64_t{3});
          offset &= ~uint64_t{3};
        }
        const bool overlaps = std::any_of(uploads.begin(), uploads.end(), [&](const Upload& u) {
          return u.buffer == b && u.offset < offset + size && offset < u.offset + u.data.size();
        });
        if (overlaps) continue;
        uploads.push_back({b, offset, random_bytes(rng, size), rng() % 3 == 0});
      }
    }
    uint64_t needed = 0;
    for (const Upload& u : uploads)
      needed += ring.buffer_footprint(u.data.size());
    if (rng() % 4 == 0) needed /= 3;  // underestimated: later uploads overflow the slot

    VkCommandBuffer cmd = gpu->begin_commands();
    StagingFrame frame = ring.begin(cmd, needed).value();
    for (const Upload& u : uploads) {
      if (u.in_place) {
        const auto span = frame.reserve(dst[u.buffer].buffer, u.offset, u.data.size());
        ASSERT_TRUE(span) << to_string(span.error());
        std::memcpy(span->data(), u.data.data(), u.data.size());
      } else {
        const auto done = frame.upload(dst[u.buffer].buffer, u.offset, u.data);
        ASSERT_TRUE(done) << to_string(done.error());
      }
      std::memcpy(model[u.buffer].data() + u.offset, u.data.data(), u.data.size());
    }
    const RetirementPoint point = frame.finish(kReadBack).value();
    const std::size_t slot = free_back.back();
    free_back.pop_back();
    for (int b = 0; b < 2; ++b)
      gpu->record_readback(cmd, dst[b].buffer, 0, kDst, back[slot].buffer, b * kDst);
    const VkSemaphoreSubmitInfo signal = point.submit_info();
    gpu->submit(cmd, {}, {&signal, 1});
    in_flight.push_back({point, cmd, slot, {model[0], model[1]}});
  }
  while (!in_flight.empty()) {
    verify_oldest();
    if (HasFatalFailure()) return;
  }
  ring.poll();

  const Stats stats = ring.stats();
  std::printf("[vulkan] %llu bytes read back and compared\n%s",
              static_cast<unsigned long long>(bytes_checked), format_stats(stats).c_str());
  EXPECT_EQ(stats.frames_finished, static_cast<uint64_t>(kFrames + 1));
  EXPECT_EQ(stats.points_retired, static_cast<uint64_t>(kFrames + 1));
  EXPECT_EQ(ring.in_flight(), 0u);
  EXPECT_GT(stats.staged_uploads, 0u);
  EXPECT_EQ(stats.oneoff_live_bytes, 0u);
  EXPECT_EQ(checker.violations, 0u);
  const auto* slots = std::get_if<StagingStats>(&stats.strategy);
  const auto* bytes = std::get_if<ByteRingStats>(&stats.strategy);
  ASSERT_EQ(bytes == nullptr, GetParam() == Setup::Slots);
  if (slots != nullptr) {
    EXPECT_LE(slots->peak_bytes_allocated, 3 * 8 * MiB);
  }
  switch (GetParam()) {
    case Setup::Slots:
      EXPECT_GT(stats.oneoff_uploads, 0u);  // at least the first frame's (larger than a slot)
      break;
    case Setup::BytesWait:
      EXPECT_GT(bytes->timeouts, 0u);
      EXPECT_GT(stats.oneoff_uploads, 0u);
      break;
    case Setup::BytesGrow:
      EXPECT_GT(bytes->grows, 0u);
      break;
    case Setup::BytesFallback:
      EXPECT_GT(bytes->fallbacks, 0u);
      break;
  }
  if (bytes != nullptr) {
    EXPECT_LE(bytes->peak_held_bytes, detail::byte_ring(ring)->cap());
    EXPECT_GE(invariants.checks(), bytes->reservations);
    EXPECT_TRUE(invariants.violations().empty())
        << invariants.violations().size()
        << " violations, first: " << invariants.violations().front().message;
  }
  EXPECT_GT(checker.writes, static_cast<uint64_t>(kFrames));
  for (TestBuffer& b : dst)
    gpu->destroy(b);
  for (TestBuffer& b : back)
    gpu->destroy(b);
}

INSTANTIATE_TEST_SUITE_P(Strategies, BufferStress,
                         ::testing::Values(Setup::Slots, Setup::BytesWait, Setup::BytesGrow,
                                           Setup::BytesFallback),
                         [](const ::testing::TestParamInfo<Setup>& param) {
                           return setup_name(param.param);
                         });

}  // namespace
}  // namespace staging::vulkan::test
