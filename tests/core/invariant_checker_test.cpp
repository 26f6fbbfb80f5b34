// InvariantChecker on its own: every invariant it proves (I1–I5) is shown to be detected, with a
// message naming the reservations involved, in Record mode (kept, counted) and in Abort mode
// (death test). Plus: a ByteRing feeding a Record-mode checker produces no violation.
//
// Sketch notation: region bytes as [offset, end); "live" = the GPU may still read it (its token
// has not completed).
#include "staging/detail/core/invariant_checker.hpp"

#include <gtest/gtest.h>

#include "byte_ring_fixture.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"

namespace staging::test {
namespace {

using Mode = InvariantChecker::Mode;

Reservation res(uint64_t id, uint32_t region, uint64_t offset, uint64_t size, TimelineValue token,
                uint64_t alignment = 1) {
  Reservation r;
  r.id = id;
  r.region = region;
  r.offset = offset;
  r.size = size;
  r.alignment = alignment;
  r.token = token;
  r.owner = id * 10;
  return r;
}

TEST(InvariantChecker, AcceptsACorrectSequence) {
  InvariantChecker c(Mode::Record, 256);
  c.on_region_created(0, 64);
  c.on_reserve(res(1, 0, 0, 16, 1));
  c.on_reserve(res(2, 0, 16, 16, 2));
  c.on_reserve(res(3, 0, 32, 32, 2, 32));
  c.on_completed(1);
  c.on_reclaim(1);
  c.on_reserve(res(4, 0, 0, 16, 3));  // #1's bytes, after its token completed
  c.on_cancel(4);
  c.on_reserve(res(5, 0, 0, 8, 4));  // #4 was cancelled: never read
  c.on_completed(4);
  c.on_reclaim(2);
  c.on_reclaim(3);
  c.on_region_destroyed(0);
  EXPECT_TRUE(c.violations().empty());
  EXPECT_EQ(c.checks(), 5u);
  EXPECT_EQ(c.held_bytes(), 0u);
}

// region 0 (64 bytes): #1 [0,16) token 5 live; #2 [8,24) overlaps it.
TEST(InvariantChecker, I1DetectsAnOverlapAndNamesBothReservations) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(0, 64);
  c.on_reserve(res(1, 0, 0, 16, 5));
  c.on_completed(4);  // not yet 5: #1 is still read
  c.on_reserve(res(2, 0, 8, 16, 6));
  ASSERT_EQ(c.violations().size(), 1u);
  EXPECT_EQ(c.violations()[0].invariant, Invariant::I1_NoOverlap);
  EXPECT_EQ(c.violations()[0].message,
            "I1 violated: reservation #2 (region 0, bytes [8, 24), align 1, token 6, owner 20) "
            "overlaps live reservation #1 (region 0, bytes [0, 16), align 1, token 5, owner 10); "
            "completed 4");
  EXPECT_EQ(c.count(Invariant::I1_NoOverlap), 1u);
}

// A long live interval: #1 [2,62); #2 [62,64) only touches it (fine); #3 [61,62) lies deep inside
// #1, 59 bytes past its start — found although #1 does not start near it.
TEST(InvariantChecker, I1DetectsAnOverlapDeepInsideALongInterval) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(0, 64);
  c.on_reserve(res(1, 0, 2, 60, 1));
  c.on_reserve(res(2, 0, 62, 2, 1));
  EXPECT_TRUE(c.violations().empty());
  c.on_reserve(res(3, 0, 61, 1, 1));
  ASSERT_EQ(c.violations().size(), 1u);
  EXPECT_NE(c.violations()[0].message.find("reservation #3"), std::string::npos);
  EXPECT_NE(c.violations()[0].message.find("live reservation #1"), std::string::npos);
}

TEST(InvariantChecker, DifferentRegionsNeverOverlap) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(0, 64);
  c.on_region_created(1, 64);
  c.on_reserve(res(1, 0, 0, 16, 1));
  c.on_reserve(res(2, 1, 0, 16, 1));
  EXPECT_TRUE(c.violations().empty());
}

