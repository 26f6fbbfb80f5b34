// The upload pipeline's paths on the fake device, each forced through the planner's override and
// every device byte compared: small pieces (many copies per reservation), the direct part (its
// pageable copy reads the source late on the fake, so an upload that returned before that copy
// completed would deliver scribbled bytes), a busy stream (no direct part), a failing direct
// copy, the calling thread filling alongside the pool, several Uploaders sharing one FillPool, and
// a MultiUploader over several fake devices under one pinned cap.
//
//   upload of 3 MiB + 7, direct part 1 MiB, pieces 96 KiB:
//   stream:  [direct 0..1M][p0][p1][p2] ... [p21]   ring: 1 MiB, reservations of whole pieces
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "fake_device.hpp"
#include "staging/cuda/multi_uploader.hpp"
#include "staging/cuda/uploader.hpp"
#include "staging/detail/core/fill_engine.hpp"
#include "staging/detail/core/host_topology.hpp"
#include "test_bytes.hpp"
#include "test_options.hpp"
#include "uploader_testing.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using detail::UploaderTestAccess;
using testing::FakeDevice;
using testing::first_difference;
using testing::opts;
using testing::random_bytes;

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

UploaderConfig config(unsigned threads = 2) {
  UploaderConfig c;
  c.ring_bytes = 1 * MiB;
  c.chunk_bytes = 256 * KiB;
  c.min_piece_bytes = 32 * KiB;
  c.fill_threads = threads;
  c.inline_fill_bytes = 4 * KiB;
  c.wait_timeout =
      30s;  // generous: CI hosts may be heavily loaded (the stalled tests pass their own)
  c.events = 64;
  c.check_invariants = true;
  return c;
}

struct PathsTest : ::testing::Test {
  FakeDevice device{std::chrono::microseconds(300)};
  std::optional<Uploader> uploader;

  void make(const UploaderConfig& c) {
    auto u = detail::create_uploader(c, device);
    ASSERT_TRUE(u.has_value()) << to_string(u.error());
    uploader.emplace(std::move(*u));
  }
  void force(std::optional<uint64_t> direct, std::optional<uint64_t> piece,
             std::optional<FillMethod> method = std::nullopt,
             std::optional<bool> wake = std::nullopt) {
    UploaderTestAccess::force(*uploader, direct, piece, method, wake);
  }

  // Uploads `size` random bytes, scribbles over the source as soon as upload() returns, and
  // checks every device byte against the original.
  void upload_and_check(uint64_t size, uint64_t seed, cudaStream_t stream = nullptr) {
    auto src = random_bytes(size, seed);
    const auto original = src;
    std::byte* dst = device.device_alloc(size);
    auto p = uploader->upload(dst, src.data(), size, stream);
    ASSERT_TRUE(p.has_value()) << to_string(p.error().kind);
    std::fill(src.begin(), src.end(), std::byte{0});
    ASSERT_TRUE(uploader->wait(*p, 10s));
    device.synchronize_all();
    EXPECT_EQ(first_difference(dst, original.data(), size), "") << size;
  }

  void TearDown() override {
    uploader.reset();
    device.synchronize_all();
    EXPECT_TRUE(device.violations().empty()) << device.violations().front();
  }
};

TEST_F(PathsTest, SmallPiecesManyCopiesPerReservation) {
  make(config());
  force(std::nullopt, 96 * KiB, FillMethod::Streaming);
  upload_and_check(3 * MiB + 7, 1);
  const UploaderStats s = uploader->stats();
  EXPECT_EQ(s.copies, (3 * MiB + 7 + 96 * KiB - 1) / (96 * KiB));
  // Reservations hold whole pieces (two of 96 KiB in a 256 KiB chunk): fewer events than copies.
  EXPECT_LT(s.ring.reservations, s.copies);
  EXPECT_EQ(s.streaming_uploads, 1u);
  EXPECT_EQ(s.direct_uploads, 0u);
}

