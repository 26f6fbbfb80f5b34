// StagingRing: the slot policy, driven with a fake allocator and fences fired by hand.
//
// Sketch notation: one box per slot, "state capacity #buffer-id".
//   [Ready 64K #1] [InFlight 64K #2] [Empty]
#include "staging/detail/core/staging_ring.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "staging/testing/fake_slot_allocator.hpp"

namespace staging {
namespace {

using testing::FakeBuffer;
using testing::FakeSlotAllocator;

constexpr uint64_t K = 1024;

struct RingTest : ::testing::Test {
  FakeSlotAllocator allocator;
  std::vector<FenceToken> in_flight;  // what the fake "GPU" will signal, oldest first

  StagingRing<FakeBuffer> ring = make(StagingRingConfig{});

  StagingRing<FakeBuffer> make(StagingRingConfig config) {
    return std::move(StagingRing<FakeBuffer>::create(allocator, config)).value();
  }

  // begin + finish, keeping the token pending in `in_flight`; returns the slot index.
  std::size_t submit_frame(uint64_t needed) {
    SlotLease lease = std::move(ring.begin(needed)).value();
    const std::size_t slot = lease.slot();
    in_flight.push_back(std::move(ring.finish(std::move(lease))).value());
    return slot;
  }
  uint64_t buffer_id(std::size_t slot) { return ring.buffer(slot) ? ring.buffer(slot)->id() : 0; }
  std::vector<SlotState> states() {
    std::vector<SlotState> out;
    for (std::size_t i = 0; i < ring.slot_count(); ++i)
      out.push_back(ring.state(i));
    return out;
  }
};

using S = SlotState;

TEST(StagingRingConfig, InvalidConfigurationsAreRejected) {
  FakeSlotAllocator allocator;
  EXPECT_EQ(StagingRing<FakeBuffer>::create(allocator, {.slots = 0}).error(), CreateError::NoSlots);
  EXPECT_EQ(StagingRing<FakeBuffer>::create(allocator, {.min_slot_bytes = 3000}).error(),
            CreateError::MinNotPowerOfTwo);
  EXPECT_EQ(StagingRing<FakeBuffer>::create(allocator, {.min_slot_bytes = 0}).error(),
            CreateError::MinNotPowerOfTwo);
  EXPECT_EQ(
      StagingRing<FakeBuffer>::create(allocator, {.min_slot_bytes = 4096, .max_slot_bytes = 2048})
          .error(),
      CreateError::MaxBelowMin);
  EXPECT_TRUE(StagingRing<FakeBuffer>::create(allocator, {.slots = 8, .max_slot_bytes = 5000000}));
}

// What create() accepts is bounded: no exception, no bookkeeping of gigabytes, no slot size whose
// totals could wrap. The bounds themselves are accepted.
TEST(StagingRingConfig, SlotCountsAndSlotSizesAreBounded) {
  FakeSlotAllocator allocator;
  const auto create = [&](StagingRingConfig c) {
    return StagingRing<FakeBuffer>::create(allocator, c);
  };
  EXPECT_EQ(create({.slots = SIZE_MAX}).error(), CreateError::TooManySlots);
  EXPECT_EQ(create({.slots = std::size_t{1} << 30}).error(), CreateError::TooManySlots);
  EXPECT_EQ(create({.slots = STAGING_SLOTS_LIMIT + 1}).error(), CreateError::TooManySlots);
  EXPECT_TRUE(create({.slots = STAGING_SLOTS_LIMIT}));
  constexpr uint64_t two63 = uint64_t{1} << 63;
  EXPECT_EQ(create({.min_slot_bytes = two63, .max_slot_bytes = two63}).error(),
            CreateError::SlotTooLarge);
  EXPECT_EQ(create({.min_slot_bytes = two63}).error(), CreateError::MaxBelowMin);
  EXPECT_EQ(create({.max_slot_bytes = SLOT_BYTES_LIMIT + 1}).error(), CreateError::SlotTooLarge);
  EXPECT_EQ(create({.max_slot_bytes = UINT64_MAX}).error(), CreateError::SlotTooLarge);
  EXPECT_TRUE(create({.min_slot_bytes = SLOT_BYTES_LIMIT, .max_slot_bytes = SLOT_BYTES_LIMIT}));
  EXPECT_EQ(validate({.slots = 0, .min_slot_bytes = 3}).error(), CreateError::NoSlots);
  EXPECT_EQ(validate({.slots = 300, .min_slot_bytes = 3}).error(), CreateError::TooManySlots);
}

//   before: [Empty] [Empty] [Empty]
//   begin(10): [Recording 64K #1] [Empty] [Empty]     -- created on first use at MIN_SLOT_BYTES
TEST_F(RingTest, ANewRingCreatesNothingUntilTheFirstFrame) {
  EXPECT_EQ(states(), (std::vector<S>{S::Empty, S::Empty, S::Empty}));
  EXPECT_EQ(allocator.log().created, 0u);
  SlotLease lease = std::move(ring.begin(10)).value();
  EXPECT_EQ(states(), (std::vector<S>{S::Recording, S::Empty, S::Empty}));
  EXPECT_EQ(lease.capacity(), MIN_SLOT_BYTES);
  EXPECT_EQ(allocator.log().capacities, (std::vector<uint64_t>{MIN_SLOT_BYTES}));
}

TEST_F(RingTest, FirstUseCreatesAtTheNextPowerOfTwo) {
  SlotLease lease = std::move(ring.begin(300 * K)).value();
  EXPECT_EQ(lease.capacity(), 512 * K);
  EXPECT_EQ(ring.capacity(0), 512 * K);
}

//   Empty ─begin─► Recording ─finish─► InFlight ─signal─► Ready ─begin─► Recording
TEST_F(RingTest, AFrameWalksTheSlotThroughEveryState) {
  SlotLease lease = std::move(ring.begin(100)).value();
  EXPECT_EQ(ring.state(0), S::Recording);
  ASSERT_TRUE(lease.place(100, 4));
  FenceToken token = std::move(ring.finish(std::move(lease))).value();
  EXPECT_EQ(ring.state(0), S::InFlight);
  token.signal();
  EXPECT_EQ(ring.state(0), S::Ready);
  SlotLease again = std::move(ring.begin(100)).value();
  EXPECT_EQ(again.slot(), 0u);
  EXPECT_EQ(ring.state(0), S::Recording);
}

TEST_F(RingTest, SteadyStateReusesSlotsAndCreatesNothing) {
  for (int frame = 0; frame < 100; ++frame) {
    submit_frame(40 * K);
    if (in_flight.size() == 2) {  // two frames in flight, like a swapchain
      in_flight.front().signal();
      in_flight.erase(in_flight.begin());
    }
  }
  EXPECT_LE(allocator.log().created, STAGING_SLOTS);
  EXPECT_EQ(ring.stats().frames_finished, 100u);
  EXPECT_EQ(ring.stats().refusals(), 0u);
}

//   [InFlight #1] [InFlight #2] [InFlight #3]  begin ─► RingFull
TEST_F(RingTest, EverySlotInFlightIsRefused) {
  submit_frame(1);
  submit_frame(1);
  submit_frame(1);
  EXPECT_EQ(states(), (std::vector<S>{S::InFlight, S::InFlight, S::InFlight}));
  const auto refused = ring.begin(1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), UploadError::RingFull);
  EXPECT_EQ(ring.stats().refusals_all_in_flight, 1u);
  EXPECT_EQ(allocator.log().created, 3u);  // nothing created for the refused frame
}

// Frames finished with their timeline values: retire(completed) makes Ready exactly the slots
// whose value is reached — the same call, with the same value, as ByteRing::retire().
//   [InFlight @5] [InFlight @7] [InFlight @9]  retire(4) ─► none; retire(7) ─► slots 0 and 1
TEST_F(RingTest, RetireMakesReadyTheSlotsWhoseValueIsReached) {
  for (TimelineValue value : {5, 7, 9})
    ASSERT_TRUE(ring.finish(std::move(ring.begin(1)).value(), value));
  EXPECT_EQ(states(), (std::vector<S>{S::InFlight, S::InFlight, S::InFlight}));
  EXPECT_FALSE(ring.begin(1));
  EXPECT_EQ(ring.retire(4), 0u);
  EXPECT_EQ(ring.retire(7), 2u);
  EXPECT_EQ(states(), (std::vector<S>{S::Ready, S::Ready, S::InFlight}));
  EXPECT_EQ(ring.retire(6), 0u);  // the timeline never goes back: nothing changes
  // The frame that comes after the GPU caught up gets a slot; nothing was created for it.
  SlotLease lease = std::move(ring.begin(1)).value();
  EXPECT_EQ(lease.slot(), 0u);
  EXPECT_EQ(allocator.log().created, 3u);
  EXPECT_EQ(ring.retire(100), 1u);
  EXPECT_EQ(ring.state(2), S::Ready);
  EXPECT_EQ(ring.retire(100), 0u);  // retired once
}

// retire() keeps the highest completed value it was handed: a lower one later (a stale read of
// the queue's value) is treated as the highest, as ByteRing::retire() does — the timeline never
// goes back, so a frame finished at a value already reached is retired by it.
//   retire(10) ─► [Ready] [Empty] [Empty]
//   finish @8, @12 ─► [InFlight @8] [InFlight @12] [Empty]
//   retire(5) ─► taken as 10: [Ready] [InFlight @12] [Empty]
TEST_F(RingTest, RetireNeverGoesBackBelowTheHighestValueSeen) {
  ASSERT_TRUE(ring.finish(std::move(ring.begin(1)).value(), 3));
  EXPECT_EQ(ring.retire(10), 1u);
  ASSERT_TRUE(ring.finish(std::move(ring.begin(1)).value(), 8));
  ASSERT_TRUE(ring.finish(std::move(ring.begin(1)).value(), 12));
  EXPECT_EQ(states(), (std::vector<S>{S::InFlight, S::InFlight, S::Empty}));
  EXPECT_EQ(ring.retire(5), 1u);
  EXPECT_EQ(states(), (std::vector<S>{S::Ready, S::InFlight, S::Empty}));
  EXPECT_EQ(ring.retire(11), 0u);
  EXPECT_EQ(ring.retire(12), 1u);
}

// A value whose submission never happens is abandoned; a lost device fails what is in flight.
// Slots finished with a FenceToken are the token's: retire(), abandon() and fail_in_flight()
// leave them alone.
TEST_F(RingTest, TimelineFramesAreAbandonedByValueAndFailedByDeviceLoss) {
  ASSERT_TRUE(ring.finish(std::move(ring.begin(1)).value(), 3));
  ASSERT_TRUE(ring.finish(std::move(ring.begin(1)).value(), 4));
  const std::size_t pushed = submit_frame(1);  // a FenceToken frame
  EXPECT_EQ(ring.abandon(3), 1u);
  EXPECT_EQ(ring.abandon(3), 0u);
  EXPECT_EQ(ring.fail_in_flight(), 1u);
  EXPECT_EQ(ring.retire(100), 0u);
  EXPECT_EQ(states(), (std::vector<S>{S::Abandoned, S::Failed, S::InFlight}));
  EXPECT_EQ(pushed, 2u);
  EXPECT_TRUE(in_flight.front().signal());
  EXPECT_EQ(ring.state(2), S::Ready);
}

TEST_F(RingTest, FinishingWithAValueChecksTheLeaseAsFinishDoes) {
  EXPECT_EQ(ring.finish(SlotLease(), 1).error(), FinishError::Inactive);
  auto other = make(StagingRingConfig{});
  SlotLease foreign = std::move(other.begin(1)).value();
  EXPECT_EQ(ring.finish(std::move(foreign), 1).error(), FinishError::ForeignLease);
  EXPECT_TRUE(foreign.active());
}

TEST_F(RingTest, AFrameLargerThanMaxSlotBytesIsRefusedAsTooLarge) {
  const auto refused = ring.begin(MAX_SLOT_BYTES + 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), UploadError::TooLarge);
  EXPECT_EQ(ring.stats().refusals_too_large, 1u);
  EXPECT_EQ(allocator.log().created, 0u);
  EXPECT_TRUE(ring.begin(MAX_SLOT_BYTES));  // exactly the max still gets a slot
  EXPECT_FALSE(ring.begin(UINT64_MAX));
}

