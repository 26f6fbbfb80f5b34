// FillPool and copy_to_staging without a GPU: every byte of every job compared with its source
// (random bytes, never zero, into zeroed destinations), slices claimed FIFO within a lane and
// lanes served in turn, cancellation that leaves no thread on the job, completion callbacks,
// sleeping threads woken by submit (and timed), jobs submitted without waking anyone, holds that
// keep idle threads looking, and pinning. ManySubmittersStress is the ThreadSanitizer target:
// several submitters and threads, random sizes, slices, waits and cancels at once.
#include "staging/core/fill_pool.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "staging/detail/core/fill_engine.hpp"

namespace staging {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> random_bytes(std::size_t n, uint64_t seed) {
  std::vector<std::byte> out(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<uint8_t>(rng() >> 13);
    out[i] = static_cast<std::byte>(b == 0 ? 0x5A : b);
  }
  return out;
}

// "" when equal, else where they first differ.
std::string first_difference(const std::byte* a, const std::byte* b, std::size_t n) {
  if (std::memcmp(a, b, n) == 0) return "";
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i])
      return "first difference at byte " + std::to_string(i) + " of " + std::to_string(n);
  }
  return "";
}

std::shared_ptr<FillPool> make_pool(unsigned threads, Duration spin = 50us,
                                    ThreadPinning pinning = ThreadPinning::None,
                                    Duration held_spin = 2ms) {
  FillPoolConfig c;
  c.threads = threads;
  c.spin = spin;
  c.held_spin = held_spin;
  c.pinning = pinning;
  auto pool = FillPool::create(c);
  EXPECT_TRUE(pool.has_value());
  return pool ? *pool : nullptr;
}

// The pool's job engine: what an uploader or a streamer submits its fill jobs to.
detail::FillEngine& engine(const std::shared_ptr<FillPool>& pool) {
  return detail::engine_of(*pool);
}

void set(detail::FillJob& j, std::byte* dst, const std::byte* src, uint64_t bytes,
         uint64_t slice = 0, FillMethod method = FillMethod::Auto) {
  j.dst = dst;
  j.src = src;
  j.bytes = bytes;
  j.slice_bytes = slice;
  j.method = method;
}

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
          // Neighbours untouched.
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

TEST(CopyToStaging, ResolveNeverAnswersAuto) {
  EXPECT_NE(resolve_fill_method(FillMethod::Auto), FillMethod::Auto);
  EXPECT_EQ(resolve_fill_method(FillMethod::Memcpy), FillMethod::Memcpy);
  EXPECT_EQ(to_string(FillMethod::Streaming), "streaming");
}

// Jobs of every size and slice size, on pools of 0 (the submitter fills all), 1 and 3 threads.
TEST(FillPool, JobsOfAnySizeAreCopiedExactly) {
  const auto src = random_bytes(3 << 20, 3);
  for (unsigned threads : {0u, 1u, 3u}) {
    auto pool = make_pool(threads);
    std::vector<std::byte> dst(src.size());
    std::deque<detail::FillJob> jobs;
    uint64_t off = 0;
    int k = 0;
    for (uint64_t size :
         {1ull, 4095ull, 4096ull, 4097ull, 65536ull + 3, 300000ull, 12345ull, (1ull << 20) + 11}) {
      detail::FillJob& j = jobs.emplace_back();
      const uint64_t slice = (k++ % 3 == 0) ? 0 : 4096 * k;
      set(j, dst.data() + off, src.data() + off, size, slice,
          k % 2 ? FillMethod::Streaming : FillMethod::Memcpy);
      engine(pool).submit(j);
      off += size;
    }
    for (detail::FillJob& j : jobs)
      engine(pool).wait(j);
    for (detail::FillJob& j : jobs)
      EXPECT_TRUE(engine(pool).done(j));
    EXPECT_EQ(first_difference(dst.data(), src.data(), off), "") << threads << " threads";
    const FillPoolStats s = pool->stats();
    EXPECT_EQ(s.bytes, off);
    EXPECT_EQ(s.jobs, jobs.size());
    EXPECT_EQ(s.memcpy_bytes + s.streaming_bytes, off);
    if (threads == 0) {
      EXPECT_EQ(s.helped_bytes, off);
    }
  }
}