TEST_F(PathsTest, EveryPieceSizeAndOddSizes) {
  make(config(3));
  uint64_t seed = 10;
  for (uint64_t piece : {4 * KiB, 36 * KiB, 100 * KiB, 256 * KiB}) {
    force(std::nullopt, piece, FillMethod::Memcpy);
    // (4 KiB pieces: inline fills; kept to small uploads, every piece is a fake stream op.)
    const uint64_t largest = piece == 4 * KiB ? 300 * KiB + 1 : 2 * MiB + 4095;
    for (uint64_t size : {uint64_t{1}, 5 * KiB + 3, 300 * KiB + 1, largest}) {
      SCOPED_TRACE(::testing::Message() << "piece " << piece << " size " << size);
      upload_and_check(size, ++seed);
    }
  }
}

// The direct part: the fake's pageable copy reads the source when its stream runs it (up to
// 300 µs later); upload_and_check scribbles over the source once upload() returns, so an upload
// that returned before its direct copy completed fails the byte check.
TEST_F(PathsTest, ADirectPartThenTheRingOnAnIdleStream) {
  make(config(1));
  force(1 * MiB, 96 * KiB);
  // A ring part that fits the ring (upload() returns without waiting for any copy), and one of
  // several rings.
  for (int i = 0; i < 6; ++i)
    upload_and_check(i % 2 ? 3 * MiB + 7 : 1 * MiB + 300 * KiB, 20 + i);
  const UploaderStats s = uploader->stats();
  EXPECT_EQ(s.direct_uploads, 6u);
  EXPECT_EQ(s.direct_bytes, 6 * MiB);
  EXPECT_EQ(device.pageable_copies(), 6u);
  EXPECT_EQ(device.pageable_bytes(), 6 * MiB);
  EXPECT_GT(s.direct_gbps, 0);  // measured from call to completion
}

TEST_F(PathsTest, AllDirectWhenThePartIsTheWholeUpload) {
  make(config(1));
  force(8 * MiB, std::nullopt);
  upload_and_check(2 * MiB + 1, 30);  // more than the ring, no ring byte used
  const UploaderStats s = uploader->stats();
  EXPECT_EQ(s.direct_bytes, 2 * MiB + 1);
  EXPECT_EQ(s.ring.reservations, 0u);
  EXPECT_EQ(s.copies, 1u);
}

TEST_F(PathsTest, NoDirectPartOnABusyStream) {
  make(config(1));
  force(1 * MiB, 96 * KiB);
  const cudaStream_t s = device.create_stream();
  const int gate = device.close_gate(s);  // the stream has work queued
  const uint64_t size = 900 * KiB;        // fits the ring: upload() returns with copies queued
  const auto src = random_bytes(size, 40);
  std::byte* dst = device.device_alloc(size);
  auto p = uploader->upload(dst, src.data(), size, s);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(uploader->stats().direct_uploads, 0u);
  EXPECT_EQ(device.pageable_copies(), 0u);
  device.open_gate(gate);
  ASSERT_TRUE(uploader->wait(*p, 10s));
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, src.data(), size), "");
}

TEST_F(PathsTest, WaitAndDeferNeverTakeADirectPart) {
  make(config(1));
  force(256 * KiB, 96 * KiB);
  const uint64_t size = 700 * KiB;
  for (auto policy : {ExhaustionPolicy::Wait, ExhaustionPolicy::Defer}) {
    const auto src = random_bytes(size, 41);
    std::byte* dst = device.device_alloc(size);
    auto p = uploader->upload(dst, src.data(), size, nullptr, opts(policy));
    ASSERT_TRUE(p.has_value());
    ASSERT_TRUE(uploader->wait(*p, 10s));
    device.synchronize_all();
    EXPECT_EQ(first_difference(dst, src.data(), size), "");
  }
  EXPECT_EQ(uploader->stats().direct_uploads, 0u);
}