//   [Ready 64K #1] [InFlight 64K #2] [Empty]   begin(100K)
//   ─► [Recording 128K #3] [InFlight 64K #2] [Empty]   grown: only the Ready slot, #2 untouched
TEST_F(RingTest, GrowthReplacesOnlyAReadySlotNeverOneInFlight) {
  const std::size_t a = submit_frame(1);
  const std::size_t b = submit_frame(1);
  in_flight.front().signal();  // slot a done
  const uint64_t b_id = buffer_id(b);
  SlotLease lease = std::move(ring.begin(100 * K)).value();
  EXPECT_EQ(lease.slot(), a);
  EXPECT_EQ(lease.capacity(), 128 * K);
  EXPECT_EQ(buffer_id(b), b_id);
  EXPECT_EQ(ring.capacity(b), 64 * K);
  EXPECT_EQ(ring.state(b), S::InFlight);
  EXPECT_EQ(ring.stats().slots_grown, 1u);
  EXPECT_EQ(ring.state(2), S::Empty);        // growing the Ready slot beat creating a third one
  EXPECT_EQ(allocator.log().destroyed, 1u);  // the old 64K buffer of slot a
}

//   [Ready 64K #1] [Ready 256K #2] [Ready 128K #3]  begin(100K) ─► #3, the smallest that fits
TEST_F(RingTest, TheSmallestReadySlotThatFitsIsPicked) {
  SlotLease a = std::move(ring.begin(1)).value();
  SlotLease b = std::move(ring.begin(200 * K)).value();
  SlotLease c = std::move(ring.begin(100 * K)).value();
  a = SlotLease{};
  b = SlotLease{};
  c = SlotLease{};
  SlotLease pick = std::move(ring.begin(100 * K)).value();
  EXPECT_EQ(pick.slot(), 2u);
  EXPECT_EQ(allocator.log().created, 3u);
}

