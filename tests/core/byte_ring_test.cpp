// ByteRing: placement, wraparound, full vs empty, FIFO retirement, cancel, queries, request
// errors, and stress cases around the wrap. Policies and their bounds: byte_ring_policy_test.cpp.
// Sketch notation: byte_ring_fixture.hpp.
#include "staging/core/byte_ring.hpp"

#include <gtest/gtest.h>

#include "byte_ring_fixture.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"

namespace staging::test {
namespace {

using ByteRingTest = ByteRingFixture;

TEST_F(ByteRingTest, CreateRejectsInvalidConfigurations) {
  using E = CreateError;
  const auto create = [&](ByteRingConfig c, staging::detail::ByteRingDeps d) {
    auto r = staging::detail::create_byte_ring(c, d);
    return r ? std::optional<E>() : std::optional<E>(r.error());
  };
  const staging::detail::ByteRingDeps deps{&allocator, &clock, nullptr};
  EXPECT_EQ(create({.capacity = 0}, deps), E::ZeroCapacity);
  EXPECT_EQ(create({.capacity = 64, .cap = 32}, deps), E::CapBelowCapacity);
  EXPECT_EQ(create({.capacity = 64, .cap = 128, .fallback_cap = 129}, deps),
            E::FallbackCapAboveCap);
  EXPECT_EQ(create({.capacity = 64}, {nullptr, &clock, nullptr}), E::MissingDependency);
  allocator.fail_next(1);
  EXPECT_EQ(create({.capacity = 64}, deps), E::AllocationFailed);
  // Every policy, Wait and Split included: a ring needs no completion source (it is handed
  // completed values; reserve_waiting() is given the source).
  EXPECT_EQ(create({.capacity = 64, .policy = ExhaustionPolicy::Wait}, deps), std::nullopt);
  EXPECT_EQ(create({.capacity = 64, .policy = ExhaustionPolicy::Split}, deps), std::nullopt);
  EXPECT_EQ(to_string(E::CapBelowCapacity), "CapBelowCapacity");
}

TEST_F(ByteRingTest, CreatesRegionZeroAndReleasesEveryRegionWhenDestroyed) {
  make({.capacity = 64, .cap = 256, .policy = ExhaustionPolicy::Fallback});
  EXPECT_EQ(allocator.log().sizes, std::vector<uint64_t>{64});
  take(64);
  take(100);  // a fallback region
  EXPECT_EQ(allocator.log().live_regions, 2u);
  ring.reset();  // the owner made sure the GPU is done
  EXPECT_EQ(allocator.log().live_regions, 0u);
  EXPECT_EQ(allocator.log().guard_violations, 0u);
}

// capacity 16, all aligned to 1:
//   reserve 4, 4:  [A A A A B B B B - - - - - - - -]  t=0 h=8
TEST_F(ByteRingTest, ReservationsAreContiguousAndInFifoOrder) {
  make(16);
  const Reservation a = take(4), b = take(4);
  EXPECT_EQ(a.id, 1u);
  EXPECT_EQ(b.id, 2u);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 4u);
  EXPECT_EQ(a.region, 0u);
  EXPECT_EQ(a.skipped, 0u);
  EXPECT_FALSE(a.fallback);
  EXPECT_EQ(ring->free_bytes(), 8u);
  EXPECT_EQ(ring->largest_free(), 8u);
  EXPECT_EQ(ring->live(), 2u);
  EXPECT_EQ(ring->oldest_pending(), a.token);
  EXPECT_TRUE(intact(a) && intact(b));
}

// capacity 32:
//   reserve 3:           [A A A - - - ...]
//   reserve 4 align 8:   [A A A p p p p p B B B B - ...]   padding p charged to B; B at 8
//   reserve 5 align 12:  [... B B B B C C C C C - ...]     12 is a multiple of 12: C at 12
TEST_F(ByteRingTest, OffsetsMeetAnyAlignmentAndPaddingIsCharged) {
  make(32);
  const Reservation a = take(3);
  const Reservation b = take(4, 8);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 8u);
  EXPECT_EQ(b.alignment, 8u);
  EXPECT_EQ(ring->free_bytes(), 32u - 12u);
  const Reservation c = take(5, 12);
  EXPECT_EQ(c.offset, 12u);
  const Reservation d = take(1, 0);  // alignment 0 is 1
  EXPECT_EQ(d.offset, 17u);
  EXPECT_EQ(d.alignment, 1u);
  const Reservation e = take(2, 3);  // 18 is a multiple of 3
  EXPECT_EQ(e.offset, 18u);
  EXPECT_EQ(events.with("reserve #2").front(), "reserve #2 r0 [8,12) charged 9 token 1");
}

