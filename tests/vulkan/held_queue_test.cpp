// The queue is held: a submission waits on a timeline value only the host signals, and every frame
// submitted behind it waits on it too, so nothing the ring hands out retires. The host keeps
// producing frames. The validation layer cannot see host writes into memory a queued copy still
// reads, so the StagingChecker watches every staging range against the semaphore's real value
// while the ring fills up. Each exhaustion policy does what it is configured to do:
//
//   slots:   [InFlight #1] [InFlight #2] [InFlight #3]     frame 4 finds every slot in flight
//   Defer    -> begin() answers Refused(RingFull) at once; the frame's uploads wait
//   Fallback -> the frame takes the fallback route (update-buffer, one-off buffers) up to the cap;
//               beyond the cap the upload is refused and retried after the release
//   Wait     -> begin() waits up to wait_timeout, then answers Timeout naming point 1 (never
//               hangs); once the host releases the queue, a waiting begin() gets a slot
//
// After the release every byte of the destination must equal the model (uploads applied in the
// order they were recorded, which is the queue's order).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "harness.hpp"

namespace staging::vulkan::test {
namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t kDst = 4 * 1024 * KiB;

class HeldQueue : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (gpu == nullptr) return;
    hold = gpu->make_timeline(0);
  }
  // The gate: a submission that waits for the host. Frames behind it wait for it as well.
  void hold_queue() {
    const VkSemaphoreSubmitInfo wait = held();
    gpu->submit(VK_NULL_HANDLE, {&wait, 1}, {});
  }
  void TearDown() override {
    if (gpu != nullptr) {
      release();
      vkDeviceWaitIdle(gpu->device);
      gpu->destroy(hold);
    }
    GpuTest::TearDown();
  }
  VkSemaphoreSubmitInfo held() const {
    return {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
            .semaphore = hold,
            .value = 1,
            .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
  }
  void release() {
    if (released) return;
    released = true;
    const VkSemaphoreSignalInfo info{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = hold, .value = 1};
    ASSERT_EQ(vkSignalSemaphore(gpu->device, &info), VK_SUCCESS);
  }

  // One frame of 1–3 random uploads (random offsets, sizes 1 byte .. 256 KiB); returns the
  // uploads refused (for a retry after the release).
  struct Pending {
    uint64_t offset, size;
  };
  void frame_of_uploads(StagingFrame& frame, Harness& h, std::vector<Pending>& refused) {
    const int count = 1 + static_cast<int>(h.rng() % 3);
    std::vector<Pending> mine;
    for (int i = 0; i < count; ++i) {
      const uint64_t size = 1 + h.rng() % (256 * KiB);
      uint64_t offset = h.rng() % (kDst - size);
      if (h.rng() % 2 == 0) offset &= ~uint64_t{3};
      const bool overlaps = std::any_of(mine.begin(), mine.end(), [&](const Pending& p) {
        return p.offset < offset + size && offset < p.offset + p.size;
      });
      if (overlaps) continue;
      mine.push_back({offset, size});
      const auto done = h.upload(frame, offset, size, h.rng() % 2 == 0);
      if (!done && done.error() != UploadError::OverlapsEarlierUpload) {
        EXPECT_EQ(done.error(), UploadError::FallbackCapReached);
        refused.push_back({offset, size});
      }
    }
  }
  void submit_held(Harness& h, VkCommandBuffer cmd, const RetirementPoint& point) {
    const VkSemaphoreSubmitInfo wait = held();
    h.submit(cmd, point, {&wait, 1});
  }
  // After the release: uploads what was refused, then compares every byte.
  void retry_and_verify(Ring& ring, Harness& h, const std::vector<Pending>& refused) {
    ASSERT_TRUE(ring.wait_idle(std::chrono::seconds(30)));
    EXPECT_EQ(ring.in_flight(), 0u);
    for (const Pending& p : refused) {  // one frame each: refused uploads may overlap
      VkCommandBuffer cmd = h.commands();
      StagingFrame frame = ring.begin(cmd, p.size + 4096).value();
      EXPECT_EQ(frame.route(), Route::Ring);
      ASSERT_TRUE(h.upload(frame, p.offset, p.size));
      const RetirementPoint point = frame.finish(kAfterCopies).value();
      h.submit(cmd, point);
      ASSERT_TRUE(ring.wait(point, std::chrono::seconds(30)));
    }
    h.verify();
  }

  VkSemaphore hold = VK_NULL_HANDLE;
  bool released = false;
};