TEST_F(RingTest, AFailedGrowthKeepsTheOldBufferAndTheSlotReady) {
  ring = make({.slots = 1});
  submit_frame(1);
  in_flight.front().signal();
  const uint64_t old_id = buffer_id(0);
  allocator.fail_next(1);
  const auto refused = ring.begin(1024 * K);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), UploadError::AllocationFailed);
  EXPECT_EQ(ring.last_alloc_error(), AllocError::OutOfMemory);
  EXPECT_EQ(ring.state(0), S::Ready);
  EXPECT_EQ(ring.capacity(0), 64 * K);
  EXPECT_EQ(buffer_id(0), old_id);
  EXPECT_TRUE(ring.begin(1));  // a small frame still fits the old buffer
}

//   [InFlight #1] ─token dropped unfired─► [Abandoned #1] ─begin─► [Recording #2] (replaced)
TEST_F(RingTest, AnAbandonedFramesSlotIsReplacedOnTheNextPick) {
  ring = make({.slots = 1});
  submit_frame(1);
  const uint64_t old_id = buffer_id(0);
  in_flight.clear();  // the caller dropped its command buffer: token destroyed unfired
  EXPECT_EQ(ring.state(0), S::Abandoned);
  SlotLease lease = std::move(ring.begin(1)).value();
  EXPECT_NE(buffer_id(0), old_id);
  EXPECT_EQ(ring.stats().slots_replaced, 1u);
  EXPECT_EQ(ring.stats().abandoned_seen, 1u);
  EXPECT_EQ(allocator.log().destroyed, 1u);
}