// capacity 16 (the header's sketch):
//   A=6, B=7:            [A A A A A A B B B B B B B - - -]   t=0  h=13
//   A retires:           [- - - - - - B B B B B B B - - -]   t=6  h=13   runs: 3 at the end, 6 at 0
//   reserve C=4: 3 bytes before the end, so C wraps to 0 and the tail [13,16) is charged to C:
//                        [C C C C - - B B B B B B B # # #]   t=6  h=4    C.skipped == 3
//   B retires:           [C C C C - - - - - - - - - # # #]   t=13 h=4    free 9, one run [4,13)
//   C retires:           empty: t = h = 0, free 16
TEST_F(ByteRingTest, WrapSkipsTheTailAndChargesItToTheReservationThatWrapped) {
  make(16);
  const Reservation a = take(6);
  queue.submit();
  const Reservation b = take(7);
  queue.submit();
  ring->retire(a.token);
  EXPECT_EQ(ring->free_bytes(), 9u);
  EXPECT_EQ(ring->largest_free(), 6u);  // the run at the start, after the wrap's skip
  const Reservation c = take(4);
  EXPECT_EQ(c.offset, 0u);
  EXPECT_EQ(c.skipped, 3u);
  EXPECT_EQ(ring->free_bytes(), 2u);
  EXPECT_EQ(ring->largest_free(), 2u);
  EXPECT_EQ(ring->stats().wraps, 1u);
  EXPECT_EQ(ring->stats().bytes_skipped, 3u);
  EXPECT_EQ(ring->stats().in_flight_bytes, 7u + 3u + 4u);
  EXPECT_EQ(events.with("wrap").front(), "wrap #3 r0 from 13 skipped 3");
  EXPECT_TRUE(intact(b) && intact(c));
  EXPECT_EQ(ring->retire(b.token), 7u);
  EXPECT_EQ(ring->free_bytes(), 9u);  // the skip is freed with C, not with B
  EXPECT_EQ(ring->largest_free(), 9u);
  EXPECT_EQ(ring->retire(c.token), 7u);  // 3 skipped + 4
  EXPECT_EQ(ring->free_bytes(), 16u);
  EXPECT_EQ(ring->largest_free(), 16u);
  EXPECT_EQ(ring->stats().in_flight_bytes, 0u);
}

// A wrap never straddles the end, even by one byte:
//   capacity 16, A=10 retired, B=3 live:  [- - - - - - - - - - B B B - - -]  t=10 h=13
//   reserve 4: the 3 bytes at the end cannot hold it -> wraps to 0.
//   reserve 3 instead: it fits the end exactly -> [13,16), h normalises to 0, no skip.
TEST_F(ByteRingTest, NoReservationStraddlesTheEnd) {
  make(16);
  const Reservation a = take(10);
  queue.submit();
  take(3);
  ring->retire(a.token);
  const Reservation exact = take(3);
  EXPECT_EQ(exact.offset, 13u);
  EXPECT_EQ(exact.skipped, 0u);
  const Reservation next = take(4);
  EXPECT_EQ(next.offset, 0u);
  EXPECT_EQ(next.skipped, 0u);  // the head was exactly at the end: nothing to skip
}

