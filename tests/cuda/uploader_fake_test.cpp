// The whole Uploader — pinned ring, events, fill threads, pipeline — on the fake device, whose
// streams run each copy after a random delay: every device byte is compared after each upload, so
// a ring that reused bytes before their copy ran (I1), a piece written past its reservation (I4)
// or a copy issued out of order would show up as wrong bytes. The same scenarios run on a real GPU
// in uploader_gpu_test.cpp.
//
//   ring (1 MiB here), chunk 128 KiB:  [c0 c1 c2 c3 c4 c5 c6 c7]
//   upload of 5 MiB + 123 bytes: 41 chunks through 8 slots, each reused only after its copy ran.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <tuple>

#include "fake_device.hpp"
#include "faulty_device.hpp"
#include "staging/cuda/uploader.hpp"
#include "test_bytes.hpp"
#include "test_options.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using testing::FakeDevice;
using testing::first_difference;
using testing::opts;
using testing::random_bytes;

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

UploaderConfig small_config() {
  UploaderConfig c;
  c.ring_bytes = 1 * MiB;
  c.chunk_bytes = 128 * KiB;
  c.fill_threads = 3;
  c.inline_fill_bytes = 4 * KiB;
  c.wait_timeout =
      30s;  // generous: CI hosts may be heavily loaded (the stalled tests pass their own)
  c.events = 64;
  c.check_invariants = true;
  c.direct = false;  // every byte through the ring (the direct part has its own tests)
  return c;
}

struct UploaderFakeTest : ::testing::Test {
  FakeDevice device{std::chrono::microseconds(200)};
  Uploader uploader = make(small_config());

  Uploader make(const UploaderConfig& c) {
    auto u = detail::create_uploader(c, device);
    EXPECT_TRUE(u.has_value()) << (u ? "" : to_string(u.error()));
    return std::move(*u);
  }

  // Uploads `size` random bytes from src+src_off to dst+dst_off and checks the device bytes and
  // the guard bytes around them.
  void upload_and_check(uint64_t size, std::size_t src_off, std::size_t dst_off, uint64_t seed,
                        const UploadOptions& options = {}) {
    const auto src = random_bytes(size + src_off, seed);
    std::byte* dst = device.device_alloc(size + dst_off + 64);
    auto point = uploader.upload(dst + dst_off, src.data() + src_off, size, nullptr, options);
    ASSERT_TRUE(point.has_value()) << to_string(point.error().kind);
    ASSERT_TRUE(uploader.wait(*point, 10s));
    device.synchronize_all();
    EXPECT_EQ(first_difference(dst + dst_off, src.data() + src_off, size), "") << size;
    for (std::size_t i = 0; i < dst_off; ++i)
      ASSERT_EQ(dst[i], std::byte{0});
    for (std::size_t i = 0; i < 64; ++i)
      ASSERT_EQ(dst[dst_off + size + i], std::byte{0});
  }

  void TearDown() override {
    device.synchronize_all();
    EXPECT_TRUE(device.violations().empty()) << device.violations().front();
  }
};

TEST_F(UploaderFakeTest, RandomSizesAndAlignmentsArriveExactly) {
  const uint64_t ring = small_config().ring_bytes;
  uint64_t seed = 100;
  for (uint64_t size : {uint64_t{1}, uint64_t{3}, uint64_t{255}, 4 * KiB, 4 * KiB + 1,
                        128 * KiB - 1, 128 * KiB + 1, ring - 1, ring, ring + 1, 5 * ring + 123}) {
    for (std::size_t off : {0, 1, 7}) {
      SCOPED_TRACE(::testing::Message() << "size " << size << " offset " << off);
      upload_and_check(size, off, (off * 3) % 8, ++seed);
    }
  }
  EXPECT_EQ(device.host_allocs(), 1);          // the ring, pinned once
  EXPECT_EQ(device.events_created(), 64 + 2);  // the pool and the landing timer, created once
}

TEST_F(UploaderFakeTest, ExactlyTheRingSizeInOneReservation) {
  upload_and_check(small_config().ring_bytes, 0, 0, 5, opts(ExhaustionPolicy::Wait));
  upload_and_check(small_config().ring_bytes, 3, 5, 6, opts(ExhaustionPolicy::Defer));
}

