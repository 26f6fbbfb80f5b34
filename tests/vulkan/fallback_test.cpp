// The fallback route ("queue writes"): when the ring gives a frame no slot, or a slot
// fills up, the same bytes still arrive — through vkCmdUpdateBuffer where it is legal (<= 65536
// bytes, offset and size multiples of 4, within the per-frame budget), otherwise through one-off
// staging buffers freed when their point retires — counted, and capped.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "harness.hpp"

namespace staging::vulkan::test {
namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

TEST_F(GpuTest, FallbackFramesUseUpdateBufferWhereLegalAndOneOffBuffersElsewhere) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.fallback_max_oneoff_bytes = 256 * KiB;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 1 * MiB, 3);

  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin_fallback(cmd);
  EXPECT_EQ(frame.route(), Route::Fallback);
  EXPECT_FALSE(frame.refusal());
  ASSERT_TRUE(h.upload(frame, 64, 256));                 // legal: vkCmdUpdateBuffer
  ASSERT_TRUE(h.upload(frame, 1024, 64, true));          // legal, written in place
  ASSERT_TRUE(h.upload(frame, 2048, 255));               // size not a multiple of 4: one-off
  ASSERT_TRUE(h.upload(frame, 4098, 100));               // offset not a multiple of 4: one-off
  ASSERT_TRUE(h.upload(frame, 8192, 70000));             // larger than 65536: one-off
  EXPECT_EQ(h.upload(frame, 100000, 200 * KiB).error(),  // 255 + 100 + 70000 + 200K > 256K
            UploadError::FallbackCapReached);
  ASSERT_TRUE(h.upload(frame, 100000, 65536));  // the largest legal update
  Stats s = ring.stats();
  EXPECT_EQ(s.update_buffer_uploads, 3u);
  EXPECT_EQ(s.oneoff_uploads, 3u);
  EXPECT_EQ(s.oneoff_live_bytes, 255u + 100u + 70000u);
  EXPECT_EQ(s.fallback_cap_refusals, 1u);
  EXPECT_EQ(s.staged_uploads, 0u);

  const RetirementPoint point = frame.finish(kAfterCopies).value();
  h.submit(cmd, point);
  h.verify();
  ring.poll();
  s = ring.stats();
  EXPECT_EQ(s.update_commands, 3u);
  EXPECT_EQ(s.copy_commands, 3u);      // one per one-off buffer
  EXPECT_EQ(s.oneoff_live_bytes, 0u);  // freed when the point retired
  EXPECT_EQ(s.oneoff_peak_bytes, 255u + 100u + 70000u);
  EXPECT_EQ(checker.violations, 0u);
}

TEST_F(GpuTest, TheUpdateBufferBudgetPerFrameSendsTheRestToOneOffBuffers) {
  RingConfig config;
  config.fallback_max_update_bytes = 1 * KiB;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 64 * KiB, 4);
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin_fallback(cmd);
  for (uint64_t i = 0; i < 4; ++i)
    ASSERT_TRUE(h.upload(frame, i * 4096, 512));
  EXPECT_EQ(ring.stats().update_buffer_uploads, 2u);
  EXPECT_EQ(ring.stats().oneoff_uploads, 2u);
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
}

TEST_F(GpuTest, UpdateBufferCanBeSwitchedOff) {
  RingConfig config;
  config.fallback_update_buffer = false;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 64 * KiB, 5);
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin_fallback(cmd);
  ASSERT_TRUE(h.upload(frame, 0, 512));
  EXPECT_EQ(ring.stats().update_buffer_uploads, 0u);
  EXPECT_EQ(ring.stats().oneoff_uploads, 1u);
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
}

// A frame larger than max_slot_bytes: refused with TooLarge. Under Fallback the frame takes the
// fallback route; under Defer begin() answers the refusal.
TEST_F(GpuTest, AFrameLargerThanAnySlotTakesTheFallbackRouteOrIsRefused) {
  RingConfig config;
  config.strategy = StagingRingConfig{.max_slot_bytes = 1 * MiB};
  Ring fallback = Ring::create(gpu->ring_device(), config).value();
  config.policy = ExhaustionPolicy::Defer;
  Ring defer = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 2 * MiB, 6);

  VkCommandBuffer cmd = h.commands();
  const Expected<StagingFrame, UploadError> refused = defer.begin(cmd, 2 * MiB);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), UploadError::TooLarge);
  EXPECT_EQ(defer.stats().begin_refused, 1u);

  StagingFrame frame = fallback.begin(cmd, 2 * MiB).value();
  EXPECT_EQ(frame.route(), Route::Fallback);
  EXPECT_EQ(frame.refusal(), UploadError::TooLarge);
  ASSERT_TRUE(h.upload(frame, 3, 1536 * KiB));
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
  EXPECT_EQ(fallback.stats().frames_fallback, 1u);
  EXPECT_EQ(std::get<StagingStats>(fallback.stats().strategy).refusals_too_large, 1u);
}