TEST_F(PathsTest, AFailedDirectCopyIsReportedAndTheRingStaysUsable) {
  make(config(1));
  force(1 * MiB, 96 * KiB);
  const uint64_t size = 3 * MiB;
  const auto src = random_bytes(size, 50);
  std::byte* dst = device.device_alloc(size);
  device.fail_copies(cudaErrorInvalidValue, 1);  // the first copy issued: the direct one
  auto p = uploader->upload(dst, src.data(), size, nullptr);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().kind, UploadError::Cuda);
  EXPECT_EQ(p.error().bytes_issued, 0u);
  EXPECT_FALSE(uploader->failed());
  // The pieces filled for the ring part were cancelled and their points released: all of the
  // ring is usable again.
  upload_and_check(size, 51);
  EXPECT_EQ(uploader->stats().errors, 1u);
}

// The calling thread copies slices of its pieces while the pool's thread copies others. Which
// thread claims a slice is the scheduler's call (on a loaded host the pool's thread may not run
// during a whole upload), so uploads go on until both have copied, each checked byte for byte.
// The pool's thread is woken for every upload: left to itself, the planner keeps a sleeping
// thread asleep where its measured wake-up costs more than the caller's fill.
TEST_F(PathsTest, TheCallerFillsAlongsideThePool) {
  make(config(1));
  force(0, 128 * KiB, std::nullopt, /*wake=*/true);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  uint64_t uploaded = 0;
  FillPoolStats pool;
  for (int i = 0; i < 8 || (std::chrono::steady_clock::now() < deadline &&
                            (pool.helped_bytes == 0 || pool.bytes == pool.helped_bytes));
       ++i) {
    upload_and_check(2 * MiB, 60 + i);
    uploaded += 2 * MiB;
    pool = uploader->stats().pool;
  }
  EXPECT_EQ(pool.bytes, uploaded);           // every byte filled once, by one thread or the other
  EXPECT_GT(pool.helped_bytes, 0u);          // the calling thread copied slices
  EXPECT_GT(pool.bytes, pool.helped_bytes);  // and so did the pool's thread
}

// Random sizes and forced paths from several threads on several streams, one Uploader.
TEST_F(PathsTest, MixedPathsFromSeveralThreads) {
  make(config(2));
  constexpr int kThreads = 4, kOps = 12;
  std::vector<cudaStream_t> streams;
  for (int i = 0; i < kThreads; ++i)
    streams.push_back(device.create_stream());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      for (int k = 0; k < kOps; ++k) {
        if (t == 0 && k % 4 == 0) {
          // The override is shared: one thread changes it now and then.
          force(rng() % 2 ? std::optional<uint64_t>(512 * KiB) : std::nullopt,
                32 * KiB * (1 + rng() % 6));
        }
        const uint64_t size = 1 + rng() % (3 * MiB);
        auto src = random_bytes(size, rng());
        const auto original = src;
        std::byte* dst = device.device_alloc(size);
        auto p = uploader->upload(dst, src.data(), size, streams[t]);
        if (!p) {
          ++failures;
          continue;
        }
        std::fill(src.begin(), src.end(), std::byte{0});
        if (!uploader->wait(*p, 10s)) ++failures;
        device.synchronize(streams[t]);
        if (!first_difference(dst, original.data(), size).empty()) ++failures;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(uploader->stats().pinned_peak, config().ring_bytes);
}

// Two Uploaders (two devices) share one pool: its threads fill both rings; every byte arrives.
TEST(SharedFillPool, TwoUploadersOnePool) {
  FakeDevice a{std::chrono::microseconds(200)}, b{std::chrono::microseconds(200)};
  FillPoolConfig pc;
  pc.threads = 2;
  pc.pinning = ThreadPinning::None;
  auto pool = FillPool::create(pc);
  ASSERT_TRUE(pool.has_value());
  UploaderConfig c = config();
  c.fill_pool = *pool;
  c.fill_threads = 0;  // ignored with a shared pool
  auto ua = detail::create_uploader(c, a);
  auto ub = detail::create_uploader(c, b);
  ASSERT_TRUE(ua.has_value());
  ASSERT_TRUE(ub.has_value());
  std::atomic<int> failures{0};
  const auto run = [&](Uploader& u, FakeDevice& d, uint64_t seed) {
    for (int i = 0; i < 10; ++i) {
      const uint64_t size = 1 * MiB + 3 * KiB * i + 1;
      const auto src = random_bytes(size, seed + i);
      std::byte* dst = d.device_alloc(size);
      auto p = u.upload(dst, src.data(), size, nullptr);
      if (!p || !u.wait(*p, 10s)) {
        ++failures;
        continue;
      }
      d.synchronize_all();
      if (!first_difference(dst, src.data(), size).empty()) ++failures;
    }
  };
  std::thread ta([&] { run(*ua, a, 100); });
  std::thread tb([&] { run(*ub, b, 200); });
  ta.join();
  tb.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ua->stats().pool.jobs, (*pool)->stats().jobs);  // one pool behind both
  EXPECT_EQ((*pool)->threads(), 2u);
  EXPECT_TRUE(a.violations().empty());
  EXPECT_TRUE(b.violations().empty());
}