TEST_F(UploaderFakeTest, ManyTimesTheRingBackToBack) {
  // Uploads queued without waiting in between: the ring wraps many times under delayed copies.
  const uint64_t size = 3 * MiB + 17;
  std::vector<std::vector<std::byte>> srcs;
  std::vector<std::byte*> dsts;
  TimelineValue last = 0;
  for (int i = 0; i < 6; ++i) {
    srcs.push_back(random_bytes(size, 1000 + i));
    dsts.push_back(device.device_alloc(size));
    auto p = uploader.upload(dsts.back(), srcs.back().data(), size, nullptr);
    ASSERT_TRUE(p.has_value());
    EXPECT_GT(*p, last);
    last = *p;
  }
  ASSERT_TRUE(uploader.wait(last, 10s));
  device.synchronize_all();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(first_difference(dsts[i], srcs[i].data(), size), "") << i;
  const UploaderStats s = uploader.stats();
  EXPECT_EQ(s.uploads, 6u);
  EXPECT_EQ(s.bytes_uploaded, 6 * size);
  EXPECT_LE(s.pinned_peak, s.pinned_cap);
  EXPECT_EQ(s.pinned_cap, small_config().ring_bytes);
  EXPECT_GE(s.ring.bytes_reserved, 6 * size);  // the 1 MiB ring carried 18 MiB
  EXPECT_GT(s.ring.retired, 100u);
}

TEST_F(UploaderFakeTest, TheSourceMayBeReusedWhenUploadReturns) {
  // upload() has copied everything into the ring by the time it returns: scribbling over the
  // source afterwards must not change what arrives.
  const uint64_t size = 2 * MiB + 5;
  auto src = random_bytes(size, 77);
  const auto expected = src;
  std::byte* dst = device.device_alloc(size);
  auto p = uploader.upload(dst, src.data(), size, nullptr);
  ASSERT_TRUE(p.has_value());
  std::fill(src.begin(), src.end(), std::byte{0});
  ASSERT_TRUE(uploader.wait(*p, 10s));
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, expected.data(), size), "");
}

TEST_F(UploaderFakeTest, SeveralThreadsAndStreamsAtOnce) {
  constexpr int kThreads = 4;
  const uint64_t size = 700 * KiB + 9;
  std::vector<cudaStream_t> streams;
  for (int i = 0; i < 3; ++i)
    streams.push_back(device.create_stream());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::vector<std::vector<std::byte>> srcs(kThreads * 5);
  std::vector<std::byte*> dsts(kThreads * 5);
  for (int i = 0; i < kThreads * 5; ++i) {
    srcs[i] = random_bytes(size + i, 500 + i);
    dsts[i] = device.device_alloc(size + i);
  }
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 5; ++k) {
        const int i = t * 5 + k;
        auto p = uploader.upload(dsts[i], srcs[i].data(), size + i, streams[(t + k) % 3]);
        if (!p || !uploader.wait(*p, 10s)) ++failures;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  device.synchronize_all();
  for (int i = 0; i < kThreads * 5; ++i) {
    EXPECT_EQ(first_difference(dsts[i], srcs[i].data(), size + i), "") << i;
  }
}

TEST_F(UploaderFakeTest, ZeroBytesIsANoOpAtPointZero) {
  auto p = uploader.upload(nullptr, nullptr, 0, nullptr);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, 0u);
  EXPECT_TRUE(uploader.wait(0, 0s));
}

TEST_F(UploaderFakeTest, BadArgumentsAreRefused) {
  std::byte b{1};
  std::byte* dst = device.device_alloc(16);
  EXPECT_EQ(uploader.upload(nullptr, &b, 1, nullptr).error().kind, UploadError::InvalidArgument);
  EXPECT_EQ(uploader.upload(dst, nullptr, 1, nullptr).error().kind, UploadError::InvalidArgument);
  EXPECT_EQ(uploader.upload(dst, &b, UINT64_MAX, nullptr).error().kind,
            UploadError::InvalidArgument);
  // The core's policies an Uploader does not honour (they would pin memory in the upload path),
  // and a value from outside the enum.
  for (auto policy :
       {ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback, static_cast<ExhaustionPolicy>(7)}) {
    EXPECT_EQ(uploader.upload(dst, &b, 1, nullptr, opts(policy)).error().kind,
              UploadError::InvalidArgument);
  }
  const cudaStream_t capturing = device.create_stream();
  device.set_capturing(capturing, true);
  EXPECT_EQ(uploader.upload(dst, &b, 1, capturing).error().kind, UploadError::InvalidArgument);
  EXPECT_EQ(uploader.stats().errors, 7u);
}