TEST(InvariantChecker, I2DetectsMisalignmentZeroSizeAndOverflow) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(0, 64);
  c.on_reserve(res(1, 0, 12, 4, 1, 8));
  c.on_reserve(res(2, 0, 20, 0, 1));
  c.on_reserve(res(3, 0, UINT64_MAX - 2, 8, 1));
  EXPECT_EQ(c.count(Invariant::I2_AlignedNoOverflow), 3u);
  EXPECT_EQ(c.violations()[0].message,
            "I2 violated: reservation #1 (region 0, bytes [12, 16), align 8, token 1, owner 10): "
            "offset is not a multiple of the alignment");
  EXPECT_NE(c.violations()[2].message.find("overflows"), std::string::npos);
}

TEST(InvariantChecker, I3DetectsReclamationBeforeTheTokenCompletes) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(0, 64);
  c.on_reserve(res(1, 0, 0, 16, 7));
  c.on_completed(6);
  c.on_reclaim(1);
  ASSERT_EQ(c.count(Invariant::I3_ReclaimAfterCompletion), 1u);
  EXPECT_EQ(c.violations()[0].message,
            "I3 violated: reservation #1 (region 0, bytes [0, 16), align 1, token 7, owner 10) "
            "reclaimed while the completed value is only 6 (< its token): the GPU may still read "
            "it");
  // It stays live in the model (the GPU still reads it): reusing its bytes is an I1 violation.
  c.on_reserve(res(2, 0, 4, 4, 8));
  EXPECT_EQ(c.count(Invariant::I1_NoOverlap), 1u);
  // Once 7 completes, reclaiming is fine.
  c.on_completed(7);
  c.on_reclaim(1);
  EXPECT_EQ(c.count(Invariant::I3_ReclaimAfterCompletion), 1u);
}

TEST(InvariantChecker, CompletedValuesNeverGoBack) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(0, 64);
  c.on_completed(5);
  c.on_completed(2);
  EXPECT_EQ(c.completed(), 5u);
  c.on_reserve(res(1, 0, 0, 16, 5));  // already completed: never live
  c.on_reserve(res(2, 0, 0, 16, 6));
  EXPECT_TRUE(c.violations().empty());
  EXPECT_EQ(c.live(), 1u);
}

TEST(InvariantChecker, I4DetectsAReservationPastItsRegionOrInNoRegion) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(0, 64);
  c.on_reserve(res(1, 0, 60, 8, 1));
  c.on_reserve(res(2, 3, 0, 8, 1));
  EXPECT_EQ(c.count(Invariant::I4_InBounds), 2u);
  EXPECT_NE(c.violations()[0].message.find("ends past its region of 64 bytes"), std::string::npos);
  EXPECT_NE(c.violations()[1].message.find("does not exist"), std::string::npos);
}

TEST(InvariantChecker, I5DetectsHeldBytesAboveTheCap) {
  InvariantChecker c(Mode::Record, 100);
  c.on_region_created(0, 64);
  c.on_region_created(1, 36);
  EXPECT_TRUE(c.violations().empty());
  c.on_region_created(2, 1);
  ASSERT_EQ(c.count(Invariant::I5_UnderCap), 1u);
  EXPECT_EQ(c.violations()[0].message,
            "I5 violated: creating region 2 of 1 bytes takes the held bytes to 101, above the cap "
            "of 100");
}

// Two regions of 2^63 bytes hold 2^64 bytes: above a cap of 2^64 - 1, however the sum is kept.
TEST(InvariantChecker, I5HeldBytesPastTwoToThe64AreAboveAnyCap) {
  constexpr uint64_t half = uint64_t{1} << 63;
  InvariantChecker c(Mode::Record, UINT64_MAX);
  c.on_region_created(0, half);
  EXPECT_TRUE(c.violations().empty());
  c.on_region_created(1, half);
  ASSERT_EQ(c.count(Invariant::I5_UnderCap), 1u);
  EXPECT_EQ(c.violations()[0].message,
            "I5 violated: creating region 1 of 9223372036854775808 bytes takes the held bytes to "
            "more than 2^64 - 1, above the cap of 18446744073709551615");
  EXPECT_EQ(c.held_bytes(), UINT64_MAX);
  c.on_region_destroyed(1);
  EXPECT_EQ(c.held_bytes(), half);
  c.on_region_created(1, half - 1);
  EXPECT_EQ(c.held_bytes(), UINT64_MAX);
  EXPECT_EQ(c.count(Invariant::I5_UnderCap), 1u);
}

