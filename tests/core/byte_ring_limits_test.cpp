// ByteRing at the edges of 64-bit arithmetic: capacities, caps and requests near 2^64, and the
// inputs a fuzzer feeds (granularities and minimum chunks larger than any region). Regions here
// are bookkeeping only (CountingAllocator): a 2^63-byte region costs nothing.
//
// Sketch notation: byte_ring_fixture.hpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "byte_ring_fixture.hpp"
#include "staging/core/byte_ring.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/detail/core/invariant_checker.hpp"

namespace staging::test {
namespace {

constexpr uint64_t kTwo63 = uint64_t{1} << 63;

// A RegionAllocator that only counts: any size succeeds, no memory is touched.
class CountingAllocator final : public RegionAllocator {
 public:
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override {
    EXPECT_FALSE(live_.contains(region)) << "region " << region << " created while live";
    live_[region] = bytes;
    return {};
  }
  void destroy_region(uint32_t region) noexcept override { live_.erase(region); }
  [[nodiscard]] std::size_t live() const noexcept { return live_.size(); }

 private:
  std::map<uint32_t, uint64_t> live_;
};

struct ByteRingLimits : ::testing::Test {
  FakeClock clock;
  FakeQueue queue{clock, DelayModel::stalled()};  // completes only what a test completes
  CountingAllocator allocator;
  InvariantChecker checker{InvariantChecker::Mode::Record};
  std::optional<ByteRing> ring;

  ByteRing& make(ByteRingConfig config) {
    auto made = staging::detail::create_byte_ring(config, {&allocator, &clock, nullptr, &checker});
    EXPECT_TRUE(made.has_value());
    ring.emplace(std::move(made).value());
    return *ring;
  }
  ReserveRequest req(uint64_t size, std::optional<ExhaustionPolicy> policy = std::nullopt) const {
    ReserveRequest r;
    r.size = size;
    r.token = queue.next_value();
    r.policy = policy;
    return r;
  }
  void expect_no_violation() {
    for (const Violation& v : checker.violations())
      ADD_FAILURE() << v.message;
  }
};

// capacity 64, cap 2^64 - 1, Fallback: one 2^63-byte fallback region fits under the fallback cap
// (2^64 - 65); a second would take the held bytes to 2^64 + 64, past 2^64 - 1. The sums must not
// wrap into "fits".
TEST_F(ByteRingLimits, FallbackNearTwoToThe64NeverWrapsPastTheCap) {
  make({.capacity = 64, .cap = UINT64_MAX, .policy = ExhaustionPolicy::Fallback});
  EXPECT_EQ(ring->fallback_cap(), UINT64_MAX - 64);
  const auto first = ring->reserve(req(kTwo63));
  ASSERT_TRUE(first) << describe(first.error());
  EXPECT_TRUE(first->fallback);
  const auto second = ring->reserve(req(kTwo63));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(second.error().cause, BlockCause::Cap);
  EXPECT_EQ(ring->held_bytes(), 64 + kTwo63);
  EXPECT_EQ(ring->stats().fallback_held_bytes, kTwo63);
  EXPECT_EQ(allocator.live(), 2u);
  // What fits beside it still fits: the cap minus what is held, exactly.
  const auto rest = ring->reserve(req(UINT64_MAX - 64 - kTwo63));
  ASSERT_TRUE(rest) << describe(rest.error());
  EXPECT_EQ(ring->held_bytes(), UINT64_MAX);
  expect_no_violation();
}

// capacity 2^64 - 1, a 10-byte reservation at the start:  [A*10 - ... -]  h=10
// A request of 2^64 - 5 bytes would need the tail skipped (2^64 - 11) plus its size: more than
// 2^64 - 1, so `needed` says 2^64 - 1 instead of a wrapped small number.
TEST_F(ByteRingLimits, NeededSaturatesInsteadOfWrapping) {
  make({.capacity = UINT64_MAX});
  ASSERT_TRUE(ring->reserve(req(10)));
  const auto r = ring->reserve(req(UINT64_MAX - 4));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(r.error().cause, BlockCause::InFlight);
  EXPECT_EQ(r.error().needed, UINT64_MAX);
  EXPECT_EQ(r.error().free_total, UINT64_MAX - 10);
  expect_no_violation();
}

// Region 0 (64 bytes) empty; grown region 1 (256 bytes) holds B:  r0 [- *64]  r1 [B*200 - *56]
// A Split request of 100 bytes with a granularity of 2^63 (larger than every region) and a
// minimum chunk that overflows when rounded to it: no chunk can be placed, only the whole
// request — never an empty chunk (which would leave "the rest" at 100 bytes forever).
TEST_F(ByteRingLimits, SplitNeverPlacesAnEmptyChunk) {
  make({.capacity = 64, .cap = 64 + 256, .grow_step = 256, .split_min_chunk = kTwo63 + 1});
  ASSERT_TRUE(ring->reserve(req(64)));
  queue.submit();
  const auto b = ring->reserve(req(200, ExhaustionPolicy::Grow));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->region, 1u);
  queue.submit();
  queue.complete_through(1);
  ring->retire(queue.completed());
  ASSERT_EQ(ring->free_bytes(), 64u);

