// The fill threads' building blocks, without a GPU: copy_to_staging (memcpy and streaming stores,
// every small size and misalignment) and FillPool (slices, FIFO, cancel).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <thread>

#include "fill_copy.hpp"
#include "fill_pool.hpp"
#include "test_bytes.hpp"

namespace staging::cuda {
namespace {

using detail::copy_to_staging;
using detail::FillJob;
using detail::FillPool;
using testing::first_difference;
using testing::random_bytes;

TEST(CopyToStaging, EverySizeAndMisalignmentIsExact) {
  const auto src = random_bytes(4096 + 64, 7);
  std::vector<std::byte> dst(4096 + 128);
  for (FillMethod m : {FillMethod::Memcpy, FillMethod::Streaming, FillMethod::Auto}) {
    for (std::size_t size : {0,   1,   2,   15,  16,  17,   63,   64,   65,   127,
                             128, 129, 511, 512, 513, 1000, 2047, 2048, 4095, 4096}) {
      for (std::size_t so = 0; so < 40; so += 13) {
        for (std::size_t d = 0; d < 40; d += 7) {
          std::fill(dst.begin(), dst.end(), std::byte{0});
          copy_to_staging(dst.data() + d, src.data() + so, size, m);
          ASSERT_EQ(first_difference(dst.data() + d, src.data() + so, size), "")
              << to_string(m) << " size " << size << " src+" << so << " dst+" << d;
          // Neighbours untouched (I4 at the smallest scale).
          for (std::size_t i = 0; i < d; ++i)
            ASSERT_EQ(dst[i], std::byte{0});
          for (std::size_t i = d + size; i < dst.size(); ++i)
            ASSERT_EQ(dst[i], std::byte{0});
        }
      }
    }
  }
}

TEST(CopyToStaging, LargeCopiesAreExact) {
  const std::size_t n = (std::size_t{3} << 20) + 77;
  const auto src = random_bytes(n + 8, 11);
  std::vector<std::byte> dst(n + 16);
  for (FillMethod m : {FillMethod::Memcpy, FillMethod::Streaming}) {
    copy_to_staging(dst.data() + 3, src.data() + 5, n, m);
    ASSERT_EQ(first_difference(dst.data() + 3, src.data() + 5, n), "") << to_string(m);
  }
}

TEST(FillPool, JobsOfAnySizeAreCopiedExactly) {
  FillPool pool(3, FillMethod::Auto);
  const auto src = random_bytes(1 << 20, 3);
  std::vector<std::byte> dst(1 << 20);
  std::deque<FillJob> jobs;
  uint64_t off = 0;
  for (uint64_t size : {1ull, 4095ull, 4096ull, 4097ull, 65536ull + 3, 300000ull, 12345ull}) {
    FillJob& j = jobs.emplace_back();
    j.dst = dst.data() + off;
    j.src = src.data() + off;
    j.bytes = size;
    pool.submit(j, 4096);
    off += size;
  }
  for (FillJob& j : jobs)
    pool.wait(j);
  for (FillJob& j : jobs)
    EXPECT_TRUE(pool.done(j));
  EXPECT_EQ(first_difference(dst.data(), src.data(), off), "");
}

TEST(FillPool, ManySubmittersAtOnce) {
  FillPool pool(4, FillMethod::Auto);
  const std::size_t per = 1 << 18;
  const auto src = random_bytes(per * 6, 5);
  std::vector<std::byte> dst(per * 6);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        FillJob j;
        j.dst = dst.data() + per * t;
        j.src = src.data() + per * t;
        j.bytes = per;
        pool.submit(j, 16384 * (rep % 3 + 1));
        pool.wait(j);
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(first_difference(dst.data(), src.data(), dst.size()), "");
}

TEST(FillPool, CancelLeavesNoThreadOnTheJob) {
  FillPool pool(1, FillMethod::Memcpy);
  const std::size_t n = 8 << 20;
  const auto src = random_bytes(n, 9);
  std::vector<std::byte> dst(n);
  FillJob j;
  j.dst = dst.data();
  j.src = src.data();
  j.bytes = n;
  pool.submit(j, 4096);  // 2048 slices on one thread: most are still queued when cancelled
  pool.cancel(j);
  EXPECT_TRUE(pool.done(j));
  // Nothing touches dst any more: overwrite it and see it stay.
  std::fill(dst.begin(), dst.end(), std::byte{1});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::byte b) { return b == std::byte{1}; }));
}

}  // namespace
}  // namespace staging::cuda
