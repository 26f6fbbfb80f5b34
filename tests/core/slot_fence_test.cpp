// FenceToken / SlotFence: the one-shot signal that returns an InFlight slot to Ready, and the
// generation that keeps a late signal from an old frame away from a newer one (invariant I3).
#include <gtest/gtest.h>

#include <thread>

#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

namespace staging {
namespace {

using testing::FakeBuffer;
using testing::FakeSlotAllocator;

// A buffer type for the probe below.
struct ProbeBuffer {
  [[nodiscard]] uint64_t capacity() const noexcept { return 0; }
};

}  // namespace

// A test-only access point to the fence's private transitions: SlotFence and FenceToken trust
// every StagingRing<Buffer>, and this specialisation for a buffer type no ring uses lets a test
// build what the public API never produces — a pending token of an older generation, as a late
// duplicate signal would be — to prove that the fence itself refuses it.
template <>
class StagingRing<ProbeBuffer> {
 public:
  static void set(SlotFence& fence, uint64_t generation, SlotState state) {
    fence.reset(generation, state);
  }
  static FenceToken token(std::shared_ptr<SlotFence> fence, uint64_t generation) {
    return FenceToken(std::move(fence), generation, 0);
  }
  static SlotLease lease(std::shared_ptr<SlotFence> fence, uint64_t generation) {
    return SlotLease(std::move(fence), generation, 0, 64);
  }
};

namespace {

using Probe = StagingRing<ProbeBuffer>;

constexpr StagingRingConfig kOneSlot{.slots = 1, .min_slot_bytes = 256, .max_slot_bytes = 1024};

struct FenceTest : ::testing::Test {
  FakeSlotAllocator allocator;
  StagingRing<FakeBuffer> ring =
      std::move(StagingRing<FakeBuffer>::create(allocator, kOneSlot)).value();