// An upload the fallback route cannot take now (its one-off cap is held by frames in flight) may
// succeed in a later frame: FallbackCapReached. One larger than the cap itself and than the
// largest slot never can, in any frame: TooLarge.
TEST_F(GpuTest, AnUploadNoRouteCanEverTakeIsTooLargeNotRetryLater) {
  RingConfig config;
  config.strategy = StagingRingConfig{.max_slot_bytes = 256 * KiB};
  config.fallback_max_oneoff_bytes = 512 * KiB;
  config.fallback_update_buffer = false;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 2 * MiB, 11);

  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 64 * KiB).value();
  EXPECT_EQ(frame.route(), Route::Ring);
  ASSERT_TRUE(h.upload(frame, 0, 400 * KiB));  // above the slot: a one-off buffer (400K of 512K)
  // 200K more fits a slot in a later frame, but not the fallback cap now.
  EXPECT_EQ(h.upload(frame, 512 * KiB, 200 * KiB).error(), UploadError::FallbackCapReached);
  // 1 MiB is above the largest slot (256K) and the cap (512K): never.
  EXPECT_EQ(h.upload(frame, 1 * MiB, 1 * MiB).error(), UploadError::TooLarge);
  EXPECT_EQ(ring.stats().fallback_cap_refusals, 2u);
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
  EXPECT_EQ(to_string(UploadError::TooLarge), "TooLarge");
}

// A frame that underestimated its size: the uploads that no longer fit its slot take the
// fallback route; the frame stays on the ring for the rest.
TEST_F(GpuTest, UploadsThatOverflowTheirSlotTakeTheFallbackRoute) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 256 * KiB, 7);
  VkCommandBuffer cmd = h.commands();
  StagingFrame frame = ring.begin(cmd, 100).value();  // a slot of MIN_SLOT_BYTES (64 KiB)
  EXPECT_EQ(detail::slot(ring, 0)->capacity, MIN_SLOT_BYTES);
  ASSERT_TRUE(h.upload(frame, 0, 60 * KiB));
  ASSERT_TRUE(h.upload(frame, 64 * KiB, 60 * KiB + 1));  // does not fit: one-off
  ASSERT_TRUE(h.upload(frame, 128 * KiB, 3000));         // fits behind the first
  EXPECT_EQ(frame.route(), Route::Ring);
  const Stats s = ring.stats();
  EXPECT_EQ(s.ring_full_fallbacks, 1u);
  EXPECT_EQ(s.oneoff_uploads, 1u);
  EXPECT_EQ(s.staged_uploads, 2u);
  h.submit(cmd, frame.finish(kAfterCopies).value());
  h.verify();
  EXPECT_EQ(checker.violations, 0u);
}

// begin(cmd) sizes a frame by what recent frames asked for. The first has no history: the
// smallest slot, and what does not fit goes by the fallback route; the second asks as much and
// gets a slot for all of it.
//
//   frame 1  begin(cmd) -> slot 64 KiB   [60 KiB staged ....]  200 KiB -> one-off buffer
//   frame 2  begin(cmd) -> slot 512 KiB  [60 KiB staged][200 KiB staged ........]
TEST_F(GpuTest, BeginWithoutASizeTakesTheSizeRecentFramesAskedFor) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 320 * KiB, 11);
  for (int n = 1; n <= 2; ++n) {
    VkCommandBuffer cmd = h.commands();
    StagingFrame frame = ring.begin(cmd).value();
    ASSERT_TRUE(h.upload(frame, 0, 60 * KiB));
    ASSERT_TRUE(h.upload(frame, 64 * KiB, 200 * KiB));
    EXPECT_EQ(frame.route(), Route::Ring);
    const Stats s = ring.stats();
    EXPECT_EQ(s.oneoff_uploads, 1u) << "frame " << n;  // frame 1's only
    EXPECT_EQ(s.staged_uploads, n == 1 ? 1u : 3u) << "frame " << n;
    h.submit(cmd, frame.finish(kAfterCopies).value());
    h.verify();
  }
  EXPECT_EQ(checker.violations, 0u);
}