// A pending token assigned over is dropped unfired too: its slot is Abandoned at once, but its
// buffer is released only when the slot is next picked and given a fresh one — never before.
//   [InFlight #1] ─token assigned over─► [Abandoned #1] (kept) ─begin─► [Recording #2] (replaced)
TEST_F(RingTest, ATokenAssignedOverAbandonsItsSlotWhichIsReplacedOnlyWhenPicked) {
  ring = make({.slots = 1});
  submit_frame(1);
  const uint64_t old_id = buffer_id(0);
  in_flight.front() = FenceToken{};  // the frame's encoder was dropped, not submitted
  EXPECT_FALSE(in_flight.front().pending());
  EXPECT_EQ(ring.state(0), S::Abandoned);
  EXPECT_EQ(buffer_id(0), old_id);  // nothing released yet
  EXPECT_EQ(allocator.log().destroyed, 0u);
  SlotLease lease = std::move(ring.begin(1)).value();
  EXPECT_EQ(lease.slot(), 0u);
  EXPECT_NE(buffer_id(0), old_id);
  EXPECT_EQ(allocator.log().destroyed, 1u);
  EXPECT_EQ(ring.stats().slots_replaced, 1u);
  EXPECT_EQ(ring.stats().abandoned_seen, 1u);
}

TEST_F(RingTest, AReplacedSlotKeepsAtLeastItsOldCapacity) {
  ring = make({.slots = 1});
  submit_frame(300 * K);  // 512K
  in_flight.front().abandon();
  SlotLease lease = std::move(ring.begin(1)).value();
  EXPECT_EQ(lease.capacity(), 512 * K);
}