TEST_F(UploaderFakeTest, TooLargeForOneReservation) {
  const uint64_t size = small_config().ring_bytes + 1;
  const auto src = random_bytes(size, 1);
  std::byte* dst = device.device_alloc(size);
  for (auto policy : {ExhaustionPolicy::Wait, ExhaustionPolicy::Defer}) {
    auto r = uploader.upload(dst, src.data(), size, nullptr, opts(policy));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().kind, UploadError::TooLarge);
    EXPECT_EQ(r.error().bytes_issued, 0u);
  }
}

// The stalled stream: a gate holds the stream, the ring fills up behind it, each policy answers
// within its bound, and once the gate opens everything recovers.
TEST_F(UploaderFakeTest, AStalledStreamHitsEachPolicysBoundAndRecovers) {
  const uint64_t ring = small_config().ring_bytes;
  const cudaStream_t s = device.create_stream();
  const int gate = device.close_gate(s);
  const auto first = random_bytes(ring, 1);
  std::byte* dst1 = device.device_alloc(ring);
  auto p1 = uploader.upload(dst1, first.data(), ring, s);  // fills the whole ring
  ASSERT_TRUE(p1.has_value());

  const auto second = random_bytes(3 * ring, 2);
  std::byte* dst2 = device.device_alloc(3 * ring);
  // Defer: at once.
  auto d = uploader.upload(dst2, second.data(), 1000, s, opts(ExhaustionPolicy::Defer));
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().kind, UploadError::WouldBlock);
  // Wait: after the timeout, naming the point it waited for.
  auto t0 = std::chrono::steady_clock::now();
  auto w = uploader.upload(dst2, second.data(), 1000, s, opts(ExhaustionPolicy::Wait, 50ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().kind, UploadError::Timeout);
  ASSERT_TRUE(w.error().reserve.has_value());
  EXPECT_TRUE(w.error().reserve->oldest_pending.has_value());
  EXPECT_LE(*w.error().reserve->oldest_pending, *p1);
  // Split: nothing issued either.
  auto sp = uploader.upload(dst2, second.data(), 3 * ring, s, opts(std::nullopt, 50ms));
  ASSERT_FALSE(sp.has_value());
  EXPECT_EQ(sp.error().kind, UploadError::Timeout);
  EXPECT_EQ(sp.error().bytes_issued, 0u);
  EXPECT_FALSE(uploader.wait(*p1, 10ms));
  EXPECT_EQ(uploader.reached(*p1), false);  // behind the gate
  EXPECT_EQ(uploader.reached(0), true);     // 0 has always completed

  device.open_gate(gate);
  auto again = uploader.upload(dst2, second.data(), 3 * ring, s);
  ASSERT_TRUE(again.has_value());
  ASSERT_TRUE(uploader.wait(*again, 10s));
  EXPECT_EQ(uploader.reached(*p1), true);
  EXPECT_EQ(uploader.reached(*again), true);
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst1, first.data(), ring), "");
  EXPECT_EQ(first_difference(dst2, second.data(), 3 * ring), "");
  EXPECT_GE(uploader.stats().ring.timeouts, 2u);
}

TEST_F(UploaderFakeTest, ASplitUploadStalledHalfwayReportsItsProgressAndResumes) {
  const uint64_t ring = small_config().ring_bytes;
  const cudaStream_t s = device.create_stream();
  const int gate = device.close_gate(s);
  const uint64_t size = 3 * ring + 999;
  const auto src = random_bytes(size, 3);
  std::byte* dst = device.device_alloc(size);
  auto r = uploader.upload(dst, src.data(), size, s, opts(std::nullopt, 50ms));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, UploadError::Timeout);
  const uint64_t done = r.error().bytes_issued;
  EXPECT_GT(done, 0u);
  EXPECT_LE(done, ring);
  EXPECT_GT(r.error().issued_point, 0u);
  device.open_gate(gate);
  auto rest = uploader.upload(dst + done, src.data() + done, size - done, s);
  ASSERT_TRUE(rest.has_value());
  ASSERT_TRUE(uploader.wait(*rest, 10s));
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, src.data(), size), "");
}