// capacity 16:
//   A=8, B=8:   [A A A A A A A A B B B B B B B B]   h == t == 0 and used == 16: FULL
//   retire all: [- - - - - - - - - - - - - - - -]   h == t == 0 and used == 0:  EMPTY
TEST_F(ByteRingTest, FullAndEmptyAreNeverConfused) {
  make(16);
  const Reservation a = take(8);
  const Reservation b = take(8);
  EXPECT_EQ(b.offset, 8u);
  EXPECT_EQ(ring->free_bytes(), 0u);
  EXPECT_EQ(ring->largest_free(), 0u);
  auto refused = reserve(req(1));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(refused.error().cause, BlockCause::InFlight);
  EXPECT_EQ(refused.error().free_total, 0u);
  EXPECT_EQ(refused.error().oldest_pending, a.token);
  queue.submit();
  ring->retire(queue.submitted());
  EXPECT_EQ(ring->live(), 0u);
  EXPECT_EQ(ring->free_bytes(), 16u);
  EXPECT_EQ(ring->largest_free(), 16u);
  EXPECT_EQ(ring->oldest_pending(), std::nullopt);
  const Reservation whole = take(16);
  EXPECT_EQ(whole.offset, 0u);
}

// Tokens 1, 3, 2 (a caller may record into submissions out of order): retire(2) frees only the
// first — FIFO stops at token 3 — and never reclaims the token-2 reservation behind it early.
TEST_F(ByteRingTest, RetireFreesInFifoOrderAndStopsAtTheFirstPendingToken) {
  make(64);
  ReserveRequest r = req(4);
  r.token = 1;
  take(r);
  r.token = 3;
  take(r);
  r.token = 2;
  take(r);
  EXPECT_EQ(ring->retire(2), 4u);
  EXPECT_EQ(ring->live(), 2u);
  EXPECT_EQ(ring->oldest_pending(), 3u);
  EXPECT_EQ(ring->retire(3), 8u);
  EXPECT_EQ(ring->live(), 0u);
  EXPECT_EQ(ring->stats().retired, 3u);
}

TEST_F(ByteRingTest, RetireWithAStaleValueNeverGoesBack) {
  make(64);
  ring->retire(5);
  ring->retire(3);
  EXPECT_EQ(ring->completed(), 5u);
  ReserveRequest r = req(4);
  r.token = 4;
  take(r);
  ring->retire(1);  // treated as 5: token 4 retires
  EXPECT_EQ(ring->live(), 0u);
}

TEST_F(ByteRingTest, TokenZeroRetiresAtCompletedZero) {
  make(64);
  ReserveRequest r = req(4);
  r.token = 0;
  take(r);
  EXPECT_EQ(ring->retire(0), 4u);
}

TEST_F(ByteRingTest, PollRetiresWhatTheQueueHasCompleted) {
  queue.set_model(DelayModel::fixed(10us));
  make(64);
  take(8);
  queue.submit();
  EXPECT_EQ(poll(), 0u);
  clock.advance(10us);
  EXPECT_EQ(poll(), 8u);
}

// capacity 16, nothing submitted (the GPU will never read these):
//   A=4 B=4 C=4:  [A A A A B B B B C C C C - - - -]
//   cancel C:     [A A A A B B B B - - - - - - - -]   newest: the head rolls back at once
//   cancel A:     [- - - - B B B B - - - - - - - -]   oldest: reclaimed at once
//   D=4, cancel B (now in the middle), E: B stays charged until what is before it is reclaimed.
TEST_F(ByteRingTest, CancelReclaimsInFifoOrderOrRollsTheHeadBack) {
  make(16);
  const Reservation a = take(4), b = take(4), c = take(4);
  ring->cancel(c.id);
  EXPECT_EQ(ring->live(), 2u);
  EXPECT_EQ(ring->free_bytes(), 8u);
  const Reservation c2 = take(4);
  EXPECT_EQ(c2.offset, 8u);  // the rolled-back bytes
  EXPECT_GT(c2.id, c.id);    // ids are never reused
  ring->cancel(a.id);
  EXPECT_EQ(ring->live(), 2u);
  EXPECT_EQ(ring->oldest_pending(), b.token);
  ring->cancel(b.id);  // now the oldest: reclaimed at once
  EXPECT_EQ(ring->live(), 1u);
  ring->cancel(b.id);   // already reclaimed: ignored
  ring->cancel(12345);  // unknown: ignored
  EXPECT_EQ(ring->stats().cancelled, 3u);
  EXPECT_EQ(events.with("cancel #").size(), 3u);
}