TEST_F(RingTest, AFailedSlotIsReplacedOnTheNextPick) {
  ring = make({.slots = 1});
  submit_frame(1);
  in_flight.front().fail();  // lost device / failed mapping
  EXPECT_EQ(ring.state(0), S::Failed);
  ASSERT_TRUE(ring.begin(1));
  EXPECT_EQ(ring.stats().failed_seen, 1u);
  EXPECT_EQ(ring.stats().slots_replaced, 1u);
}

//   [Empty] ─begin, allocation fails─► [Failed] ─next frame, allocation works─► [Recording #1]
TEST_F(RingTest, AFailedCreationLeavesTheSlotFailedAndTheNextFrameRecovers) {
  ring = make({.slots = 1});
  allocator.fail_next(1, AllocError::DeviceLost);
  const auto refused = ring.begin(1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), UploadError::AllocationFailed);
  EXPECT_EQ(ring.last_alloc_error(), AllocError::DeviceLost);
  EXPECT_EQ(ring.state(0), S::Failed);
  EXPECT_EQ(ring.buffer(0), nullptr);
  SlotLease lease = std::move(ring.begin(1)).value();
  EXPECT_EQ(ring.state(0), S::Recording);
  EXPECT_EQ(ring.stats().refusals_allocation_failed, 1u);
}

TEST_F(RingTest, AFailedReplacementDropsTheOldBufferAndLeavesTheSlotFailed) {
  ring = make({.slots = 1});
  submit_frame(1);
  in_flight.front().abandon();
  allocator.fail_next(1);
  ASSERT_FALSE(ring.begin(1));
  EXPECT_EQ(ring.state(0), S::Failed);
  EXPECT_EQ(ring.capacity(0), 0u);
  EXPECT_EQ(ring.stats().bytes_allocated, 0u);
}