TEST_F(UploaderFakeTest, InPlaceSpansFillCommitAndCancel) {
  const auto data = random_bytes(300 * KiB, 8);
  std::byte* dst = device.device_alloc(300 * KiB);
  auto span = uploader.reserve(300 * KiB);
  ASSERT_TRUE(span.has_value());
  ASSERT_EQ(span->size(), 300 * KiB);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(span->data()) % 256, 0u);
  std::memcpy(span->data(), data.data(), data.size());
  auto p = uploader.commit(std::move(*span), dst, nullptr, 200 * KiB);  // only part of it
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(span->valid());
  ASSERT_TRUE(uploader.wait(*p, 10s));
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, data.data(), 200 * KiB), "");
  EXPECT_EQ(dst[200 * KiB], std::byte{0});

  {
    auto dropped = uploader.reserve(1000, opts(std::nullopt, std::nullopt, 4096));
    ASSERT_TRUE(dropped.has_value());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(dropped->data()) % 4096, 0u);
  }  // destroyed open: cancelled
  auto c = uploader.reserve(10);
  ASSERT_TRUE(c.has_value());
  uploader.cancel(std::move(*c));
  EXPECT_EQ(uploader.stats().cancels, 2u);
  // Cancelled points complete without GPU work.
  EXPECT_TRUE(uploader.wait(uploader.stats().last_point, 1s));
}

TEST_F(UploaderFakeTest, InPlaceSpansFromSeveralThreads) {
  // Producers each hold one span at a time on their own stream, more of them than the ring holds
  // at once: reservations wait (holding the ring lock) for other producers' commits to complete.
  constexpr int kThreads = 6, kEach = 10;
  const uint64_t size = 200 * KiB + 3;
  const auto data = random_bytes(size * kThreads * kEach, 21);
  std::byte* dst = device.device_alloc(data.size());
  std::vector<cudaStream_t> streams;
  for (int t = 0; t < kThreads; ++t)
    streams.push_back(device.create_stream());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TimelineValue last = 0;
      for (int k = 0; k < kEach; ++k) {
        const uint64_t off = (static_cast<uint64_t>(t) * kEach + k) * size;
        auto span = uploader.reserve(size);  // the config's Split means Wait: all of it
        if (!span || span->size() != size) {
          ++failures;
          continue;
        }
        std::memcpy(span->data(), data.data() + off, size);
        auto p = uploader.commit(std::move(*span), dst + off, streams[t]);
        if (p) {
          last = *p;
        } else {
          ++failures;
        }
      }
      if (!uploader.wait(last, 10s)) ++failures;
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, data.data(), data.size()), "");
  EXPECT_EQ(uploader.stats().commits, static_cast<uint64_t>(kThreads * kEach));
}