TEST_F(ByteRingTest, CancelInTheMiddleWaitsForTheReservationsBeforeIt) {
  make(16);
  const Reservation a = take(4);
  queue.submit();
  const Reservation b = take(4);
  const Reservation c = take(4);
  ring->cancel(b.id);
  EXPECT_EQ(ring->live(), 3u);  // B is still behind A
  ring->cancel(b.id);           // twice: ignored
  ring->retire(a.token);
  EXPECT_EQ(ring->live(), 1u);  // A retired, then B reclaimed as cancelled
  EXPECT_EQ(ring->oldest_pending(), c.token);
  EXPECT_EQ(events.with("cancelled #2").size(), 1u);
}

// A cancelled wrap gives its skip back too:
//   [C C C C - - B B B B B B B # # #]  cancel C  ->  [- - - - - - B B B B B B B - - -]  h=13
TEST_F(ByteRingTest, CancellingTheNewestWrapRollsBackItsSkip) {
  make(16);
  const Reservation a = take(6);
  queue.submit();
  take(7);
  ring->retire(a.token);
  const Reservation c = take(4);
  ASSERT_EQ(c.skipped, 3u);
  ring->cancel(c.id);
  EXPECT_EQ(ring->free_bytes(), 9u);
  EXPECT_EQ(ring->largest_free(), 6u);
  const Reservation d = take(3);
  EXPECT_EQ(d.offset, 13u);  // the tail is usable again
}

// --- request errors: zero, huge, misaligned -----------------------------------------------------

TEST_F(ByteRingTest, ZeroSizeIsAClearError) {
  make(64);
  auto r = reserve(req(0));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::ZeroSize);
  EXPECT_EQ(describe(r.error()), "ZeroSize: a reservation of 0 bytes");
  EXPECT_EQ(ring->stats().invalid_requests, 1u);
  EXPECT_EQ(ring->stats().reservations, 0u);
}

TEST_F(ByteRingTest, HugeRequestsNearTwoToThe64AreClearErrors) {
  for (ExhaustionPolicy policy : {ExhaustionPolicy::Defer, ExhaustionPolicy::Wait,
                                  ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback}) {
    make({.capacity = 64, .cap = 256, .policy = policy});
    // Size alone: it can never fit.
    auto r = reserve(req(UINT64_MAX));
    ASSERT_FALSE(r) << to_string(policy);
    EXPECT_EQ(r.error().kind, UploadError::TooLarge) << to_string(policy);
    EXPECT_EQ(r.error().cause, BlockCause::Cap);
    EXPECT_EQ(r.error().needed, UINT64_MAX);
    EXPECT_EQ(describe(r.error()),
              "TooLarge (Cap): needed 18446744073709551615 bytes, free 64 (largest run 64)");
    // Size + alignment padding would overflow 64 bits.
    auto o = reserve(req(UINT64_MAX - 2, 8));
    ASSERT_FALSE(o);
    EXPECT_EQ(o.error().kind, UploadError::Overflow) << to_string(policy);
    EXPECT_EQ(ring->stats().cap_refusals, 1u);
    EXPECT_EQ(ring->stats().invalid_requests, 1u);
    EXPECT_EQ(ring->held_bytes(), 64u);  // nothing was allocated for them
    EXPECT_EQ(events.with("cap-refusal").back(),
              "cap-refusal " + std::string(to_string(policy)) +
                  " asked 18446744073709551615 held 64 permanent");
  }
}