// UploaderStats::pool_fills counts the pieces the pool (with the caller) really filled: not those
// an upload that failed cancelled. A pool of no threads: the caller fills the oldest piece first,
// its copy fails, and the pieces still unfilled behind it are cancelled.
TEST(SharedFillPool, CancelledPiecesAreNotCountedAsPoolFills) {
  FakeDevice device;
  FillPoolConfig pc;
  pc.threads = 0;
  pc.pinning = ThreadPinning::None;
  auto pool = FillPool::create(pc);
  ASSERT_TRUE(pool.has_value());
  UploaderConfig c = config();
  c.fill_pool = *pool;
  auto u = detail::create_uploader(c, device);
  ASSERT_TRUE(u.has_value());
  constexpr uint64_t kPiece = 32 * KiB;
  UploaderTestAccess::force(*u, 0, kPiece, FillMethod::Memcpy);
  const uint64_t size = c.ring_bytes;  // 32 pieces, all reserved before the first is filled
  const auto src = random_bytes(size, 70);
  std::byte* dst = device.device_alloc(size);
  device.fail_copies(cudaErrorInvalidValue, 1);
  auto failed = u->upload(dst, src.data(), size, nullptr);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().kind, UploadError::Cuda);
  UploaderStats s = u->stats();
  EXPECT_GT(s.pool.cancelled_slices, 0u);  // pieces were cancelled unfilled
  EXPECT_EQ(s.pool_fills * kPiece, s.pool.bytes);
  EXPECT_LT(s.pool_fills, size / kPiece);

  auto p = u->upload(dst, src.data(), size, nullptr);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(u->wait(*p, 10s));
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, src.data(), size), "");
  s = u->stats();
  EXPECT_EQ(s.pool_fills * kPiece, s.pool.bytes);  // the retry's 32 pieces on top
  EXPECT_TRUE(device.violations().empty());
}

// The most pool threads that copied limited slices of any lane at once.
unsigned limited_peak(FillPool& pool) {
  unsigned peak = 0;
  for (unsigned l = 0; l < staging::detail::FillEngine::kLanes; ++l)
    peak = std::max(peak, staging::detail::engine_of(pool).lane_peak(l));
  return peak;
}

