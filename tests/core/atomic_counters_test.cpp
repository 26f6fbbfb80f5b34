// AtomicCounters (atomic_counters.hpp): each mirrored member gets exactly what was added to its
// own counter (distinct amounts per member, so a counter copied into another member's place is
// caught), members not mirrored are left alone, and adds from several threads are not lost.
#include "staging/detail/core/atomic_counters.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace staging {
namespace {

struct ThreeStats {
  uint64_t first = 0;
  uint64_t not_mirrored = 0;
  uint64_t second = 0;
  uint64_t peak = 0;
};
using S = ThreeStats;
using Live = AtomicCounters<S, &S::first, &S::second, &S::peak>;

TEST(AtomicCounters, StoreIntoSetsEachMirroredMemberToItsOwnCounter) {
  Live live;
  live.add<&S::first>();
  live.add<&S::first>(10);
  live.add<&S::second>(200);
  live.raise_to<&S::peak>(7);
  live.raise_to<&S::peak>(3000);
  live.raise_to<&S::peak>(5);  // lower: no change
  S s;
  s.not_mirrored = 4444;
  s.second = 99999;  // replaced, not added to
  live.store_into(s);
  EXPECT_EQ(s.first, 11u);
  EXPECT_EQ(s.second, 200u);
  EXPECT_EQ(s.peak, 3000u);
  EXPECT_EQ(s.not_mirrored, 4444u);
  EXPECT_EQ(live.load<&S::first>(), 11u);
  EXPECT_EQ(live.load<&S::second>(), 200u);
}

TEST(AtomicCounters, AddIntoSumsSeveralMirrors) {
  Live a, b;
  a.add<&S::first>(3);
  a.add<&S::second>(50);
  b.add<&S::first>(4);
  b.add<&S::second>(600);
  S s;
  s.first = 1000;
  s.not_mirrored = 17;
  a.add_into(s);
  b.add_into(s);
  EXPECT_EQ(s.first, 1007u);
  EXPECT_EQ(s.second, 650u);
  EXPECT_EQ(s.not_mirrored, 17u);
}

TEST(AtomicCounters, AddsFromSeveralThreadsAreNotLost) {
  Live live;
  constexpr int kThreads = 4;
  constexpr uint64_t kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&live, t] {
      for (uint64_t i = 0; i < kAdds; ++i) {
        live.add<&S::first>();
        live.add<&S::second>(3);
        live.raise_to<&S::peak>(uint64_t(t) * kAdds + i);
      }
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(live.load<&S::first>(), kThreads * kAdds);
  EXPECT_EQ(live.load<&S::second>(), 3 * kThreads * kAdds);
  EXPECT_EQ(live.load<&S::peak>(), kThreads * kAdds - 1);
}

}  // namespace
}  // namespace staging
