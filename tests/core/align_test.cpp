// align_up, checked arithmetic and slot_capacity at their edges (invariant I2).
#include "staging/detail/core/align.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "staging/detail/core/limits.hpp"

namespace staging {
namespace {

constexpr uint64_t kMax = UINT64_MAX;

TEST(AlignUp, RoundsUpToTheNextMultiple) {
  EXPECT_EQ(align_up(1, 8), 8u);
  EXPECT_EQ(align_up(9, 8), 16u);
  EXPECT_EQ(align_up(255, 256), 256u);
  EXPECT_EQ(align_up(257, 256), 512u);
}

TEST(AlignUp, AlignedValuesAndZeroAreUnchanged) {
  EXPECT_EQ(align_up(0, 8), 0u);
  EXPECT_EQ(align_up(64, 64), 64u);
  EXPECT_EQ(align_up(kMax, 1), kMax);
}

TEST(AlignUp, AlignmentZeroIsTreatedAsOne) {
  EXPECT_EQ(align_up(0, 0), 0u);
  EXPECT_EQ(align_up(5, 0), 5u);
  EXPECT_EQ(align_up(kMax, 0), kMax);
}

TEST(AlignUp, NonPowerOfTwoAlignments) {
  EXPECT_EQ(align_up(10, 3), 12u);
  EXPECT_EQ(align_up(12, 12), 12u);  // RGB32 texel block
  EXPECT_EQ(align_up(13, 12), 24u);
  EXPECT_EQ(align_up(1, 384), 384u);  // lcm(12, 128)
}

TEST(AlignUp, OverflowNearTwoToTheSixtyFourIsNone) {
  EXPECT_FALSE(align_up(kMax, 2).has_value());
  EXPECT_FALSE(align_up(kMax - 6, 8).has_value());   // would be 2^64
  EXPECT_FALSE(align_up(kMax - 2, 21).has_value());  // 2^64 - 3 is 13 mod 21; +8 wraps
  // The largest multiple of 8 still fits.
  EXPECT_EQ(align_up(kMax - 14, 8), kMax - 7);
  // A huge alignment: 1 rounds to the alignment itself, which fits.
  EXPECT_EQ(align_up(1, kMax), kMax);
  EXPECT_FALSE(align_up(kMax - 1, kMax - 2).has_value());
}

TEST(CheckedArithmetic, AddAndMulReportOverflow) {
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_FALSE(checked_add(kMax, 1).has_value());
  EXPECT_EQ(checked_mul(uint64_t{1} << 32, (uint64_t{1} << 32) - 1),
            kMax - ((uint64_t{1} << 32) - 1));
  EXPECT_FALSE(checked_mul(uint64_t{1} << 32, uint64_t{1} << 32).has_value());
  EXPECT_EQ(checked_mul(0, kMax), 0u);
}

TEST(PowerOfTwo, NextAndPredicate) {
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_TRUE(is_power_of_two(1));
  EXPECT_FALSE(is_power_of_two(12));
  EXPECT_EQ(next_power_of_two(0), 1u);
  EXPECT_EQ(next_power_of_two(3), 4u);
  EXPECT_EQ(next_power_of_two(uint64_t{1} << 63), uint64_t{1} << 63);
  EXPECT_FALSE(next_power_of_two((uint64_t{1} << 63) + 1).has_value());
}

TEST(Lcm, CombinesAlignmentRules) {
  EXPECT_EQ(lcm(12, 128), 384u);
  EXPECT_EQ(lcm(4, 512), 512u);
  EXPECT_EQ(lcm(0, 16), 16u);
  EXPECT_FALSE(lcm(kMax, kMax - 1).has_value());
}

TEST(SlotCapacity, NeverBelowMinSlotBytes) {
  EXPECT_EQ(slot_capacity(0), MIN_SLOT_BYTES);
  EXPECT_EQ(slot_capacity(1), MIN_SLOT_BYTES);
  EXPECT_EQ(slot_capacity(MIN_SLOT_BYTES), MIN_SLOT_BYTES);
}

TEST(SlotCapacity, RoundsToTheNextPowerOfTwo) {
  EXPECT_EQ(slot_capacity(MIN_SLOT_BYTES + 1), 2 * MIN_SLOT_BYTES);
  EXPECT_EQ(slot_capacity(3 * MIN_SLOT_BYTES), 4 * MIN_SLOT_BYTES);
}

TEST(SlotCapacity, NoneAboveMaxSlotBytes) {
  EXPECT_EQ(slot_capacity(MAX_SLOT_BYTES), MAX_SLOT_BYTES);
  EXPECT_FALSE(slot_capacity(MAX_SLOT_BYTES + 1).has_value());
  EXPECT_FALSE(slot_capacity(kMax).has_value());
  // With a ring's own bounds that reach 2^63, the power of two above is still refused cleanly.
  EXPECT_FALSE(slot_capacity((uint64_t{1} << 63) + 1, 1, kMax).has_value());
  EXPECT_EQ(slot_capacity(uint64_t{1} << 63, 1, kMax), uint64_t{1} << 63);
}

TEST(SlotCapacity, MaxThatIsNotAPowerOfTwoCapsTheRoundedValue) {
  // max 100 KiB: 80 KiB rounds to 128 KiB, which is above the max, so none.
  EXPECT_FALSE(slot_capacity(80 << 10, 64 << 10, 100 << 10).has_value());
  EXPECT_EQ(slot_capacity(60 << 10, 64 << 10, 100 << 10), uint64_t{64} << 10);
}

TEST(TextureOffsetAlignment, IsTheLcmOfTheRuleAndTheTexelBlock) {
  CopyLimits limits;  // seed defaults: 512
  EXPECT_EQ(texture_offset_alignment(limits, 4), 512u);
  EXPECT_EQ(texture_offset_alignment(limits, 12), 1536u);
  limits.texture_copy_alignment = 128;  // lavapipe's optimalBufferCopyOffsetAlignment
  EXPECT_EQ(texture_offset_alignment(limits, 16), 128u);
  EXPECT_EQ(texture_offset_alignment(limits, 12), 384u);
}

}  // namespace
}  // namespace staging