// An upload of at least one chunk fills with no more pool threads than keep ahead of the link
// (here 1: a link of 10 MB/s), except its first piece, which every thread may fill since none of
// its copies runs yet. Pieces are whole chunks (256 KiB):
//
//   upload of 256 KiB:  [p0]               p0 unlimited: no slice ever counts against a limit
//   upload of 1 MiB:    [p0][p1][p2][p3]   p1..p3 limited: at most 1 pool thread at once
//
// (lane_peak counts only the slices of limited jobs that pool threads copied.)
TEST(SharedFillPool, TheFirstPieceTakesEveryThreadAndTheRestTheLimit) {
  FakeDevice device{std::chrono::microseconds(100)};
  FillPoolConfig pc;
  pc.threads = 3;
  pc.pinning = ThreadPinning::None;
  auto pool = FillPool::create(pc);
  ASSERT_TRUE(pool.has_value());
  UploaderConfig c = config();
  c.fill_pool = *pool;
  c.min_piece_bytes = c.chunk_bytes;
  c.fill_slice_bytes = 4 * KiB;
  c.fill = FillMethod::Memcpy;
  c.direct = false;
  c.link_gbps = 0.01;  // the least limit, 1 pool thread, at any measured speed
  auto u = detail::create_uploader(c, device);
  ASSERT_TRUE(u.has_value());
  UploaderTestAccess::force(*u, std::nullopt, std::nullopt, std::nullopt, /*wake=*/true);
  const auto upload = [&](uint64_t size, uint64_t seed) {
    const auto src = random_bytes(size, seed);
    std::byte* dst = device.device_alloc(size);
    auto p = u->upload(dst, src.data(), size, nullptr);
    ASSERT_TRUE(p.has_value()) << to_string(p.error().kind);
    ASSERT_TRUE(u->wait(*p, 10s));
    device.synchronize_all();
    EXPECT_EQ(first_difference(dst, src.data(), size), "") << size;
  };

  // One-piece uploads until the pool's threads have copied slices of them (they are woken for
  // each; the calling thread may finish a piece before they come).
  auto deadline = std::chrono::steady_clock::now() + 20s;
  for (int i = 0; i < 8 || (std::chrono::steady_clock::now() < deadline &&
                            u->stats().pool.bytes == u->stats().pool.helped_bytes);
       ++i) {
    ASSERT_NO_FATAL_FAILURE(upload(c.chunk_bytes, 80 + i));
  }
  ASSERT_GT(u->stats().pool.bytes, u->stats().pool.helped_bytes);
  EXPECT_EQ(limited_peak(**pool), 0u);

  // Four-piece uploads until a pool thread has copied a limited slice.
  deadline = std::chrono::steady_clock::now() + 20s;
  for (int i = 0;
       i < 8 || (std::chrono::steady_clock::now() < deadline && limited_peak(**pool) == 0); ++i) {
    ASSERT_NO_FATAL_FAILURE(upload(4 * c.chunk_bytes, 90 + i));
  }
  EXPECT_EQ(limited_peak(**pool), 1u);
  EXPECT_TRUE(device.violations().empty());
}