// Under Split a huge payload is not an error: it streams through (here: its first chunk).
TEST_F(ByteRingTest, HugeRequestUnderSplitPlacesTheFirstChunk) {
  make(64, ExhaustionPolicy::Split);
  const Reservation r = take(uint64_t{1} << 63);
  EXPECT_EQ(r.size, 64u);
  EXPECT_EQ(ring->stats().splits, 1u);
  EXPECT_EQ(ring->stats().splits_by_cause[static_cast<int>(BlockCause::Cap)], 1u);
}

// capacity 64, A=5 live: [A A A A A - - - ...]  t=0 h=5
//   alignment 128 > capacity: only offset 0 is aligned, which A holds -> WouldBlock;
//   once A retires the ring is empty and offset 0 is free.
//   alignment UINT64_MAX: size 1 fits (1 + align - 1 does not overflow); size 2 overflows.
TEST_F(ByteRingTest, MisalignedRequestsAreHonouredOrRefusedClearly) {
  make(64);
  const Reservation a = take(5);
  auto big = reserve(req(8, 128));
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(big.error().cause, BlockCause::Fragmentation);  // 59 bytes free, none aligned
  auto over = reserve(req(2, UINT64_MAX));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().kind, UploadError::Overflow);
  EXPECT_EQ(describe(over.error()),
            "Overflow: size + alignment - 1 exceeds 2^64 - 1 (needed 2+ bytes)");
  queue.submit();
  ring->retire(a.token);
  const Reservation aligned = take(8, 128);
  EXPECT_EQ(aligned.offset, 0u);
  const Reservation odd = take(7, 12);  // after 8: next multiple of 12
  EXPECT_EQ(odd.offset, 12u);
  // Only offset 0 is a multiple of UINT64_MAX, and it is taken: refused, not misplaced.
  auto only_zero = reserve(req(1, UINT64_MAX));
  ASSERT_FALSE(only_zero);
  EXPECT_EQ(only_zero.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(only_zero.error().cause, BlockCause::Fragmentation);
}

// --- stress cases around the wrap --------------------------------------------------------------
//
// After wraparound and under queue delay (each submission completes 10 us after it was made),
// payloads smaller than, equal to, and larger than the contiguous free region, under each policy.
// capacity 64, cap 128:
//   t=0   A=40 (token 1, done at 10us)   [A*40 - - - ...]
//   t=5   B=16 (token 2, done at 15us)   [A*40 B*16 - - - - - - - -]
//   t=10  A retires                      [-*40 B*16 -*8]           runs: 8 at the end, 40 at 0
//   t=10  C=24 wraps (8 < 24)            [C*24 -*16 B*16 #*8]      t=40 h=24
//         contiguous free = [24, 40) = 16 bytes; total free 16.
// Then a payload of 15, 16 or 17 bytes.
struct StressCase {
  ExhaustionPolicy policy;
  int delta;  // payload = contiguous free + delta
};

class WraparoundStress : public ByteRingFixture,
                         public ::testing::WithParamInterface<StressCase> {};