// With one thread and no helping, slices are taken oldest job first.
TEST(FillPool, JobsCompleteInSubmissionOrder) {
  auto pool = make_pool(1);
  const auto src = random_bytes(1 << 20, 5);
  std::vector<std::byte> dst(src.size());
  std::deque<detail::FillJob> jobs(6);
  std::vector<int> order;
  std::mutex order_mu;
  struct Ctx {
    std::vector<int>* order;
    std::mutex* mu;
    int id;
  };
  std::vector<Ctx> ctx;
  for (int i = 0; i < 6; ++i)
    ctx.push_back({&order, &order_mu, i});
  std::vector<detail::FillJob*> batch;
  for (int i = 0; i < 6; ++i) {
    detail::FillJob& j = jobs[i];
    const uint64_t n = src.size() / 6;
    set(j, dst.data() + n * i, src.data() + n * i, n, 16384);
    j.context = &ctx[i];
    j.on_done = [](detail::FillJob&, void* c) {
      auto* x = static_cast<Ctx*>(c);
      std::lock_guard lock(*x->mu);
      x->order->push_back(x->id);
    };
    batch.push_back(&j);
  }
  engine(pool).submit(batch);
  while (!engine(pool).done(jobs.back()))
    std::this_thread::yield();
  for (detail::FillJob& j : jobs)
    engine(pool).wait(j);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size() / 6 * 6), "");
}

TEST(FillPool, OnDoneRunsOnceBeforeDoneAndNotForCancelledJobs) {
  auto pool = make_pool(2);
  const auto src = random_bytes(1 << 20, 9);
  std::vector<std::byte> dst(src.size());
  std::atomic<int> calls{0};
  for (int rep = 0; rep < 50; ++rep) {
    detail::FillJob j;
    set(j, dst.data(), src.data(), src.size(), 8192);
    j.context = &calls;
    j.on_done = [](detail::FillJob& job, void* c) {
      static_cast<std::atomic<int>*>(c)->fetch_add(1);
      EXPECT_EQ(job.bytes, uint64_t{1} << 20);
    };
    const int before = calls.load();
    engine(pool).submit(j);
    engine(pool).wait(j);
    EXPECT_EQ(calls.load(), before + 1);  // on_done returned before done() turned true
  }
  // A job cancelled before any slice ran: no callback.
  auto idle = make_pool(0);
  detail::FillJob j;
  set(j, dst.data(), src.data(), src.size());
  j.context = &calls;
  j.on_done = [](detail::FillJob&, void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1000); };
  engine(idle).submit(j);
  engine(idle).cancel(j);
  EXPECT_TRUE(engine(idle).done(j));
  EXPECT_LT(calls.load(), 1000);
  EXPECT_GT(idle->stats().cancelled_slices, 0u);
}

// After a cancel: a new job of `n` bytes (slices of `slice`, 0: the pool's choice) is submitted,
// waited for and arrives whole.
void expect_fills_whole(const std::shared_ptr<FillPool>& pool, std::byte* dst, const std::byte* src,
                        std::size_t n, uint64_t slice) {
  detail::FillJob k;
  set(k, dst, src, n, slice);
  engine(pool).submit(k);
  engine(pool).wait(k);
  EXPECT_EQ(first_difference(dst, src, n), "");
}

TEST(FillPool, CancelLeavesNoThreadOnTheJob) {
  auto pool = make_pool(1);
  const std::size_t n = 8 << 20;
  const auto src = random_bytes(n, 9);
  std::vector<std::byte> dst(n);
  detail::FillJob j;
  set(j, dst.data(), src.data(), n, 4096);  // 2048 slices on one thread: most still queued
  engine(pool).submit(j);
  engine(pool).cancel(j);
  EXPECT_TRUE(engine(pool).done(j));
  // Nothing touches dst any more: overwrite it and see it stay.
  std::fill(dst.begin(), dst.end(), std::byte{1});
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::byte b) { return b == std::byte{1}; }));
  expect_fills_whole(pool, dst.data(), src.data(), n, 0);  // the pool goes on working
}