TEST_F(UploaderFakeTest, MixedTrafficFromSeveralThreadsStaysByteExact) {
  // Random uploads (every policy, 1 byte to 3 rings), in-place commits and cancels from several
  // threads and streams at once; every operation that succeeded must have delivered its bytes.
  constexpr int kThreads = 4, kOps = 25;
  const uint64_t ring = small_config().ring_bytes;
  struct Op {
    std::vector<std::byte> src;
    std::byte* dst = nullptr;
    bool done = false;
  };
  std::vector<std::vector<Op>> ops(kThreads);
  std::vector<cudaStream_t> streams;
  for (int i = 0; i < 3; ++i)
    streams.push_back(device.create_stream());
  std::mt19937_64 rng(42);
  for (auto& list : ops) {
    for (int k = 0; k < kOps; ++k) {
      const uint64_t size = 1 + rng() % (rng() % 4 == 0 ? 3 * ring : 64 * KiB);
      Op op;
      op.src = random_bytes(size, rng());
      op.dst = device.device_alloc(size);
      list.push_back(std::move(op));
    }
  }
  std::atomic<int> unexpected_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 r(t + 7);
      for (Op& op : ops[t]) {
        const cudaStream_t s = streams[r() % streams.size()];
        const uint64_t size = op.src.size();
        const int kind = static_cast<int>(r() % 4);
        if (kind == 3 && size <= ring) {  // in place, sometimes cancelled first
          if (r() % 5 == 0) {
            if (auto c = uploader.reserve(size)) uploader.cancel(std::move(*c));
          }
          auto span = uploader.reserve(size);
          if (!span) {
            ++unexpected_errors;
            continue;
          }
          std::memcpy(span->data(), op.src.data(), size);
          op.done = uploader.commit(std::move(*span), op.dst, s).has_value();
          if (!op.done) ++unexpected_errors;
          continue;
        }
        std::optional<ExhaustionPolicy> policy;
        if (kind == 1 && size <= ring) policy = ExhaustionPolicy::Wait;
        if (kind == 2 && size <= ring) policy = ExhaustionPolicy::Defer;
        auto p = uploader.upload(op.dst, op.src.data(), size, s, opts(policy));
        op.done = p.has_value();
        if (!p && p.error().kind != UploadError::WouldBlock) ++unexpected_errors;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(unexpected_errors.load(), 0);
  ASSERT_TRUE(uploader.wait(uploader.stats().last_point, 10s));
  device.synchronize_all();
  int checked = 0;
  for (auto& list : ops) {
    for (Op& op : list) {
      if (!op.done) continue;
      ++checked;
      EXPECT_EQ(first_difference(op.dst, op.src.data(), op.src.size()), "");
    }
  }
  EXPECT_GT(checked, kThreads * kOps / 2);
  EXPECT_LE(uploader.stats().pinned_peak, ring);
}

TEST_F(UploaderFakeTest, SplitReserveGivesWhatFitsAndTheRestLater) {
  const uint64_t ring = small_config().ring_bytes;
  auto a = uploader.reserve(ring - 300 * KiB);
  ASSERT_TRUE(a.has_value());
  auto b = uploader.reserve(ring, opts(ExhaustionPolicy::Split));
  ASSERT_TRUE(b.has_value());
  EXPECT_LT(b->size(), ring);
  EXPECT_GE(b->size(), 256 * KiB);
  auto d = uploader.reserve(ring, opts(ExhaustionPolicy::Defer));
  EXPECT_EQ(d.error().kind, UploadError::WouldBlock);  // the ring's size fits, just not now
  auto e = uploader.reserve(ring + 1, opts(ExhaustionPolicy::Defer));
  EXPECT_EQ(e.error().kind, UploadError::TooLarge);  // never fits
  uploader.cancel(std::move(*a));
  uploader.cancel(std::move(*b));
}

TEST_F(UploaderFakeTest, CommitEdges) {
  std::byte* dst = device.device_alloc(64);
  auto s = uploader.reserve(64);
  ASSERT_TRUE(s.has_value());
  auto too_many = uploader.commit(std::move(*s), dst, nullptr, 65);
  EXPECT_EQ(too_many.error().kind, UploadError::InvalidArgument);
  EXPECT_FALSE(s->valid());  // cancelled with the error
  StagingSpan empty;
  EXPECT_EQ(uploader.commit(std::move(empty), dst, nullptr).error().kind,
            UploadError::InvalidArgument);
  EXPECT_EQ(uploader.reserve(0).error().kind, UploadError::InvalidArgument);
}

TEST_F(UploaderFakeTest, StreamWaitMakesAnotherStreamWaitForAnUpload) {
  const cudaStream_t a = device.create_stream();
  const cudaStream_t b = device.create_stream();
  const int gate = device.close_gate(a);
  const auto src = random_bytes(5000, 4);
  std::byte* dst = device.device_alloc(5000);
  auto p = uploader.upload(dst, src.data(), 5000, a);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(uploader.stream_wait(b, *p).has_value());
  // A marker upload on b completes only after a's gate opens.
  std::byte* dst2 = device.device_alloc(10);
  auto marker = uploader.upload(dst2, src.data(), 10, b);
  ASSERT_TRUE(marker.has_value());
  EXPECT_FALSE(uploader.wait(*marker, 20ms));
  device.open_gate(gate);
  EXPECT_TRUE(uploader.wait(*marker, 10s));
  EXPECT_EQ(uploader.stream_wait(b, 12345).error().kind, UploadError::Cuda);
}

TEST_F(UploaderFakeTest, AFailedCopyIsReportedAndTheRingStaysUsable) {
  const uint64_t size = 600 * KiB;
  const auto src = random_bytes(size, 12);
  std::byte* dst = device.device_alloc(size);
  device.fail_copies(cudaErrorInvalidValue);
  auto r = uploader.upload(dst, src.data(), size, nullptr);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, UploadError::Cuda);
  EXPECT_EQ(r.error().cuda, cudaErrorInvalidValue);
  EXPECT_EQ(r.error().bytes_issued, 0u);
  EXPECT_FALSE(uploader.failed());
  // The reservations of the failed upload were released: the ring serves the retry.
  upload_and_check(size, 0, 0, 13);
  upload_and_check(3 * MiB, 0, 0, 14);
}