TEST_P(WraparoundStress, PayloadsAroundTheContiguousFreeRegionAfterWraparoundUnderDelay) {
  const StressCase sc = GetParam();
  queue.set_model(DelayModel::fixed(10us));
  make({.capacity = 64,
        .cap = 128,
        .policy = sc.policy,
        .wait_timeout = 1ms,
        .grow_step = 64,
        .fallback_cap = 64});
  const Reservation a = take(40);
  queue.submit();
  clock.advance(5us);
  const Reservation b = take(16);
  queue.submit();
  clock.advance(5us);
  poll();
  const Reservation c = take(24);
  ASSERT_EQ(c.offset, 0u);
  ASSERT_EQ(c.skipped, 8u);
  ASSERT_EQ(ring->largest_free(), 16u);
  (void)a;

  const uint64_t payload = 16 + sc.delta;
  const Duration before = clock.now();
  auto r = reserve(req(payload));
  const Duration waited = clock.now() - before;
  std::vector<Reservation> placed;
  if (sc.delta <= 0) {
    // Smaller or equal: placed at once at the head, every policy alike.
    ASSERT_TRUE(r) << describe(r.error());
    EXPECT_EQ(r->offset, 24u);
    EXPECT_EQ(r->size, payload);
    EXPECT_EQ(waited, Duration{0});
    if (sc.delta == 0) {
      EXPECT_EQ(ring->free_bytes(), 0u);  // exactly full, not empty
    }
    fill(*r);
    placed.push_back(*r);
  } else {
    switch (sc.policy) {
      case ExhaustionPolicy::Defer:  // at once, with what is needed and free; no wait
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().kind, UploadError::WouldBlock);
        EXPECT_EQ(r.error().cause, BlockCause::InFlight);
        EXPECT_EQ(r.error().needed, 17u);
        EXPECT_EQ(r.error().free_total, 16u);
        EXPECT_EQ(r.error().free_contiguous, 16u);
        EXPECT_EQ(r.error().oldest_pending, b.token);
        EXPECT_EQ(waited, Duration{0});
        break;
      case ExhaustionPolicy::Wait:  // waits for B (done at 15us), exactly 5us
        ASSERT_TRUE(r) << describe(r.error());
        EXPECT_EQ(waited, 5us);
        EXPECT_EQ(r->offset, 24u);
        EXPECT_EQ(ring->stats().waits, 1u);
        EXPECT_EQ(ring->stats().wait_longest, 5us);
        fill(*r);
        placed.push_back(*r);
        break;
      case ExhaustionPolicy::Split: {  // 16 now, the last byte after B retires
        ASSERT_TRUE(r);
        EXPECT_EQ(r->size, 16u);
        EXPECT_EQ(waited, Duration{0});
        fill(*r);
        placed.push_back(*r);
        queue.submit();
        const Reservation rest = take(1);
        EXPECT_EQ(clock.now() - before, 5us);
        EXPECT_EQ(rest.offset, 40u);
        placed.push_back(rest);
        EXPECT_EQ(ring->stats().splits, 1u);
        break;
      }
      case ExhaustionPolicy::Grow:  // a second region of 64 bytes, no wait
        ASSERT_TRUE(r);
        EXPECT_EQ(r->region, 1u);
        EXPECT_EQ(r->offset, 0u);
        EXPECT_EQ(ring->held_bytes(), 128u);
        EXPECT_EQ(waited, Duration{0});
        fill(*r);
        placed.push_back(*r);
        break;
      case ExhaustionPolicy::Fallback:  // a dedicated 17-byte region, no wait
        ASSERT_TRUE(r);
        EXPECT_TRUE(r->fallback);
        EXPECT_EQ(allocator.size(r->region), 17u);
        EXPECT_EQ(waited, Duration{0});
        fill(*r);
        placed.push_back(*r);
        break;
    }
  }
  // Every byte the "GPU" still reads is intact; then everything completes and is reclaimed.
  EXPECT_TRUE(intact(c));
  for (const Reservation& p : placed)
    EXPECT_TRUE(intact(p));
  queue.submit();
  clock.advance(1ms);
  poll();
  EXPECT_EQ(ring->live(), 0u);
  EXPECT_EQ(ring->free_bytes(), 64u);
  EXPECT_LE(ring->stats().peak_held_bytes, 128u);
  EXPECT_EQ(allocator.log().guard_violations, 0u);
}

std::string stress_name(const ::testing::TestParamInfo<StressCase>& info) {
  const char* size = info.param.delta < 0 ? "Smaller" : info.param.delta == 0 ? "Equal" : "Larger";
  return std::string(to_string(info.param.policy)) + size;
}