// begin(cmd) sizes a frame by what recent frames asked for, but never above the largest slot: a
// frame that sent more than that through one-off buffers does not make the next frames TooLarge.
//
//   frame 1  begin(cmd) -> slot 64 KiB    2 MiB -> one-off buffer (asked for: 2 MiB)
//   frame 2  begin(cmd) -> slot 1 MiB     (asked for 2 MiB, the largest slot given)
TEST_F(GpuTest, BeginWithoutASizeNeverAsksForMoreThanTheLargestSlot) {
  RingConfig config;
  config.strategy = StagingRingConfig{.max_slot_bytes = 1 * MiB};
  config.policy = ExhaustionPolicy::Defer;
  config.fallback_max_oneoff_bytes = 4 * MiB;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, 4 * MiB, 12);
  for (uint64_t n = 1; n <= 3; ++n) {
    VkCommandBuffer cmd = h.commands();
    Expected<StagingFrame, UploadError> frame = ring.begin(cmd);
    ASSERT_TRUE(frame) << "frame " << n << ": " << to_string(frame.error());
    EXPECT_EQ(frame->route(), Route::Ring);
    ASSERT_TRUE(
        h.upload(*frame, n == 1 ? 0 : 2 * MiB + n * 256 * KiB, n == 1 ? 2 * MiB : 200 * KiB));
    const RetirementPoint point = frame->finish(kAfterCopies).value();
    h.submit(cmd, point);
    ASSERT_TRUE(ring.wait(point, std::chrono::seconds(10)));
  }
  const Stats s = ring.stats();
  EXPECT_EQ(s.begin_refused, 0u);
  EXPECT_EQ(s.oneoff_uploads, 1u);  // frame 1's 2 MiB
  EXPECT_EQ(s.staged_uploads, 2u);
  h.verify();
}

// A point converts to what its submission signals: submit_info() with every stage.
TEST(RetirementPointTest, ConvertsToTheSemaphoreSubmitInfoThatSignalsIt) {
  const RetirementPoint point{reinterpret_cast<VkSemaphore>(uintptr_t{0x5eed}), 42};
  const VkSemaphoreSubmitInfo signal = point;
  EXPECT_EQ(signal.sType, VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO);
  EXPECT_EQ(signal.pNext, nullptr);
  EXPECT_EQ(signal.semaphore, point.semaphore);
  EXPECT_EQ(signal.value, 42u);
  EXPECT_EQ(signal.stageMask, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
  EXPECT_EQ(signal.deviceIndex, 0u);
}

// Images take the fallback route through one-off buffers (vkCmdUpdateBuffer cannot write images).
TEST_F(GpuTest, ImagesOnTheFallbackRouteUseOneOffBuffers) {
  Ring ring = Ring::create(gpu->ring_device()).value();
  TestImage image = gpu->make_image(VK_FORMAT_R8G8B8A8_UNORM, {16, 8, 1}, 1, 1);
  TestBuffer back = gpu->make_buffer(16 * 8 * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  std::mt19937_64 rng(8);
  const std::vector<std::byte> texels = random_bytes(rng, 16 * 8 * 4);
  VkCommandBuffer cmd = gpu->begin_commands();
  StagingFrame frame = ring.begin_fallback(cmd);
  ASSERT_TRUE(frame.upload(ImageRegion{.image = image.image,
                                       .format = VK_FORMAT_R8G8B8A8_UNORM,
                                       .extent = {16, 8, 1},
                                       .new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL},
                           texels));
  EXPECT_EQ(ring.stats().oneoff_uploads, 1u);
  const RetirementPoint point =
      frame
          .finish({.stages = VK_PIPELINE_STAGE_2_COPY_BIT, .access = VK_ACCESS_2_TRANSFER_READ_BIT})
          .value();
  const uint64_t offsets[] = {0};
  gpu->record_image_readback(cmd, image, VK_IMAGE_ASPECT_COLOR_BIT, back.buffer, offsets);
  const VkSemaphoreSubmitInfo signal = point.submit_info();
  gpu->submit(cmd, {}, {&signal, 1});
  gpu->wait(point.semaphore, point.value);
  EXPECT_EQ(first_difference(texels, {back.mapped, texels.size()}), -1);
  gpu->free_commands(cmd);
  gpu->destroy(image);
  gpu->destroy(back);
}

}  // namespace
}  // namespace staging::vulkan::test