TEST_F(RingTest, FinishRejectsInactiveAndForeignLeases) {
  EXPECT_EQ(ring.finish(SlotLease{}).error(), FinishError::Inactive);
  FakeSlotAllocator other_allocator;
  auto other = std::move(StagingRing<FakeBuffer>::create(other_allocator)).value();
  SlotLease foreign = std::move(other.begin(1)).value();
  EXPECT_EQ(ring.finish(std::move(foreign)).error(), FinishError::ForeignLease);
  EXPECT_TRUE(foreign.active());  // NOLINT(bugprone-use-after-move): a refused finish keeps it
  EXPECT_TRUE(other.finish(std::move(foreign)));
}

TEST_F(RingTest, StatsCountPlacementsBytesAndAllocations) {
  SlotLease lease = std::move(ring.begin(1000)).value();
  ASSERT_TRUE(lease.place(100, 4));
  ASSERT_TRUE(lease.place(200, 4));
  ASSERT_FALSE(lease.place(MIN_SLOT_BYTES, 4));
  FenceToken token = std::move(ring.finish(std::move(lease))).value();
  const StagingStats& s = ring.stats();
  EXPECT_EQ(s.frames_begun, 1u);
  EXPECT_EQ(s.frames_finished, 1u);
  EXPECT_EQ(s.placements, 2u);
  EXPECT_EQ(s.bytes_placed, 300u);
  EXPECT_EQ(s.placements_refused, 1u);
  EXPECT_EQ(s.slots_created, 1u);
  EXPECT_EQ(s.bytes_allocated, MIN_SLOT_BYTES);
  EXPECT_EQ(s.peak_bytes_allocated, MIN_SLOT_BYTES);
  EXPECT_NE(format_stats(s).find("frames begun"), std::string::npos);
  token.signal();
}

TEST_F(RingTest, PeakBytesCountTheOldAndNewBufferDuringGrowth) {
  ring = make({.slots = 1});
  SlotLease small = std::move(ring.begin(1)).value();
  small = SlotLease{};
  SlotLease big = std::move(ring.begin(256 * K)).value();
  EXPECT_EQ(ring.stats().bytes_allocated, 256 * K);
  EXPECT_EQ(ring.stats().peak_bytes_allocated, 256 * K + 64 * K);
  EXPECT_EQ(allocator.log().peak_live_bytes, 256 * K + 64 * K);
}

TEST_F(RingTest, ConcurrentRecordingFramesGetDistinctSlots) {
  SlotLease a = std::move(ring.begin(1)).value();
  SlotLease b = std::move(ring.begin(1)).value();
  SlotLease c = std::move(ring.begin(1)).value();
  EXPECT_NE(a.slot(), b.slot());
  EXPECT_NE(b.slot(), c.slot());
  EXPECT_NE(a.slot(), c.slot());
  EXPECT_EQ(ring.begin(1).error(), UploadError::RingFull);
}

TEST_F(RingTest, ThePolicyHoldsForAnyNumberOfSlots) {
  ring = make({.slots = 5});
  for (int i = 0; i < 5; ++i)
    submit_frame(1);
  EXPECT_EQ(ring.begin(1).error(), UploadError::RingFull);
  in_flight[3].signal();
  EXPECT_EQ(std::move(ring.begin(1)).value().slot(), 3u);
}

// A moved-from ring: begin() aborts with a message, finish() answers ForeignLease (the lease
// belongs to the ring it moved to), per-slot queries abort; the moved-to ring works on.
TEST_F(RingTest, AMovedFromRingIsACheckedPrecondition) {
  SlotLease lease = std::move(ring.begin(1)).value();
  StagingRing<FakeBuffer> moved = std::move(ring);
  StagingRing<FakeBuffer>& old = ring;  // NOLINT(bugprone-use-after-move): the misuse under test
  EXPECT_EQ(old.slot_count(), 0u);
  EXPECT_EQ(old.finish(std::move(lease)).error(), FinishError::ForeignLease);
  EXPECT_DEATH((void)old.begin(1), "StagingRing::begin\\(\\) on a ring that was moved from");
  EXPECT_DEATH((void)old.state(0), "slot index out of range");
  EXPECT_TRUE(moved.finish(std::move(lease)));
  StagingRing<FakeBuffer> assigned = make(StagingRingConfig{});
  assigned = std::move(moved);
  EXPECT_DEATH((void)moved.begin(1), "moved from");  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(assigned.begin(1));
}