INSTANTIATE_TEST_SUITE_P(
    EveryPolicy, WraparoundStress,
    ::testing::Values(
        StressCase{ExhaustionPolicy::Defer, -1}, StressCase{ExhaustionPolicy::Defer, 0},
        StressCase{ExhaustionPolicy::Defer, 1}, StressCase{ExhaustionPolicy::Wait, -1},
        StressCase{ExhaustionPolicy::Wait, 0}, StressCase{ExhaustionPolicy::Wait, 1},
        StressCase{ExhaustionPolicy::Split, -1}, StressCase{ExhaustionPolicy::Split, 0},
        StressCase{ExhaustionPolicy::Split, 1}, StressCase{ExhaustionPolicy::Grow, -1},
        StressCase{ExhaustionPolicy::Grow, 0}, StressCase{ExhaustionPolicy::Grow, 1},
        StressCase{ExhaustionPolicy::Fallback, -1}, StressCase{ExhaustionPolicy::Fallback, 0},
        StressCase{ExhaustionPolicy::Fallback, 1}),
    stress_name);

// Bursty chunk and asset uploads (seeded sizes 1..96 into a 128-byte ring, many wraps) under a
// bursty queue, Wait policy: every byte is verified when the ring reclaims it (the fixture does),
// and nothing ever overlaps (the checker is on and aborts otherwise).
TEST_F(ByteRingTest, BurstyUploadsUnderABurstyQueueKeepEveryByte) {
  queue.set_model(DelayModel::bursty(2us, 40us, 4));
  make({.capacity = 128, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  uint64_t x = 7;
  for (int i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t size = 1 + (x >> 33) % 96;
    const uint64_t alignment = uint64_t{1} << ((x >> 20) % 5);
    take(size, alignment);
    queue.submit();
    ring->retire(queue.completed());
  }
  clock.advance(1ms);
  poll();
  EXPECT_EQ(verified, 2000u);
  EXPECT_GT(ring->stats().wraps, 50u);
  EXPECT_GT(ring->stats().waits, 0u);
  EXPECT_EQ(ring->stats().timeouts, 0u);
  EXPECT_LE(ring->stats().wait_longest, 1ms);
  EXPECT_EQ(ring->stats().peak_held_bytes, 128u);
}

// --- stats and timeline ------------------------------------------------------------------------

// capacity 16: A=6 (submitted, completes at once), B=7:
//   [A A A A A A B B B B B B B - - -]   reserve 8: no fit; the ring polls the queue, A retires:
//   [- - - - - - B B B B B B B - - -]   9 free but runs of 3 and 6: WouldBlock (Fragmentation)
//   reserve 4: wraps, skipping 3.
TEST_F(ByteRingTest, StatsCountEveryReservationRetirementWrapAndRefusal) {
  make(16);
  take(6);
  queue.submit();
  take(7);
  auto refused = reserve(req(8));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().cause, BlockCause::Fragmentation);
  take(4);
  const ByteRingStats& s = ring->stats();
  EXPECT_EQ(s.reservations, 3u);
  EXPECT_EQ(s.bytes_reserved, 17u);
  EXPECT_EQ(s.retired, 1u);
  EXPECT_EQ(s.wraps, 1u);
  EXPECT_EQ(s.bytes_skipped, 3u);
  EXPECT_EQ(s.would_blocks, 1u);
  EXPECT_EQ(s.would_blocks_by_cause[static_cast<int>(BlockCause::Fragmentation)], 1u);
  EXPECT_EQ(s.held_bytes, 16u);
  EXPECT_EQ(s.peak_held_bytes, 16u);
  EXPECT_EQ(s.in_flight_bytes, 14u);
  EXPECT_EQ(s.peak_in_flight_bytes, 14u);
  EXPECT_EQ(s.regions, 1u);
  EXPECT_EQ(s.polls, 1u);  // one non-blocking look at the queue before refusing
}

TEST_F(ByteRingTest, TheTimelineIsStampedWithTheRingsClock) {
  make(16);
  take(8);
  queue.submit();
  clock.advance(3us);
  ring->retire(1);
  ASSERT_EQ(events.lines.size(), 2u);
  EXPECT_EQ(events.lines[0], "reserve #1 r0 [0,8) charged 8 token 1");
  EXPECT_EQ(events.lines[1], "retire #1 bytes 8 completed 1");
  EXPECT_EQ(events.times[0], Duration{0});
  EXPECT_EQ(events.times[1], 3us);
}

TEST_F(ByteRingTest, AMovedRingKeepsWorking) {
  make(64);
  take(8);
  ByteRing moved = std::move(*ring);
  ring.reset();
  EXPECT_EQ(moved.live(), 1u);
  auto r = moved.reserve(req(8));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->offset, 8u);
}

