// Expected<T, E>: the error-as-value type every fallible call returns.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "staging/core/errors.hpp"

namespace staging {
namespace {

enum class Err { A, B };

Expected<int, Err> half(int v) {
  if (v % 2 != 0) return unexpected(Err::B);
  return v / 2;
}

TEST(Expected, HoldsAValueOrAnError) {
  const auto ok = half(8);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 4);
  const auto bad = half(3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), Err::B);
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(Expected, MoveOnlyValuesAndVoid) {
  Expected<std::unique_ptr<int>, Err> p = std::make_unique<int>(7);
  ASSERT_TRUE(p);
  std::unique_ptr<int> taken = std::move(p).value();
  EXPECT_EQ(*taken, 7);
  Expected<void, Err> v;
  EXPECT_TRUE(v);
  Expected<void, Err> e = unexpected(Err::A);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error(), Err::A);
}

TEST(ExpectedDeathTest, ValueOfAnErrorAborts) {
  EXPECT_DEATH(
      {
        const auto bad = half(1);
        (void)bad.value();
      },
      "internal invariant violated");
}

}  // namespace
}  // namespace staging