  ReserveRequest split = req(100, ExhaustionPolicy::Split);
  split.granularity = kTwo63;
  const auto r = ring->reserve(split);
  ASSERT_FALSE(r) << "placed " << r->size << " bytes";
  EXPECT_EQ(r.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(r.error().wait_for, 2u);  // B's token frees region 1 for the whole request
  // Once B retires, region 1 takes the whole request.
  queue.complete_through(2);
  ring->retire(queue.completed());
  const auto whole = ring->reserve(split);
  ASSERT_TRUE(whole) << describe(whole.error());
  EXPECT_EQ(whole->size, 100u);
  EXPECT_EQ(whole->region, 1u);
  EXPECT_EQ(ring->stats().splits, 0u);
  expect_no_violation();
}

// The same granularity on an empty ring that the request fits whole: placed whole at once.
TEST_F(ByteRingLimits, SplitWithAGranularityAboveEveryRegionPlacesWholeRequests) {
  make({.capacity = 64, .policy = ExhaustionPolicy::Split, .split_min_chunk = UINT64_MAX});
  ReserveRequest split = req(40);
  split.granularity = UINT64_MAX;
  const auto a = ring->reserve(split);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->size, 40u);
  const auto b = ring->reserve(split);  // 24 bytes left: no chunk of a 2^64-1 granularity
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().kind, UploadError::WouldBlock);
  expect_no_violation();
}

TEST_F(ByteRingLimits, TheInvariantCheckerIsOffUnlessAsked) {
  static_assert(!ByteRingConfig{}.check_invariants);
  SUCCEED();
}

// capacity 64 at the cap of 2^64 - 1 with Grow: one region of 2^64 - 65 fits beside region 0, and
// nothing more (every sum against the cap exact).
TEST_F(ByteRingLimits, GrowUpToACapOfTwoToThe64) {
  make({.capacity = 64, .cap = UINT64_MAX, .policy = ExhaustionPolicy::Grow, .grow_step = 64});
  ASSERT_TRUE(ring->reserve(req(64)));
  const auto big = ring->reserve(req(UINT64_MAX - 64));
  ASSERT_TRUE(big) << describe(big.error());
  EXPECT_EQ(ring->held_bytes(), UINT64_MAX);
  const auto more = ring->reserve(req(1));
  ASSERT_FALSE(more);
  EXPECT_EQ(more.error().cause, BlockCause::Cap);
  expect_no_violation();
}

using ByteRingLimitsDeathTest = ByteRingLimits;

TEST_F(ByteRingLimitsDeathTest, AMovedFromRingAbortsWithAMessage) {
  make({.capacity = 64});
  ByteRing moved = std::move(*ring);
  ByteRing& old = *ring;  // NOLINT(bugprone-use-after-move): the misuse under test
  EXPECT_DEATH((void)old.reserve(req(8)), "ByteRing used after it was moved from");
  EXPECT_DEATH(old.cancel(1), "moved from");
  EXPECT_DEATH((void)old.retire(1), "moved from");
  EXPECT_DEATH((void)old.trim_idle(), "moved from");
  EXPECT_DEATH((void)old.free_bytes(), "moved from");
  EXPECT_DEATH((void)old.live(), "moved from");
  EXPECT_DEATH((void)old.stats(), "moved from");
  EXPECT_DEATH((void)old.cap(), "moved from");
  // Assigning to it makes it whole again.
  old = std::move(moved);
  EXPECT_TRUE(old.reserve(req(8)));
}

// capacity 2^64 - 1, A = 2^63 + 1 bytes at 0:  [A*(2^63+1) - ...]  h = 2^63 + 1
// Rounding the head up to an alignment of 2^63 passes 2^64: no offset at the head exists, and the
// start is A's. The request waits; it is never placed over A.
TEST_F(ByteRingLimits, AnAlignmentWhoseRoundingOverflowsIsNeverPlacedOverLiveBytes) {
  make({.capacity = UINT64_MAX});
  ASSERT_TRUE(ring->reserve(req(kTwo63 + 1)));
  ReserveRequest aligned = req(1);
  aligned.alignment = kTwo63;
  const auto r = ring->reserve(aligned);
  ASSERT_FALSE(r) << "placed at " << r->offset;
  EXPECT_EQ(r.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(r.error().needed, UINT64_MAX - kTwo63);  // the skipped tail (2^63 - 2) plus the byte
  expect_no_violation();
}

}  // namespace
}  // namespace staging::test