TEST_F(UploaderFakeTest, AStickyErrorFailsTheUploader) {
  const auto src = random_bytes(1000, 15);
  std::byte* dst = device.device_alloc(1000);
  device.fail_copies(cudaErrorIllegalAddress);
  auto r = uploader.upload(dst, src.data(), 1000, nullptr);
  EXPECT_EQ(r.error().kind, UploadError::Cuda);
  EXPECT_TRUE(uploader.failed());
  EXPECT_EQ(uploader.error(), cudaErrorIllegalAddress);
  auto again = uploader.upload(dst, src.data(), 1000, nullptr);
  EXPECT_EQ(again.error().kind, UploadError::Failed);
  EXPECT_EQ(uploader.reserve(10).error().kind, UploadError::Failed);
  EXPECT_EQ(uploader.wait(1, 0s).error(), WaitError::Failed);
  EXPECT_EQ(uploader.reached(0).error(), WaitError::Failed);
}

TEST_F(UploaderFakeTest, ALostDeviceDuringAnUploadFailsItInsteadOfHanging) {
  const cudaStream_t s = device.create_stream();
  const int gate = device.close_gate(s);
  const uint64_t size = 4 * MiB;
  const auto src = random_bytes(size, 16);
  std::byte* dst = device.device_alloc(size);
  std::thread lose([&] {
    std::this_thread::sleep_for(30ms);
    device.fail_queries(cudaErrorDevicesUnavailable);
  });
  const auto t0 = std::chrono::steady_clock::now();
  // The ring fills behind the gate, then the wait for room sees the device go: it ends as soon
  // as it does (long before its timeout) and reports the failure, not a timeout.
  auto r = uploader.upload(dst, src.data(), size, s, opts(std::nullopt, 20s));
  lose.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, UploadError::Failed);
  EXPECT_TRUE(uploader.failed());
  device.open_gate(gate);
}

// A Defer caller never waits behind another caller's bounded wait, the wait for a free event
// included: with every pooled event pending behind a gate, a Wait upload holds the ring lock while
// it waits (up to 5 s) for an event; a Defer reservation meanwhile answers WouldBlock at once.
TEST_F(UploaderFakeTest, ADeferCallerIsNotHeldBehindAWaitForAFreeEvent) {
  UploaderConfig c = small_config();
  c.events = 2;
  uploader = make(c);
  const cudaStream_t s = device.create_stream();
  const int gate = device.close_gate(s);
  const auto src = random_bytes(3000, 17);
  std::byte* dst = device.device_alloc(3000);
  for (int i = 0; i < 2; ++i) {  // both events pending behind the gate
    ASSERT_TRUE(
        uploader
            .upload(dst + 1000 * i, src.data() + 1000 * i, 1000, s, opts(ExhaustionPolicy::Wait))
            .has_value());
  }
  std::optional<Expected<TimelineValue, UploadFailure>> waiting;
  std::thread waiter([&] {
    waiting =
        uploader.upload(dst + 2000, src.data() + 2000, 1000, s, opts(ExhaustionPolicy::Wait, 5s));
  });
  std::this_thread::sleep_for(300ms);  // the waiter holds the ring lock, waiting for an event
  const auto t0 = std::chrono::steady_clock::now();
  auto d = uploader.reserve(64, opts(ExhaustionPolicy::Defer));
  const auto took = std::chrono::steady_clock::now() - t0;
  device.open_gate(gate);
  waiter.join();
  EXPECT_LT(took, 2s);  // long before the waiter's 5 s
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().kind, UploadError::WouldBlock);
  ASSERT_TRUE(waiting.has_value() && waiting->has_value());
  ASSERT_TRUE(uploader.wait(**waiting, 10s));
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, src.data(), 3000), "");
}