// A job with two slices or more that is its lane's oldest, while no other lane has work, is
// claimed from the pool's open window (a compare-and-swap, not the queue lock). Cancelling it
// drops what the window still holds: here the submitter (no pool threads) copied 3 of 16 slices,
// so 13 are dropped, the job is done, and the bytes past the third slice are never written.
//
//   job: [s0 s1 s2 | s3 ... s15]    copied by help_one | dropped by cancel
TEST(FillPool, CancelDropsWhatTheOpenWindowStillHolds) {
  auto pool = make_pool(0);
  const std::size_t n = 16 * 4096;
  const auto src = random_bytes(n, 61);
  std::vector<std::byte> dst(n);
  detail::FillJob j;
  set(j, dst.data(), src.data(), n, 4096);
  engine(pool).submit(j);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(engine(pool).help_one(j));
  engine(pool).cancel(j);
  EXPECT_TRUE(engine(pool).done(j));
  EXPECT_FALSE(engine(pool).help_one(j));
  EXPECT_EQ(pool->stats().cancelled_slices, 13u);
  EXPECT_EQ(pool->stats().helped_slices, 3u);
  EXPECT_EQ(first_difference(dst.data(), src.data(), 3 * 4096), "");
  EXPECT_TRUE(std::all_of(dst.begin() + 3 * 4096, dst.end(),
                          [](std::byte b) { return b == std::byte{0}; }));
  expect_fills_whole(pool, dst.data(), src.data(), n, 4096);  // the pool goes on working
}

// One job holds the open window (lane a); a job of another lane (b) submitted after it sends a's
// window back to lane a, and b's own submitter fills b at once: waiting for it never waits for
// a, which stays untouched with no pool thread to fill it.
TEST(FillPool, AnotherLanesJobDoesNotWaitForTheOpenWindow) {
  auto pool = make_pool(0);
  const std::size_t n = 8 * 4096;
  const auto src = random_bytes(2 * n, 67);
  std::vector<std::byte> dst(2 * n);
  detail::FillJob a, b;
  set(a, dst.data(), src.data(), n, 4096);
  set(b, dst.data() + n, src.data() + n, n, 4096);
  a.lane = engine(pool).new_lane();
  b.lane = engine(pool).new_lane();
  engine(pool).submit(a);  // a's 8 slices: the window
  engine(pool).submit(b);  // b's: in its lane
  engine(pool).wait(b);
  EXPECT_EQ(first_difference(dst.data() + n, src.data() + n, n), "");
  EXPECT_FALSE(engine(pool).done(a));
  EXPECT_TRUE(
      std::all_of(dst.begin(), dst.begin() + n, [](std::byte x) { return x == std::byte{0}; }));
  engine(pool).wait(a);
  EXPECT_EQ(first_difference(dst.data(), src.data(), 2 * n), "");
}