// Three devices under one cap: each ring is a third, the budget holds all three, uploads to all
// devices at once arrive exactly, and an Uploader that does not fit in the budget is refused.
TEST(MultiUploaderFake, ThreeDevicesOneCapOnePool) {
  FakeDevice d0{std::chrono::microseconds(200)}, d1{std::chrono::microseconds(200)},
      d2{std::chrono::microseconds(200)};
  std::vector<DeviceApi*> apis{&d0, &d1, &d2};
  std::vector<FakeDevice*> fakes{&d0, &d1, &d2};
  MultiUploaderConfig mc;
  mc.pinned_bytes = 3 * MiB;
  mc.fill_threads = 3;
  mc.pinning = ThreadPinning::None;
  mc.uploader = config();
  auto multi = detail::create_multi_uploader(mc, apis);
  ASSERT_TRUE(multi.has_value()) << to_string(multi.error());
  ASSERT_EQ(multi->size(), 3u);
  EXPECT_EQ(multi->pools().size(), 1u);
  EXPECT_EQ(multi->pools()[0]->threads(), 3u);
  EXPECT_EQ(multi->budget().held(), 3 * MiB);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(multi->uploader(i).config().ring_bytes, 1 * MiB);

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 6; ++k) {
        const uint64_t size = 2 * MiB + 1000 * k + i;
        const auto src = random_bytes(size, 10 * i + k);
        std::byte* dst = fakes[i]->device_alloc(size);
        auto p = multi->upload(i, dst, src.data(), size, nullptr);
        if (!p || !multi->uploader(i).wait(*p, 10s)) {
          ++failures;
          continue;
        }
        fakes[i]->synchronize_all();
        if (!first_difference(dst, src.data(), size).empty()) ++failures;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(multi->size(), 3u);
  EXPECT_EQ(multi->budget().cap(), 3 * MiB);
  EXPECT_LE(multi->budget().peak(), multi->budget().cap());
  uint64_t bytes_uploaded = 0;
  for (std::size_t i = 0; i < multi->size(); ++i) {
    const UploaderStats u = multi->uploader(i).stats();
    EXPECT_EQ(u.budget_cap, 3 * MiB);
    bytes_uploaded += u.bytes_uploaded;
  }
  EXPECT_GT(bytes_uploaded, 3 * 6 * 2 * MiB);

  // The budget is spent: one more ring under it is refused before anything is pinned.
  FakeDevice d3;
  UploaderConfig extra = config();
  extra.pinned_budget = std::make_shared<PinnedBudget>(1 * MiB);
  auto first = detail::create_uploader(extra, d3);
  ASSERT_TRUE(first.has_value());
  auto second = detail::create_uploader(extra, d3);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error(), CreateError::AllocationFailed);
  EXPECT_EQ(d3.host_allocs(), 1);
  for (FakeDevice* f : fakes)
    EXPECT_TRUE(f->violations().empty());
}

// Devices on two NUMA nodes of a two-node host: one pool per node, its threads on that node.
TEST(MultiUploaderFake, OnePoolPerNumaNode) {
  FakeDevice d0, d1, d2;
  d0.set_host_numa_node(0);
  d1.set_host_numa_node(1);
  d2.set_host_numa_node(0);
  std::vector<DeviceApi*> apis{&d0, &d1, &d2};
  HostTopology topo;
  topo.nodes.push_back(HostTopology::Node{0, {0}});
  topo.nodes.push_back(HostTopology::Node{1, {0}});  // CPU 0 twice: pinning works on any host
  MultiUploaderConfig mc;
  mc.fill_threads = 6;
  mc.uploader = config();
  auto multi = detail::create_multi_uploader(mc, apis, &topo);
  ASSERT_TRUE(multi.has_value());
  ASSERT_EQ(multi->pools().size(), 2u);
  EXPECT_EQ(multi->numa_node(0), 0);
  EXPECT_EQ(multi->numa_node(1), 1);
  // Threads in proportion to the devices: node 0 has two of three, node 1 one.
  EXPECT_EQ(multi->pools()[0]->threads() + multi->pools()[1]->threads(), 6u);
  EXPECT_EQ(multi->pools()[0]->threads(), 4u);
  const auto src = random_bytes(1 * MiB + 1, 7);
  std::byte* dst = d1.device_alloc(src.size());
  auto p = multi->upload(1, dst, src.data(), src.size(), nullptr);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(multi->uploader(1).wait(*p, 10s));
  d1.synchronize_all();
  EXPECT_EQ(first_difference(dst, src.data(), src.size()), "");
}

TEST(MultiUploaderFake, BadConfigsAreRefused) {
  FakeDevice d0;
  std::vector<DeviceApi*> apis{&d0};
  MultiUploaderConfig mc;
  mc.uploader = config();
  mc.pinned_bytes = 100;  // less than one alignment per device
  auto m = detail::create_multi_uploader(mc, apis);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error(), CreateError::InvalidConfig);
  std::vector<DeviceApi*> null_api{nullptr};
  mc.pinned_bytes = 0;
  EXPECT_EQ(detail::create_multi_uploader(mc, null_api).error(), CreateError::MissingDependency);
  EXPECT_EQ(detail::create_multi_uploader(mc, {}).error(), CreateError::MissingDependency);
}

}  // namespace
}  // namespace staging::cuda