// UploadOptions::timeout bounds a reservation's whole wait: the wait for a free event and the
// wait for ring room that follows share it. Every event is pending; one frees (with 64 KiB of
// ring) after 1.5 s of a 2 s timeout; the 512 KiB asked for never fits: Timeout after ~2 s, not
// after 1.5 s + another 2 s.
TEST_F(UploaderFakeTest, TheWaitForAnEventAndTheWaitForRoomShareOneTimeout) {
  UploaderConfig c = small_config();
  c.events = 2;
  uploader = make(c);
  const uint64_t ring = c.ring_bytes, small = 64 * KiB;
  const cudaStream_t s1 = device.create_stream(), s2 = device.create_stream();
  const int g1 = device.close_gate(s1), g2 = device.close_gate(s2);
  const auto src = random_bytes(ring, 18);
  std::byte* dst = device.device_alloc(ring);
  for (const auto& [offset, bytes, stream] :
       {std::tuple{uint64_t{0}, small, s2}, std::tuple{small, ring - small, s1}}) {
    auto span = uploader.reserve(bytes, opts(ExhaustionPolicy::Defer));
    ASSERT_TRUE(span.has_value());
    std::memcpy(span->data(), src.data() + offset, bytes);
    ASSERT_TRUE(uploader.commit(std::move(*span), dst + offset, stream).has_value());
  }
  std::thread opener([&] {
    std::this_thread::sleep_for(1500ms);
    device.open_gate(g2);  // the first point completes: an event and 64 KiB free
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = uploader.reserve(512 * KiB, opts(ExhaustionPolicy::Wait, 2s));
  const auto took = std::chrono::steady_clock::now() - t0;
  opener.join();
  device.open_gate(g1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, UploadError::Timeout);
  EXPECT_GE(took, 2s);
  EXPECT_LT(took, 3s);  // 2 s and some slack; waiting twice would take 3.5 s
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst, src.data(), ring), "");
}

// FillMethod::Auto measures both methods on a size class's first uploads, each sample timed from
// the call until its last copy completed on the stream (a pair of timing events), and keeps timing
// some uploads after. A device whose timing events cannot be made still measures both, by the
// calls' own durations.
TEST(UploaderFakeCreate, AutoFillIsTimedUntilTheUploadsLand) {
  if (resolve_fill_method(FillMethod::Streaming) != FillMethod::Streaming) {
    GTEST_SKIP() << "no streaming stores on this CPU: Auto is plain memcpy";
  }
  for (const bool can_time : {true, false}) {
    SCOPED_TRACE(can_time ? "timing events" : "no timing events");
    FakeDevice fake(std::chrono::microseconds(50));
    testing::FaultyDevice device(
        fake, can_time ? testing::Fault{} : testing::Fault{testing::Call::Timing, 1});
    auto u = detail::create_uploader(small_config(), device);
    ASSERT_TRUE(u.has_value());
    const uint64_t size = 256 * KiB;
    std::byte* dst = fake.device_alloc(size);
    for (int i = 0; i < 24; ++i) {
      const auto src = random_bytes(size, 300 + i);
      auto point = u->upload(dst, src.data(), size, nullptr);
      ASSERT_TRUE(point.has_value());
      ASSERT_TRUE(u->wait(*point, 10s));
      fake.synchronize_all();
      ASSERT_EQ(first_difference(dst, src.data(), size), "") << i;
    }
    const UploaderStats s = u->stats();
    EXPECT_GE(s.memcpy_uploads, 3u);
    EXPECT_GE(s.streaming_uploads, 3u);
    if (can_time) {
      EXPECT_GE(s.timed_uploads, 6u);  // the six exploring uploads at least
      EXPECT_LT(s.timed_uploads, 24u);
    } else {
      EXPECT_EQ(s.timed_uploads, 0u);
    }
    fake.synchronize_all();
    EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
  }
}

// A link so slow (link_gbps 0.5) that one thread outruns it: uploads of a chunk or more are
// filled by one pool thread at a time, and still arrive exactly. The second copy fails, inside a
// timed upload (the first ones explore, all timed): the failed upload gives the timer back, and
// later uploads are timed again.
TEST(UploaderFakeCreate, ALimitedFillAndAFailedTimedUploadStayExact) {
  FakeDevice fake(std::chrono::microseconds(50));
  testing::FaultyDevice device(fake, testing::Fault{testing::Call::Copy, 2});
  UploaderConfig c = small_config();
  c.link_gbps = 0.5;
  auto u = detail::create_uploader(c, device);
  ASSERT_TRUE(u.has_value());
  const uint64_t size = 1 * MiB;  // 8 chunks
  std::byte* dst = fake.device_alloc(size);
  int failed = 0;
  for (int i = 0; i < 24; ++i) {
    const auto src = random_bytes(size, 500 + i);
    auto point = u->upload(dst, src.data(), size, nullptr);
    if (!point) {
      EXPECT_EQ(point.error().kind, UploadError::Cuda);
      ++failed;
      ASSERT_TRUE(u->wait(point.error().issued_point, 10s));
      continue;
    }
    ASSERT_TRUE(u->wait(*point, 10s));
    fake.synchronize_all();
    ASSERT_EQ(first_difference(dst, src.data(), size), "") << i;
  }
  EXPECT_EQ(failed, 1);
  const UploaderStats s = u->stats();
  EXPECT_EQ(s.uploads, 23u);
  if (resolve_fill_method(FillMethod::Streaming) == FillMethod::Streaming) {
    EXPECT_GE(s.timed_uploads, 6u);  // the timer was given back after the failure
  }
  fake.synchronize_all();
  EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
}