TEST_F(HeldQueue, DeferRefusesAtOnceWhileEverySlotIsInFlight) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.policy = ExhaustionPolicy::Defer;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, kDst, test_seed(30));
  std::vector<Pending> refused;
  hold_queue();
  for (int n = 1; n <= 8; ++n) {
    VkCommandBuffer cmd = h.commands();
    const Expected<StagingFrame, UploadError> frame = ring.begin(cmd, 1024 * KiB);
    if (n <= 3) {
      ASSERT_TRUE(frame) << "frame " << n;
      StagingFrame f = std::move(const_cast<StagingFrame&>(*frame));
      frame_of_uploads(f, h, refused);
      submit_held(h, cmd, f.finish(kAfterCopies).value());
      continue;
    }
    ASSERT_FALSE(frame) << "frame " << n << " got a slot while the queue is held";
    EXPECT_EQ(frame.error(), UploadError::RingFull);
    refused.push_back({h.rng() % (kDst - 4096), 1 + h.rng() % 4096});  // this frame's upload
  }
  for (std::size_t i = 0; i < detail::slot_count(ring); ++i)
    EXPECT_EQ(detail::slot(ring, i)->state, SlotState::InFlight);
  EXPECT_EQ(ring.in_flight(), 3u);
  const Stats s = ring.stats();
  EXPECT_EQ(s.begin_refused, 5u);
  EXPECT_EQ(std::get<StagingStats>(s.strategy).refusals_all_in_flight, 5u);
  EXPECT_EQ(s.points_retired, 0u);

  release();
  retry_and_verify(ring, h, refused);
  EXPECT_EQ(checker.violations, 0u);
  EXPECT_GT(checker.writes, 3u);
}

TEST_F(HeldQueue, FallbackDeliversThroughTheFallbackRouteUpToItsCap) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.policy = ExhaustionPolicy::Fallback;
  config.fallback_max_oneoff_bytes = 512 * KiB;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, kDst, test_seed(31));
  std::vector<Pending> refused;
  hold_queue();
  for (int n = 1; n <= 10; ++n) {
    VkCommandBuffer cmd = h.commands();
    StagingFrame frame = ring.begin(cmd, 1024 * KiB).value();
    EXPECT_EQ(frame.route(), n <= 3 ? Route::Ring : Route::Fallback) << "frame " << n;
    if (n > 3) {
      EXPECT_EQ(frame.refusal(), UploadError::RingFull);
      // One small aligned upload (vkCmdUpdateBuffer) and one 200 KiB unaligned one (one-off):
      // the third fallback frame's one-off no longer fits under the 512 KiB cap.
      ASSERT_TRUE(h.upload(frame, 4 * static_cast<uint64_t>(n) * 1024, 1024));
      const uint64_t at = 1024 * KiB + static_cast<uint64_t>(n) * 256 * KiB + 1;
      if (const auto done = h.upload(frame, at, 200 * KiB); !done) {
        EXPECT_EQ(done.error(), UploadError::FallbackCapReached);
        refused.push_back({at, 200 * KiB});
      }
    }
    frame_of_uploads(frame, h, refused);
    submit_held(h, cmd, frame.finish(kAfterCopies).value());
  }
  const Stats s = ring.stats();
  EXPECT_EQ(s.frames_fallback, 7u);
  EXPECT_GE(s.update_buffer_uploads, 7u);
  EXPECT_GE(s.oneoff_uploads, 2u);
  EXPECT_GE(s.fallback_cap_refusals, 1u);
  EXPECT_LE(s.oneoff_peak_bytes, 512 * KiB);  // the cap holds
  EXPECT_EQ(s.points_retired, 0u);
  EXPECT_FALSE(refused.empty());

  release();
  retry_and_verify(ring, h, refused);
  EXPECT_EQ(ring.stats().oneoff_live_bytes, 0u);
  EXPECT_EQ(checker.violations, 0u);
}