// The FIFO of live reservations starts with room for 256 entries and grows. Here it grows while
// its entries wrap around its own buffer (50 retired from the front first), holding 350: every
// entry must survive the growth in order, be found by cancel(), and retire in FIFO order with its
// bytes intact (the fixture verifies them).
TEST_F(ByteRingTest, MoreThan256LiveReservationsStayInFifoOrder) {
  make(4096);
  std::vector<Reservation> taken;
  for (int i = 0; i < 400; ++i) {
    taken.push_back(take(3));
    queue.submit();  // token i + 1
    if (i == 99) ring->retire(50);
  }
  EXPECT_EQ(ring->live(), 350u);
  EXPECT_EQ(ring->oldest_pending(), 51u);
  ring->cancel(taken[299].id);  // found in the grown FIFO; reclaimed when reached
  events.lines.clear();
  ring->retire(400);
  EXPECT_EQ(ring->live(), 0u);
  const std::vector<std::string> reclaimed = events.with("#");
  ASSERT_EQ(reclaimed.size(), 350u);
  for (std::size_t i = 0; i < reclaimed.size(); ++i) {
    const uint64_t id = 51 + i;
    const std::string kind = id == taken[299].id ? "cancelled #" : "retire #";
    EXPECT_EQ(reclaimed[i].rfind(kind + u(id) + " ", 0), 0u) << reclaimed[i];
  }
  EXPECT_EQ(verified, 399u);
  EXPECT_EQ(ring->stats().cancelled, 1u);
  EXPECT_EQ(ring->free_bytes(), 4096u);
}

// A reservation cancelled twice is cancelled once: one cancel event, one reclamation.
TEST_F(ByteRingTest, CancellingTwiceIsCancellingOnce) {
  make(64);
  const Reservation a = take(8);
  const Reservation b = take(8);
  take(8);
  ring->cancel(b.id);  // in the middle: reclaimed once a retires
  ring->cancel(b.id);
  EXPECT_EQ(events.with("cancel #").size(), 1u);
  EXPECT_EQ(ring->live(), 3u);
  ring->retire(a.token);
  EXPECT_EQ(events.with("cancelled #" + u(b.id)).size(), 1u);
  ring->cancel(b.id);  // already reclaimed: ignored
  EXPECT_EQ(events.with("cancel #").size(), 1u);
  EXPECT_EQ(ring->stats().cancelled, 1u);
}

// capacity 16:  A=8 (retired), B=4:  [- *8 B*4 - *4]  t=8 h=12
// An 8-byte request wraps: it skips the 4 tail bytes and takes [0, 8) — exactly the room before
// the tail. The ring is then full.
TEST_F(ByteRingTest, AWrapMayFillTheRoomBeforeTheTailExactly) {
  make(16);
  const Reservation a = take(8);
  queue.submit();
  take(4);
  ring->retire(a.token);
  const Reservation c = take(8);
  EXPECT_EQ(c.offset, 0u);
  EXPECT_EQ(c.skipped, 4u);
  EXPECT_EQ(ring->free_bytes(), 0u);
  EXPECT_EQ(ring->largest_free(), 0u);
}

}  // namespace
}  // namespace staging::test