// Waits until every thread of `pool` sleeps (they look for `spin` first); false after 10 s.
bool all_asleep(FillPool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (detail::engine_of(pool).awake() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// One pool thread, asleep. Job a (lane a, 64 slices) opens the window; job b (lane b, one slice)
// is submitted next, which sends what is left of a's window back to lane a; job c wakes the
// thread. The thread then serves the lanes in turn, slice by slice, so b is done after at most
// three claims, long before a (a window drained first would finish a before b).
TEST(FillPool, AWindowGoesBackToItsLaneWhenAnotherLaneHasWork) {
  auto pool = make_pool(1, 0us);
  ASSERT_TRUE(all_asleep(*pool));
  const auto src = random_bytes(66 * 4096, 71);
  std::vector<std::byte> dst(src.size());
  std::mutex order_mu;
  std::vector<char> order;
  struct Ctx {
    std::mutex* mu;
    std::vector<char>* order;
    char id;
  };
  Ctx ca{&order_mu, &order, 'a'}, cb{&order_mu, &order, 'b'}, cc{&order_mu, &order, 'c'};
  detail::FillJob a, b, c;
  set(a, dst.data(), src.data(), 64 * 4096, 4096);
  set(b, dst.data() + 64 * 4096, src.data() + 64 * 4096, 4096, 4096);
  set(c, dst.data() + 65 * 4096, src.data() + 65 * 4096, 4096, 4096);
  for (auto [job, ctx] : {std::pair{&a, &ca}, std::pair{&b, &cb}, std::pair{&c, &cc}}) {
    job->lane = engine(pool).new_lane();
    job->context = ctx;
    job->on_done = [](detail::FillJob&, void* p) {
      auto* x = static_cast<Ctx*>(p);
      std::lock_guard lock(*x->mu);
      x->order->push_back(x->id);
    };
  }
  engine(pool).submit(a, /*wake=*/false);
  engine(pool).submit(b, /*wake=*/false);
  engine(pool).submit(c);  // wakes the thread
  for (detail::FillJob* j : {&a, &b, &c}) {
    while (!engine(pool).done(*j))
      std::this_thread::yield();  // the pool's thread alone fills them
  }
  ASSERT_EQ(order.size(), 3u);
  EXPECT_LT(std::find(order.begin(), order.end(), 'b'), std::find(order.begin(), order.end(), 'a'))
      << std::string(order.begin(), order.end());
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");
}

// Two submitters and no pool thread: each fills its own jobs, while the other's submits and
// claims move jobs between their lanes and the window. A submitter waiting for its job must find
// every slice of it wherever it is; one it missed would stay unfilled (wait_for times out).
TEST(FillPool, SubmittersFindTheirSlicesWhereverTheyAre) {
  auto pool = make_pool(0);
  const std::size_t n = 16 * 4096;
  const auto src = random_bytes(2 * n, 73);
  std::vector<std::byte> dst(2 * n);
  std::atomic<int> missed{0};
  const auto submitter = [&](std::size_t who) {
    const unsigned lane = engine(pool).new_lane();
    for (int i = 0; i < 400; ++i) {
      detail::FillJob j;
      set(j, dst.data() + who * n, src.data() + who * n, n, 4096);
      j.lane = lane;
      engine(pool).submit(j);
      if (!engine(pool).wait_for(j, 5s)) {
        missed.fetch_add(1);
        engine(pool).cancel(j);
      }
    }
    engine(pool).release_lane(lane);
  };
  std::thread first(submitter, 0), second(submitter, 1);
  first.join();
  second.join();
  EXPECT_EQ(missed.load(), 0);
  EXPECT_EQ(first_difference(dst.data(), src.data(), 2 * n), "");
}

// A job cancelled while all 2048 of its slices sit in the window: both pool threads are held in
// blockers' completion callbacks meanwhile. The slices dropped are taken off the queue's count, so
// once released the threads find nothing more and sleep (with the count left high they would
// keep looking for slices forever).
TEST(FillPool, ACancelledWindowLeavesNothingQueued) {
  auto pool = make_pool(2);
  const std::size_t n = 8 << 20;
  const auto src = random_bytes(n, 79);
  std::vector<std::byte> dst(n);
  std::atomic<bool> release{false};
  std::deque<detail::FillJob> blockers(2);
  for (detail::FillJob& b : blockers) {
    set(b, dst.data(), src.data(), 4096, 4096);
    b.lane = engine(pool).new_lane();
    b.context = &release;
    b.on_done = [](detail::FillJob&, void* r) {
      while (!static_cast<std::atomic<bool>*>(r)->load())
        std::this_thread::yield();
    };
    engine(pool).submit(b);
  }
  while (pool->stats().slices < 2)
    std::this_thread::yield();  // each thread is in a blocker's callback
  detail::FillJob j;
  set(j, dst.data(), src.data(), n, 4096);  // 2048 slices: the window
  engine(pool).submit(j);
  engine(pool).cancel(j);
  EXPECT_TRUE(engine(pool).done(j));
  EXPECT_EQ(pool->stats().cancelled_slices, 2048u);
  release.store(true);
  for (detail::FillJob& b : blockers)
    engine(pool).wait(b);
  EXPECT_TRUE(all_asleep(*pool));
}

// Threads that went to sleep (spin 0) are woken by submit: the job completes although the
// submitter never helps.
TEST(FillPool, SleepingThreadsAreWokenBySubmit) {
  auto pool = make_pool(2, Duration::zero());
  const auto src = random_bytes(1 << 20, 13);
  std::vector<std::byte> dst(src.size());
  for (int rep = 0; rep < 20; ++rep) {
    ASSERT_TRUE(all_asleep(*pool)) << "rep " << rep;  // both threads fall asleep
    detail::FillJob j;
    set(j, dst.data(), src.data(), src.size(), 65536);
    engine(pool).submit(j);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!engine(pool).done(j) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ASSERT_TRUE(engine(pool).done(j)) << "rep " << rep;
  }
  const FillPoolStats s = pool->stats();
  EXPECT_GT(s.sleeps, 0u);
  EXPECT_GT(s.wakeups, 0u);
  EXPECT_EQ(s.helped_bytes, 0u);
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");
  // Each wake-up was timed, from the submit's call until the thread ran.
  EXPECT_GT(s.wake_samples, 0u);
  EXPECT_GE(s.wake_ns, s.wake_max_ns);
  EXPECT_GT(engine(pool).wake_latency(), Duration::zero());
}

// submit(job, wake = false) wakes nobody: the submitter's wait() fills what no awake thread took.
TEST(FillPool, AJobSubmittedWithoutWakingIsFilledByItsSubmitter) {
  auto pool = make_pool(2, Duration::zero(), ThreadPinning::None, Duration::zero());
  const auto src = random_bytes(1 << 20, 31);
  std::vector<std::byte> dst(src.size());
  ASSERT_TRUE(all_asleep(*pool));
  const FillPoolStats before = pool->stats();
  detail::FillJob j;
  set(j, dst.data(), src.data(), src.size(), 65536);
  engine(pool).submit(j, /*wake=*/false);
  engine(pool).wait(j);
  const FillPoolStats after = pool->stats();
  EXPECT_EQ(after.wakeups, before.wakeups);
  EXPECT_EQ(after.unwoken_jobs, before.unwoken_jobs + 1);
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");
}

// While a Hold lives, idle threads keep looking for work (held_spin) instead of sleeping (spin 0);
// once it is released they sleep again.
TEST(FillPool, AHoldKeepsIdleThreadsLooking) {
  auto pool = make_pool(2, Duration::zero(), ThreadPinning::None, 60s);
  const auto src = random_bytes(1 << 20, 37);
  std::vector<std::byte> dst(src.size());
  ASSERT_TRUE(all_asleep(*pool));
  {
    detail::FillEngine::Hold hold = engine(pool).hold();
    detail::FillJob j;
    set(j, dst.data(), src.data(), src.size(), 65536);
    engine(pool).submit(j);  // wakes both
    engine(pool).wait(j);
    const uint64_t sleeps = pool->stats().sleeps;
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(pool->stats().sleeps, sleeps);  // nobody went back to sleep under the hold
    // A Hold moved from is empty; moving keeps the one hold alive.
    detail::FillEngine::Hold moved = std::move(hold);
    std::this_thread::sleep_for(10ms);
    EXPECT_EQ(pool->stats().sleeps, sleeps);
  }
  EXPECT_TRUE(all_asleep(*pool));  // released: back to sleep
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");
}

// Two lanes with three one-slice jobs each, queued while the only thread is busy: the thread then
// alternates between the lanes (a0 b0 a1 b1 a2 b2) instead of finishing lane a first.
TEST(FillPool, LanesAreServedInTurn) {
  auto pool = make_pool(1);
  const auto src = random_bytes(1 << 20, 41);
  std::vector<std::byte> dst(src.size());
  std::mutex order_mu;
  std::vector<int> order;
  std::atomic<bool> release{false};
  struct Ctx {
    std::mutex* mu;
    std::vector<int>* order;
    std::atomic<bool>* release;
    int id;
  };
  // The blocker: its on_done (run by the pool's thread) waits until every other job is queued.
  detail::FillJob blocker;
  Ctx blocker_ctx{&order_mu, &order, &release, -1};
  set(blocker, dst.data(), src.data(), 4096, 4096);
  blocker.lane = 5;
  blocker.context = &blocker_ctx;
  blocker.on_done = [](detail::FillJob&, void* c) {
    auto* x = static_cast<Ctx*>(c);
    while (!x->release->load())
      std::this_thread::yield();
  };
  engine(pool).submit(blocker);
  while (pool->stats().slices == 0)
    std::this_thread::yield();  // the thread holds the blocker's slice
  std::deque<detail::FillJob> jobs(6);
  std::vector<Ctx> ctx;
  for (int i = 0; i < 6; ++i)
    ctx.push_back({&order_mu, &order, &release, i});
  const unsigned lane_a = engine(pool).new_lane(), lane_b = engine(pool).new_lane();
  EXPECT_NE(lane_a % detail::FillEngine::kLanes, lane_b % detail::FillEngine::kLanes);
  for (int i = 0; i < 6; ++i) {
    detail::FillJob& j = jobs[i];
    const uint64_t off = 8192 + 4096 * static_cast<uint64_t>(i);
    set(j, dst.data() + off, src.data() + off, 4096, 4096);
    j.lane = i < 3 ? lane_a : lane_b;  // jobs 0 1 2 in lane a, 3 4 5 in lane b
    j.context = &ctx[i];
    j.on_done = [](detail::FillJob&, void* c) {
      auto* x = static_cast<Ctx*>(c);
      std::lock_guard lock(*x->mu);
      x->order->push_back(x->id);
    };
    engine(pool).submit(j);
  }
  release.store(true);
  while (!std::all_of(jobs.begin(), jobs.end(),
                      [&](const detail::FillJob& j) { return engine(pool).done(j); }))
    std::this_thread::yield();
  engine(pool).wait(blocker);
  const bool a_first = order.front() == 0;
  EXPECT_EQ(order,
            a_first ? (std::vector<int>{0, 3, 1, 4, 2, 5}) : (std::vector<int>{3, 0, 4, 1, 5, 2}));
}

// A job limited to 2 pool threads on a pool of 6 whose idle threads all look for work: its lane
// never has more than 2 of them copying at once (lane_peak, kept under the queue lock as slices
// are claimed), and the others take another lane's job meanwhile: the pool alone fills both
// (the test's thread only watches). Both jobs arrive exactly.
TEST(FillPool, ALanesThreadLimitHolds) {
  auto pool = make_pool(6, 50us, ThreadPinning::None, 20ms);
  const std::size_t big = 48u << 20, other = 8u << 20;
  const auto src = random_bytes(big + other, 51);
  std::vector<std::byte> dst(src.size());
  detail::FillEngine& e = engine(pool);
  const unsigned limited = e.new_lane(), free_lane = e.new_lane();
  const detail::FillEngine::Hold hold = e.hold();  // idle threads keep looking
  detail::FillJob a, b;
  set(a, dst.data(), src.data(), big, 1 << 20);
  a.lane = limited;
  a.max_threads = 2;
  set(b, dst.data() + big, src.data() + big, other, 64 << 10);
  b.lane = free_lane;
  e.submit(a);
  e.submit(b);
  while (!e.done(a) || !e.done(b)) {  // the test's thread never helps: the pool fills both
    EXPECT_LE(e.lane_threads(limited), 2u);
    EXPECT_EQ(e.lane_threads(free_lane), 0u);  // no limit: not counted
    std::this_thread::yield();
  }
  EXPECT_EQ(pool->stats().helped_slices, 0u);
  EXPECT_LE(e.lane_peak(limited), 2u);
  EXPECT_GE(e.lane_peak(limited), 1u);
  EXPECT_EQ(e.lane_peak(free_lane), 0u);
  EXPECT_EQ(e.lane_threads(limited), 0u);
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");
}

// Threads over a lane's limit sleep once they have looked for a moment, and are woken by the next
// submit: a limited job, then (after the waiters have gone to sleep) a job in another lane that
// only the pool's threads fill. Then a limited job cancelled halfway, and a pool destroyed with a
// limited job queued: nothing hangs, every byte that was copied is right.
TEST(FillPool, ThreadsAtALimitSleepAndWakeForNewWork) {
  auto pool = make_pool(4, 50us, ThreadPinning::None, 200us);
  detail::FillEngine& e = engine(pool);
  const std::size_t big = 32u << 20;
  const auto src = random_bytes(big * 2, 61);
  std::vector<std::byte> dst(src.size());
  detail::FillJob a, b;
  set(a, dst.data(), src.data(), big, 256 << 10);
  a.lane = e.new_lane();
  a.max_threads = 1;
  e.submit(a);
  std::this_thread::sleep_for(5ms);  // the threads over the limit have stopped looking by now
  set(b, dst.data() + big, src.data() + big, big, 256 << 10);
  b.lane = e.new_lane();
  e.submit(b);
  while (!e.done(a) || !e.done(b))
    std::this_thread::yield();
  EXPECT_EQ(pool->stats().helped_slices, 0u);
  EXPECT_LE(e.lane_peak(a.lane), 1u);
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");

  std::fill(dst.begin(), dst.end(), std::byte{0});
  detail::FillJob c;
  set(c, dst.data(), src.data(), big * 2, 256 << 10);
  c.lane = a.lane;
  c.max_threads = 2;
  e.submit(c);
  std::this_thread::sleep_for(1ms);
  e.cancel(c);
  EXPECT_TRUE(e.done(c));
  EXPECT_EQ(e.lane_threads(c.lane), 0u);
  for (std::size_t i = 0; i < dst.size(); i += 4096) {  // each page copied whole or not at all
    const bool copied = dst[i] == src[i];
    ASSERT_TRUE(copied || dst[i] == std::byte{0}) << i;
  }

  {
    auto doomed = make_pool(3, 50us);
    detail::FillJob d;
    set(d, dst.data(), src.data(), big, 64 << 10);
    d.max_threads = 1;
    engine(doomed).submit(d);
  }  // the destructor copies what is queued, under the limit, then joins
  EXPECT_EQ(first_difference(dst.data(), src.data(), big), "");
}

TEST(FillPool, WaitForTimesOutOnlyWhenSlicesAreStillRunning) {
  auto pool = make_pool(0);
  const auto src = random_bytes(1 << 16, 17);
  std::vector<std::byte> dst(src.size());
  detail::FillJob j;
  set(j, dst.data(), src.data(), src.size());
  engine(pool).submit(j);
  EXPECT_TRUE(engine(pool).wait_for(j, 1s));  // the caller fills it
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");
  EXPECT_TRUE(engine(pool).wait_for(j, Duration::zero()));  // done already
}

// The ThreadSanitizer target: 8 submitters on a 3-thread pool, random sizes, slices, methods;
// each waits, waits with a timeout, or cancels; every byte of every completed job is compared,
// and a cancelled job's bytes are each either copied or untouched.
TEST(FillPool, ManySubmittersStress) {
  auto pool = make_pool(3, 20us);
  constexpr int kSubmitters = 8;
  const std::size_t region = 256 << 10;
  const auto src = random_bytes(region * kSubmitters, 21);
  std::vector<std::byte> dst(src.size());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kSubmitters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::byte* d = dst.data() + region * t;
      const std::byte* s = src.data() + region * t;
      std::deque<detail::FillJob> jobs;
      for (int rep = 0; rep < 60; ++rep) {
        const uint64_t size = 1 + rng() % region;
        std::memset(d, 0, size);
        // One to three jobs over [0, size), submitted together, handled in order.
        const int parts = 1 + static_cast<int>(rng() % 3);
        std::vector<detail::FillJob*> batch;
        jobs.clear();
        for (int p = 0; p < parts; ++p) {
          const uint64_t lo = size * p / parts, hi = size * (p + 1) / parts;
          if (hi == lo) continue;
          detail::FillJob& j = jobs.emplace_back();
          set(j, d + lo, s + lo, hi - lo, (rng() % 4) * 4096,
              rng() % 2 ? FillMethod::Memcpy : FillMethod::Streaming);
          j.lane = static_cast<unsigned>(rng() % 3);
          j.max_threads = static_cast<unsigned>(rng() % 3);  // 0: no limit
          batch.push_back(&j);
        }
        engine(pool).submit(batch);
        const int how = static_cast<int>(rng() % 4);
        bool cancelled = false;
        for (detail::FillJob& j : jobs) {
          if (how == 3) {
            engine(pool).cancel(j);
            cancelled = true;
          } else if (how == 2) {
            while (!engine(pool).wait_for(j, 1ms)) {
            }
          } else {
            engine(pool).wait(j);
          }
          if (!engine(pool).done(j)) failures.fetch_add(1);
        }
        for (uint64_t i = 0; i < size; ++i) {
          const bool ok = d[i] == s[i] || (cancelled && d[i] == std::byte{0});
          if (!ok) {
            failures.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(FillPool, ThreadsArePinnedWhereTheTopologySays) {
  // A CPU this process may run on (a container may not allow CPU 0).
  const int cpu = HostTopology::read().nodes.front().cpus.front();
  HostTopology topo;
  topo.nodes.push_back(HostTopology::Node{0, {cpu}});
  FillPoolConfig c;
  c.threads = 2;
  c.pinning = ThreadPinning::Core;
  auto pool = detail::create_fill_pool(c, topo);
  ASSERT_TRUE(pool.has_value());
  const auto src = random_bytes(1 << 20, 23);
  std::vector<std::byte> dst(src.size());
  detail::FillJob j;
  set(j, dst.data(), src.data(), src.size());
  engine(*pool).submit(j);
  engine(*pool).wait(j);
  EXPECT_EQ(first_difference(dst.data(), src.data(), src.size()), "");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while ((*pool)->stats().pinned_threads < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ((*pool)->stats().pinned_threads, 2u);

  // A CPU the kernel refuses: the threads run unpinned and still fill.
  topo.nodes[0].cpus = {CPU_SETSIZE - 1};
  auto unpinned = detail::create_fill_pool(c, topo);
  ASSERT_TRUE(unpinned.has_value());
  detail::FillJob k;
  set(k, dst.data(), src.data(), src.size());
  engine(*unpinned).submit(k);
  engine(*unpinned).wait(k);
  EXPECT_EQ((*unpinned)->stats().pinned_threads, 0u);
}

TEST(FillPool, InvalidConfigIsRefused) {
  FillPoolConfig c;
  c.spin = -1us;
  auto pool = FillPool::create(c);
  ASSERT_FALSE(pool.has_value());
  EXPECT_EQ(pool.error(), CreateError::InvalidConfig);
  EXPECT_EQ(to_string(CreateError::ThreadStartFailed), "ThreadStartFailed");
  EXPECT_EQ(to_string(ThreadPinning::Node), "Node");
}

}  // namespace
// Lanes go to the submitters alive now: one that leaves gives its lane back, so a pool shared by
// uploaders that come and go never puts two live ones in one lane (before, lanes were handed out
// in turn and the 17th submitter ever created shared lane 0 with the first, alive or not).
TEST(FillPool, LanesOfSubmittersThatLeftAreHandedOutAgain) {
  auto pool = make_pool(1);
  detail::FillEngine& e = engine(pool);
  constexpr unsigned kLanes = detail::FillEngine::kLanes;
  std::vector<unsigned> held;
  for (unsigned i = 0; i < kLanes; ++i)
    held.push_back(e.new_lane());
  std::vector<unsigned> sorted = held;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // 16 distinct lanes
  // Many submitters come and go while the 16 stay: each gets the lane the last one gave back.
  e.release_lane(held[5]);
  for (int round = 0; round < 40; ++round) {
    const unsigned lane = e.new_lane();
    EXPECT_EQ(lane, held[5]);
    e.release_lane(lane);
  }
  // All 16 leave; 16 new ones get 16 distinct lanes again.
  for (unsigned lane : held) {
    if (lane != held[5]) e.release_lane(lane);
  }
  std::vector<unsigned> again;
  for (unsigned i = 0; i < kLanes; ++i)
    again.push_back(e.new_lane());
  std::sort(again.begin(), again.end());
  EXPECT_EQ(std::adjacent_find(again.begin(), again.end()), again.end());
  // A 17th shares the lane of fewest (one) holders; released, every lane has one holder again.
  const unsigned extra = e.new_lane();
  EXPECT_LT(extra, kLanes);
  e.release_lane(extra);
  for (unsigned lane : again)
    e.release_lane(lane);
}

}  // namespace staging