TEST_F(HeldQueue, WaitTimesOutNamingTheOldestPointThenSucceedsOnceReleased) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.policy = ExhaustionPolicy::Wait;
  // Long enough for a loaded CPU device to run the released frames once the queue is released;
  // the first begin() below waits all of it out.
  config.wait_timeout = std::chrono::milliseconds(3000);
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, kDst, test_seed(32));
  std::vector<Pending> refused;
  RetirementPoint first;
  hold_queue();
  for (int n = 1; n <= 3; ++n) {
    VkCommandBuffer cmd = h.commands();
    StagingFrame frame = ring.begin(cmd, 512 * KiB).value();
    frame_of_uploads(frame, h, refused);
    const RetirementPoint point = frame.finish(kAfterCopies).value();
    if (n == 1) first = point;
    submit_held(h, cmd, point);
  }
  VkCommandBuffer cmd = h.commands();
  const Expected<StagingFrame, UploadError> timed_out = ring.begin(cmd, 512 * KiB);
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error(), UploadError::Timeout);
  EXPECT_EQ(ring.oldest_in_flight(), first);  // the stalled point is named
  EXPECT_EQ(ring.stats().begin_timeouts, 1u);

  // The host releases the queue; begin() waits for the oldest frame and gets its slot. Without
  // validation the release comes from another thread while begin() is already waiting. With it,
  // the release comes first, on this thread: the validation layer 1.3.239 times out internally
  // ("UNASSIGNED-VkSemaphore-state-timeout ... most likely a validation bug", VVL issue #4649,
  // fixed in 2024) when a timeline semaphore is signalled on the host while another thread is
  // inside vkWaitSemaphores — legal Vulkan, but not testable under that layer.
  std::thread releaser;
  if (gpu->validation) {
    release();
  } else {
    releaser = std::thread([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      release();
    });
  }
  Expected<StagingFrame, UploadError> frame = ring.begin(cmd, 512 * KiB);
  if (releaser.joinable()) releaser.join();
  ASSERT_TRUE(frame) << to_string(frame.error());
  EXPECT_EQ(frame->route(), Route::Ring);
  frame_of_uploads(*frame, h, refused);
  h.submit(cmd, frame->finish(kAfterCopies).value());
  EXPECT_GE(ring.stats().waits, 1u);
  EXPECT_TRUE(refused.empty());
  retry_and_verify(ring, h, refused);
  EXPECT_EQ(checker.violations, 0u);
}

// A byte ring under Wait gives up at once when the room an upload needs is held by the frame still
// being recorded (its own bytes), even while an earlier frame is held in flight: waiting for the
// earlier frame could never free enough. Under RingConfig's Fallback policy the upload then takes
// the fallback route.
//
//   frame A (256 KiB, held in flight)   [ A A - - - - - - - - - - - - - - ]  1 MiB
//   frame B (700 KiB, being recorded)   [ A A B B B B B B B B B B B - - - ]
//   frame B (400 KiB more)              needs A's and B's own bytes: fallback, well under 5 s
TEST_F(HeldQueue, ByteRingWaitGivesUpAtOnceWhenTheRoomIsHeldByTheFrameBeingRecorded) {
  StagingChecker checker(*gpu);
  RingConfig config;
  config.strategy = ByteRingConfig{.capacity = 1024 * KiB,
                                   .policy = ExhaustionPolicy::Wait,
                                   .wait_timeout = std::chrono::seconds(5)};
  config.policy = ExhaustionPolicy::Fallback;
  config.observer = &checker;
  Ring ring = Ring::create(gpu->ring_device(), config).value();
  Harness h(*gpu, kDst, test_seed(33));
  hold_queue();
  VkCommandBuffer first = h.commands();
  StagingFrame a = ring.begin(first, 0).value();
  ASSERT_TRUE(h.upload(a, 0, 256 * KiB));
  submit_held(h, first, a.finish(kAfterCopies).value());

  VkCommandBuffer cmd = h.commands();
  StagingFrame b = ring.begin(cmd, 0).value();
  ASSERT_TRUE(h.upload(b, 256 * KiB, 700 * KiB));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.upload(b, 1024 * KiB, 400 * KiB));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  const Stats s = ring.stats();
  EXPECT_EQ(s.ring_full_fallbacks, 1u);
  EXPECT_EQ(s.oneoff_uploads, 1u);
  EXPECT_EQ(s.staged_uploads, 2u);
  submit_held(h, cmd, b.finish(kAfterCopies).value());

  release();
  retry_and_verify(ring, h, {});
  EXPECT_EQ(checker.violations, 0u);
}

}  // namespace
}  // namespace staging::vulkan::test