  FenceToken run_frame() {
    SlotLease lease = std::move(ring.begin(16)).value();
    return std::move(ring.finish(std::move(lease))).value();
  }
};

TEST_F(FenceTest, SignalTurnsAnInFlightSlotReady) {
  FenceToken token = run_frame();
  EXPECT_TRUE(token.pending());
  EXPECT_EQ(ring.state(0), SlotState::InFlight);
  EXPECT_TRUE(token.signal());
  EXPECT_FALSE(token.pending());
  EXPECT_EQ(ring.state(0), SlotState::Ready);
}

TEST_F(FenceTest, ATokenFiresOnlyOnce) {
  FenceToken token = run_frame();
  EXPECT_TRUE(token.signal());
  EXPECT_FALSE(token.signal());
  EXPECT_FALSE(token.fail());
  EXPECT_FALSE(token.abandon());
  EXPECT_EQ(ring.state(0), SlotState::Ready);
}

TEST_F(FenceTest, DestroyingAnUnfiredTokenAbandonsTheSlot) {
  { FenceToken token = run_frame(); }  // the command buffer was dropped, never submitted
  EXPECT_EQ(ring.state(0), SlotState::Abandoned);
}

TEST_F(FenceTest, MoveAssigningOverAPendingTokenAbandonsIt) {
  FenceToken first = run_frame();
  FenceToken other;
  other = std::move(first);  // nothing abandoned: `other` was empty
  EXPECT_EQ(ring.state(0), SlotState::InFlight);
  other = FenceToken{};  // the pending token is overwritten: its slot is abandoned
  EXPECT_EQ(ring.state(0), SlotState::Abandoned);
}

TEST_F(FenceTest, FailMarksTheSlotFailed) {
  FenceToken token = run_frame();
  EXPECT_TRUE(token.fail());
  EXPECT_EQ(ring.state(0), SlotState::Failed);
}

//   frame 1 ─ finish ─► token1 ─ abandon ─► slot Abandoned ─ frame 2 takes it (fresh buffer)
//   token1' (a stale copy of frame 1's signal, arriving late) must not flip frame 2's slot.
TEST_F(FenceTest, AStaleSignalCannotFlipANewerFramesSlot) {
  FenceToken first = run_frame();
  const uint64_t first_generation = first.generation();
  first.abandon();
  FenceToken second = run_frame();
  EXPECT_GT(second.generation(), first_generation);
  EXPECT_FALSE(first.signal());  // already fired, and stale
  EXPECT_EQ(ring.state(0), SlotState::InFlight);
  EXPECT_TRUE(second.signal());
  EXPECT_EQ(ring.state(0), SlotState::Ready);
}

TEST_F(FenceTest, ASignalFromAnotherThreadIsSeenByTheRing) {
  FenceToken token = run_frame();
  std::thread gpu_callback([t = std::move(token)]() mutable { EXPECT_TRUE(t.signal()); });
  gpu_callback.join();
  EXPECT_EQ(ring.state(0), SlotState::Ready);
  EXPECT_TRUE(ring.begin(16));  // and the slot is handed out again
}

TEST(FenceLifetime, ATokenMayOutliveItsRing) {
  FakeSlotAllocator allocator;
  FenceToken token;
  {
    auto ring = std::move(StagingRing<FakeBuffer>::create(allocator, kOneSlot)).value();
    SlotLease lease = std::move(ring.begin(1)).value();
    token = std::move(ring.finish(std::move(lease))).value();
  }
  EXPECT_TRUE(token.signal());  // touches only the shared fence: no use-after-free
}

TEST(FenceToken, AnEmptyTokenDoesNothing) {
  FenceToken token;
  EXPECT_FALSE(token.pending());
  EXPECT_FALSE(token.signal());
  EXPECT_FALSE(token.abandon());
  EXPECT_FALSE(token.fail());
}

// A signal for generation 1 reaching a slot that is InFlight for generation 2 (a late duplicate)
// changes nothing; so does an abandon or fail of it, or dropping a lease of generation 1 while
// generation 2 records. The right generation does move the slot.
TEST(FenceGeneration, ASignalOfAnOlderGenerationChangesNothing) {
  const auto fence = std::make_shared<SlotFence>();
  Probe::set(*fence, 2, SlotState::InFlight);
  EXPECT_FALSE(Probe::token(fence, 1).signal());
  EXPECT_FALSE(Probe::token(fence, 1).fail());
  { FenceToken dropped = Probe::token(fence, 1); }  // destroyed unfired: abandon() of gen 1
  EXPECT_EQ(fence->state(), SlotState::InFlight);
  EXPECT_EQ(fence->generation(), 2u);
  EXPECT_FALSE(Probe::token(fence, 3).signal());  // nor does a newer one
  EXPECT_EQ(fence->state(), SlotState::InFlight);
  EXPECT_TRUE(Probe::token(fence, 2).signal());
  EXPECT_EQ(fence->state(), SlotState::Ready);

  Probe::set(*fence, 5, SlotState::Recording);
  { SlotLease stale = Probe::lease(fence, 4); }
  EXPECT_EQ(fence->state(), SlotState::Recording);
  { SlotLease current = Probe::lease(fence, 5); }
  EXPECT_EQ(fence->state(), SlotState::Ready);
  EXPECT_EQ(fence->generation(), 5u);
}

// Generations use 56 bits next to the state: a large generation keeps its state intact.
TEST(FenceGeneration, LargeGenerationsKeepTheirState) {
  const auto fence = std::make_shared<SlotFence>();
  const uint64_t big = (uint64_t{1} << 56) - 1;
  Probe::set(*fence, big, SlotState::InFlight);
  EXPECT_EQ(fence->generation(), big);
  EXPECT_EQ(fence->state(), SlotState::InFlight);
  EXPECT_TRUE(Probe::token(fence, big).abandon());
  EXPECT_EQ(fence->state(), SlotState::Abandoned);
}

}  // namespace
}  // namespace staging