TEST(UploaderFakeCreate, InvalidConfigsAreRefused) {
  FakeDevice device;
  auto refused = [&](auto change, CreateError why) {
    UploaderConfig c = small_config();
    change(c);
    auto u = detail::create_uploader(c, device);
    return !u.has_value() && u.error() == why;
  };
  auto bad = [&](auto change) { return refused(change, CreateError::InvalidConfig); };
  auto policy = [&](auto change) { return refused(change, CreateError::UnsupportedPolicy); };
  EXPECT_TRUE(bad([](UploaderConfig& c) { c.ring_bytes = 0; }));
  EXPECT_TRUE(bad([](UploaderConfig& c) { c.events = 0; }));
  EXPECT_TRUE(bad([](UploaderConfig& c) { c.alignment = 0; }));
  EXPECT_TRUE(policy([](UploaderConfig& c) { c.policy = ExhaustionPolicy::Grow; }));
  EXPECT_TRUE(policy([](UploaderConfig& c) { c.policy = ExhaustionPolicy::Fallback; }));
  EXPECT_TRUE(policy([](UploaderConfig& c) { c.policy = static_cast<ExhaustionPolicy>(9); }));
  EXPECT_TRUE(bad([](UploaderConfig& c) { c.link_gbps = 0; }));
  EXPECT_TRUE(bad([](UploaderConfig& c) { c.copy_overhead = -Duration(1); }));
  EXPECT_EQ(device.host_allocs(), 0);
}

TEST(UploaderFakeCreate, ZeroFillThreadsMeansOnePerCpuLessTwo) {
  FakeDevice device;
  UploaderConfig c = small_config();
  c.fill_threads = 0;
  auto u = detail::create_uploader(c, device);
  ASSERT_TRUE(u.has_value());
  EXPECT_GE(u->config().fill_threads, 1u);
  EXPECT_LE(u->config().fill_threads, 12u);
  EXPECT_EQ(u->stats().pool.threads, u->config().fill_threads);
}

TEST(UploaderFakeCreate, ChunkIsClampedAndThePinnedMemoryIsFreedAtTheEnd) {
  FakeDevice device;
  {
    UploaderConfig c = small_config();
    c.chunk_bytes = 100 * MiB;
    auto u = detail::create_uploader(c, device);
    ASSERT_TRUE(u.has_value());
    EXPECT_EQ(u->config().chunk_bytes, c.ring_bytes);
    EXPECT_EQ(device.host_bytes_held(), c.ring_bytes);
    EXPECT_EQ(u->stats().pinned_bytes, c.ring_bytes);
  }
  EXPECT_EQ(device.host_bytes_held(), 0u);
  EXPECT_EQ(device.events_live(), 0);
}

TEST(UploaderFakeCreate, AnUndrainedRingIsLeakedNotFreedUnderACopy) {
  FakeDevice device;
  const cudaStream_t s = device.create_stream();
  const int gate = device.close_gate(s);
  {
    UploaderConfig c = small_config();
    c.drain_timeout = 20ms;
    auto u = detail::create_uploader(c, device);
    const auto src = random_bytes(1000, 1);
    std::byte* dst = device.device_alloc(1000);
    ASSERT_TRUE(u->upload(dst, src.data(), 1000, s).has_value());
  }  // the copy is still queued behind the gate: the ring must stay pinned
  EXPECT_EQ(device.host_bytes_held(), small_config().ring_bytes);
  device.open_gate(gate);
  device.synchronize_all();
}

}  // namespace
}  // namespace staging::cuda