// min_slot_bytes == max_slot_bytes: every slot has that one size; a frame of exactly it fits, one
// byte more is TooLarge.
TEST(StagingRingConfig, OneSlotSizeWhenMinEqualsMax) {
  FakeSlotAllocator allocator;
  auto ring =
      std::move(StagingRing<FakeBuffer>::create(
                    allocator, {.slots = 2, .min_slot_bytes = 4096, .max_slot_bytes = 4096}))
          .value();
  SlotLease whole = std::move(ring.begin(4096)).value();
  EXPECT_EQ(whole.capacity(), 4096u);
  EXPECT_EQ(ring.begin(4097).error(), UploadError::TooLarge);
  SlotLease empty = std::move(ring.begin(0)).value();
  EXPECT_EQ(empty.capacity(), 4096u);
}

//   [Ready 64K] [Ready 128K] [Empty]   begin(64K): the 64K slot fits exactly and is the smallest
//   that fits — taken as it is (not grown, not the larger one).
TEST_F(RingTest, AReadySlotOfExactlyTheNeededSizeIsTakenBeforeALargerOne) {
  SlotLease a = std::move(ring.begin(1)).value();
  SlotLease b = std::move(ring.begin(100 * K)).value();
  ASSERT_EQ(a.slot(), 0u);
  ASSERT_EQ(b.slot(), 1u);
  ASSERT_EQ(b.capacity(), 128 * K);
  a = SlotLease{};
  b = SlotLease{};
  SlotLease exact = std::move(ring.begin(64 * K)).value();
  EXPECT_EQ(exact.slot(), 0u);
  EXPECT_EQ(exact.capacity(), 64 * K);
  EXPECT_EQ(ring.stats().slots_grown, 0u);
  EXPECT_EQ(ring.stats().slots_created, 2u);
}

//   [Ready 64K] [Ready 128K] [Empty]   begin(200K): no Ready slot fits; the largest Ready one
//   (128K) is grown to 256K, the 64K one is left as it is.
TEST_F(RingTest, TheLargestTooSmallReadySlotIsGrown) {
  SlotLease a = std::move(ring.begin(1)).value();
  SlotLease b = std::move(ring.begin(100 * K)).value();
  a = SlotLease{};
  b = SlotLease{};
  SlotLease grown = std::move(ring.begin(200 * K)).value();
  EXPECT_EQ(grown.slot(), 1u);
  EXPECT_EQ(grown.capacity(), 256 * K);
  EXPECT_EQ(ring.capacity(0), 64 * K);
  EXPECT_EQ(ring.stats().slots_grown, 1u);
}

//   [Ready 64K] [Abandoned 64K] [Recording]   begin(100K): growing the Ready slot comes before
//   replacing the Abandoned one (step 2 before step 3).
TEST_F(RingTest, AReadySlotIsGrownBeforeAnAbandonedOneIsReplaced) {
  SlotLease a = std::move(ring.begin(1)).value();
  SlotLease b = std::move(ring.begin(1)).value();
  SlotLease c = std::move(ring.begin(1)).value();
  { FenceToken dropped = std::move(ring.finish(std::move(b))).value(); }  // slot 1 Abandoned
  a = SlotLease{};                                                        // slot 0 Ready
  ASSERT_EQ(ring.state(1), SlotState::Abandoned);
  SlotLease big = std::move(ring.begin(100 * K)).value();
  EXPECT_EQ(big.slot(), 0u);
  EXPECT_EQ(ring.stats().slots_grown, 1u);
  EXPECT_EQ(ring.stats().slots_replaced, 0u);
  EXPECT_EQ(ring.state(1), SlotState::Abandoned);
}

}  // namespace
}  // namespace staging