TEST(InvariantChecker, I1DetectsARegionDestroyedWhileTheGpuReadsIt) {
  InvariantChecker c(Mode::Record);
  c.on_region_created(1, 64);
  c.on_reserve(res(1, 1, 0, 16, 3));
  c.on_region_destroyed(1);
  ASSERT_EQ(c.count(Invariant::I1_NoOverlap), 1u);
  EXPECT_NE(c.violations()[0].message.find("region 1 destroyed while the GPU may still read"),
            std::string::npos);
  c.on_region_created(2, 64);
  c.on_reserve(res(2, 2, 0, 16, 3));
  c.forget_region(2);  // the owner vouches the GPU is done: no check
  EXPECT_EQ(c.violations().size(), 1u);
}

TEST(InvariantChecker, ReportKeepsAViolationFoundElsewhere) {
  InvariantChecker c(Mode::Record);
  c.report(Invariant::I4_InBounds, "flush range past the mapping");
  EXPECT_EQ(c.violations()[0].message, "I4 violated: flush range past the mapping");
  EXPECT_EQ(to_string(Invariant::I5_UnderCap), "I5");
}

TEST(InvariantCheckerDeathTest, AbortModeAbortsWithAMessageNamingBothReservations) {
  EXPECT_DEATH(
      {
        InvariantChecker c(Mode::Abort);
        c.on_region_created(0, 64);
        c.on_reserve(res(1, 0, 0, 16, 5));
        c.on_reserve(res(2, 0, 8, 16, 6));
      },
      "I1 violated: reservation #2 .* overlaps live reservation #1 ");
}

// A ring feeding a Record-mode checker through ByteRingDeps::checker (detail::create_byte_ring) (as
// staging-sim does): a busy run under every policy yields no violation, and every reservation was
// checked.
TEST(InvariantChecker, ARingFeedsItEveryOperation) {
  for (ExhaustionPolicy policy :
       {ExhaustionPolicy::Defer, ExhaustionPolicy::Wait, ExhaustionPolicy::Split,
        ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback}) {
    FakeClock clock;
    FakeQueue queue(clock, DelayModel::seeded_random(Duration{0}, 50us, 3));
    FakeRegionAllocator allocator;
    InvariantChecker checker(Mode::Record);
    auto made = staging::detail::create_byte_ring({.capacity = 256,
                                                   .cap = 1024,
                                                   .policy = policy,
                                                   .wait_timeout = 100us,
                                                   .trim_after = 20us,
                                                   .check_invariants = false},
                                                  {&allocator, &clock, nullptr, &checker});
    ASSERT_TRUE(made);
    ByteRing& ring = *made;
    EXPECT_EQ(checker.cap(), 1024u);
    uint64_t x = 99;
    for (int i = 0; i < 3000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      ReserveRequest r;
      r.size = 1 + (x >> 33) % 300;
      r.alignment = uint64_t{1} << ((x >> 20) % 7);
      r.token = queue.next_value();
      (void)reserve_waiting(ring, queue, r);
      if ((x >> 50) % 2) queue.submit();
      if ((x >> 45) % 4 == 0) clock.advance(10us);
      ring.retire(queue.completed());
    }
    EXPECT_TRUE(checker.violations().empty()) << checker.violations().front().message;
    EXPECT_EQ(checker.checks(), ring.stats().reservations) << to_string(policy);
    EXPECT_EQ(checker.held_bytes(), ring.held_bytes());
  }
}

}  // namespace
}  // namespace staging::test
