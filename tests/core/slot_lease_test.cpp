// SlotLease: the bump cursor inside one slot. Every placement aligned and overflow-checked; a
// placement that does not fit is refused and never written past the slot (invariants I2, I4).
#include <gtest/gtest.h>

#include <cstdint>

#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

namespace staging {
namespace {

using testing::FakeBuffer;
using testing::FakeSlotAllocator;

constexpr StagingRingConfig kSmall{.slots = 3, .min_slot_bytes = 256, .max_slot_bytes = 4096};

struct LeaseTest : ::testing::Test {
  FakeSlotAllocator allocator;
  StagingRing<FakeBuffer> ring =
      std::move(StagingRing<FakeBuffer>::create(allocator, kSmall)).value();
  SlotLease lease = std::move(ring.begin(256)).value();  // one 256-byte slot
};

//   slot (256 B):  [a.........|pad|b.............|                      ]
//                  0          10  16             116                    256
TEST_F(LeaseTest, PlacementsBumpTheCursorAtTheirAlignment) {
  EXPECT_EQ(lease.capacity(), 256u);
  EXPECT_EQ(lease.place(10, 4), 0u);
  EXPECT_EQ(lease.cursor(), 10u);
  EXPECT_EQ(lease.place(100, 16), 16u);
  EXPECT_EQ(lease.cursor(), 116u);
  EXPECT_EQ(lease.remaining(), 140u);
  EXPECT_EQ(lease.placements(), 2u);
  EXPECT_EQ(lease.bytes_placed(), 110u);
}

//   slot (256 B):  [x..........................................|y...|   ]  y ends at 256: fits
TEST_F(LeaseTest, APlacementEndingExactlyAtTheEndFits) {
  ASSERT_TRUE(lease.place(200, 1));
  EXPECT_EQ(lease.place(56, 1), 200u);
  EXPECT_EQ(lease.remaining(), 0u);
  EXPECT_EQ(lease.place(1, 1).error(), PlaceError::DoesNotFit);
}

//   slot (256 B):  [x.....................................|  40 free  ]  41 B: refused
TEST_F(LeaseTest, APlacementThatDoesNotFitIsRefusedAndTheCursorStays) {
  ASSERT_TRUE(lease.place(216, 1));
  const auto refused = lease.place(41, 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), PlaceError::DoesNotFit);
  EXPECT_EQ(lease.cursor(), 216u);
  EXPECT_EQ(lease.refused(), 1u);
  // Alignment padding counts: 30 bytes fit at 216, not at align_up(216, 64) == 256.
  EXPECT_EQ(lease.place(30, 64).error(), PlaceError::DoesNotFit);
  EXPECT_EQ(lease.place(30, 8), 216u);
}

TEST_F(LeaseTest, ZeroSizeIsAClearError) {
  EXPECT_EQ(lease.place(0, 4).error(), PlaceError::ZeroSize);
  EXPECT_EQ(lease.cursor(), 0u);
}

TEST_F(LeaseTest, HugeSizesAndAlignmentsOverflowOrRefuseWithoutWrapping) {
  ASSERT_TRUE(lease.place(3, 1));
  EXPECT_EQ(lease.place(UINT64_MAX, 1).error(), PlaceError::Overflow);        // 3 + 2^64-1
  EXPECT_EQ(lease.place(UINT64_MAX - 2, 1).error(), PlaceError::Overflow);    // exactly 2^64
  EXPECT_EQ(lease.place(UINT64_MAX - 3, 1).error(), PlaceError::DoesNotFit);  // fits in 64 bits
  EXPECT_EQ(lease.place(1, UINT64_MAX - 1).error(), PlaceError::DoesNotFit);  // offset 2^64-2
  EXPECT_EQ(lease.place(2, UINT64_MAX - 1).error(), PlaceError::Overflow);    // end 2^64
  EXPECT_EQ(lease.cursor(), 3u);
}

TEST_F(LeaseTest, NonPowerOfTwoAndZeroAlignments) {
  ASSERT_TRUE(lease.place(5, 0));  // alignment 0 == 1
  EXPECT_EQ(lease.place(1, 12), 12u);
  EXPECT_EQ(lease.place(1, 12), 24u);
  EXPECT_EQ(lease.place(7, 0), 25u);
}

TEST_F(LeaseTest, DroppingAnUnfinishedLeaseReturnsTheSlotToReady) {
  const std::size_t slot = lease.slot();
  EXPECT_EQ(ring.state(slot), SlotState::Recording);
  lease = SlotLease{};  // drop it: no copy was recorded from the slot, so it is free again
  EXPECT_EQ(ring.state(slot), SlotState::Ready);
  EXPECT_EQ(lease.place(1, 1).error(), PlaceError::Inactive);
}

TEST_F(LeaseTest, AMovedFromLeaseIsInactiveAndTheMoveKeepsTheCursor) {
  ASSERT_TRUE(lease.place(40, 1));
  SlotLease moved = std::move(lease);
  EXPECT_FALSE(lease.active());  // NOLINT(bugprone-use-after-move): testing the moved-from state
  EXPECT_TRUE(moved.active());
  EXPECT_EQ(moved.cursor(), 40u);
  EXPECT_EQ(ring.state(moved.slot()), SlotState::Recording);
}

// Inactive is not a refusal of the lease's frame: it counts nothing.
TEST(LeaseInactive, AnInactiveLeaseCountsNoRefusal) {
  SlotLease none;
  EXPECT_EQ(none.place(8, 1).error(), PlaceError::Inactive);
  EXPECT_EQ(none.refused(), 0u);
  EXPECT_EQ(none.placements(), 0u);
}

}  // namespace
}  // namespace staging
