// The Uploader on a real GPU: every byte read back from the device and compared, for sizes from 1
// byte to many times the ring, unaligned sources and destinations, several threads and streams at
// once, in-place spans, stream_wait across streams, and a stalled stream (StreamGate) hitting each
// policy's bound and recovering once released. Skips itself (with the reason) without a usable
// CUDA device. scripts/gpu-run runs it plain and under compute-sanitizer (memcheck, racecheck,
// synccheck).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "gpu_helpers.hpp"
#include "staging/cuda/uploader.hpp"
#include "stream_gate.hpp"
#include "test_bytes.hpp"
#include "test_options.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using testing::DeviceBuffer;
using testing::first_difference;
using testing::no_gpu_reason;
using testing::opts;
using testing::random_bytes;
using testing::Stream;
using testing::StreamGate;

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

UploaderConfig gpu_config() {
  UploaderConfig c;
  c.ring_bytes = 4 * MiB;
  c.chunk_bytes = 512 * KiB;
  c.fill_threads = 4;
  c.wait_timeout = 10s;
  c.events = 256;
  c.check_invariants = true;
  c.direct = false;  // every byte through the ring (the direct part has its own tests)
  return c;
}

struct UploaderGpuTest : ::testing::Test {
  std::optional<Uploader> uploader;

  void SetUp() override {
    SKIP_WITHOUT_GPU();
    auto u = Uploader::create(gpu_config());
    ASSERT_TRUE(u.has_value()) << to_string(u.error());
    uploader.emplace(std::move(*u));
  }
  void TearDown() override {
    if (uploader) {
      EXPECT_FALSE(uploader->failed()) << error_name(uploader->error());
      const UploaderStats s = uploader->stats();
      EXPECT_LE(s.pinned_peak, s.pinned_cap);
      EXPECT_EQ(s.pinned_cap, gpu_config().ring_bytes);
    }
    uploader.reset();
    if (no_gpu_reason().empty()) {
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
  }

  // Uploads `size` random bytes from src+src_off to a fresh device buffer at dst_off, reads the
  // whole buffer back and checks the payload and the zero guard bytes around it.
  void upload_and_check(uint64_t size, std::size_t src_off, std::size_t dst_off, uint64_t seed,
                        cudaStream_t stream = nullptr, const UploadOptions& options = {}) {
    const auto src = random_bytes(size + src_off, seed);
    DeviceBuffer dst(size + dst_off + 64);
    ASSERT_NE(dst.ptr, nullptr);
    auto point = uploader->upload(dst.ptr + dst_off, src.data() + src_off, size, stream, options);
    ASSERT_TRUE(point.has_value())
        << to_string(point.error().kind) << " " << error_name(point.error().cuda);
    ASSERT_TRUE(uploader->wait(*point, 10s));
    const auto back = dst.read();
    EXPECT_EQ(first_difference(back.data() + dst_off, src.data() + src_off, size), "") << size;
    for (std::size_t i = 0; i < dst_off; ++i)
      ASSERT_EQ(back[i], std::byte{0}) << i;
    for (std::size_t i = 0; i < 64; ++i)
      ASSERT_EQ(back[dst_off + size + i], std::byte{0}) << i;
  }
};

TEST_F(UploaderGpuTest, RandomSizesAndAlignmentsArriveExactly) {
  const uint64_t ring = gpu_config().ring_bytes, chunk = gpu_config().chunk_bytes;
  uint64_t seed = 100;
  for (uint64_t size : {uint64_t{1}, uint64_t{3}, uint64_t{255}, 4 * KiB + 1, chunk - 1, chunk + 1,
                        ring - 1, ring, ring + 1, 9 * ring + 123}) {
    for (std::size_t off : {0, 1, 7}) {
      SCOPED_TRACE(::testing::Message() << "size " << size << " offset " << off);
      upload_and_check(size, off, (off * 3) % 8, ++seed);
    }
  }
}

TEST_F(UploaderGpuTest, ExactlyTheRingSizeInOneReservation) {
  upload_and_check(gpu_config().ring_bytes, 0, 0, 5, nullptr, opts(ExhaustionPolicy::Wait));
  upload_and_check(gpu_config().ring_bytes, 3, 5, 6, nullptr, opts(ExhaustionPolicy::Defer));
}

TEST_F(UploaderGpuTest, ManyTimesTheRingBackToBackOnOneStream) {
  Stream stream;
  const uint64_t size = 16 * MiB + 13;
  std::vector<std::vector<std::byte>> srcs;
  std::vector<std::unique_ptr<DeviceBuffer>> dsts;
  TimelineValue last = 0;
  for (int i = 0; i < 4; ++i) {
    srcs.push_back(random_bytes(size, 1000 + i));
    dsts.push_back(std::make_unique<DeviceBuffer>(size));
    auto p = uploader->upload(dsts.back()->ptr, srcs.back().data(), size, stream.s);
    ASSERT_TRUE(p.has_value());
    EXPECT_GT(*p, last);
    last = *p;
  }
  ASSERT_TRUE(uploader->wait(last, 10s));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(first_difference(dsts[i]->read().data(), srcs[i].data(), size), "") << i;
  }
  EXPECT_GE(uploader->stats().ring.bytes_reserved, 4 * size);  // a 4 MiB ring carried 64 MiB
}

TEST_F(UploaderGpuTest, TheSourceMayBeReusedWhenUploadReturns) {
  const uint64_t size = 10 * MiB + 5;
  auto src = random_bytes(size, 77);
  const auto expected = src;
  DeviceBuffer dst(size);
  auto p = uploader->upload(dst.ptr, src.data(), size, nullptr);
  ASSERT_TRUE(p.has_value());
  std::memset(src.data(), 0, size);
  ASSERT_TRUE(uploader->wait(*p, 10s));
  EXPECT_EQ(first_difference(dst.read().data(), expected.data(), size), "");
}

TEST_F(UploaderGpuTest, SeveralThreadsAndStreamsAtOnce) {
  constexpr int kThreads = 4, kEach = 4;
  const uint64_t size = 3 * MiB + 9;
  Stream streams[3];
  std::vector<std::vector<std::byte>> srcs(kThreads * kEach);
  std::vector<std::unique_ptr<DeviceBuffer>> dsts(kThreads * kEach);
  for (int i = 0; i < kThreads * kEach; ++i) {
    srcs[i] = random_bytes(size + i, 500 + i);
    dsts[i] = std::make_unique<DeviceBuffer>(size + i);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kEach; ++k) {
        const int i = t * kEach + k;
        auto p = uploader->upload(dsts[i]->ptr, srcs[i].data(), size + i, streams[(t + k) % 3].s);
        if (!p || !uploader->wait(*p, 10s)) ++failures;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int i = 0; i < kThreads * kEach; ++i) {
    EXPECT_EQ(first_difference(dsts[i]->read().data(), srcs[i].data(), size + i), "") << i;
  }
}

TEST_F(UploaderGpuTest, InPlaceSpansFromSeveralThreads) {
  constexpr int kThreads = 4, kEach = 8;
  const uint64_t size = 700 * KiB + 3;
  const auto data = random_bytes(size * kThreads * kEach, 21);
  DeviceBuffer dst(data.size());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Stream stream;
      TimelineValue last = 0;
      for (int k = 0; k < kEach; ++k) {
        const uint64_t off = (static_cast<uint64_t>(t) * kEach + k) * size;
        auto span = uploader->reserve(size);  // the config's Split means Wait: all of it
        if (!span) {
          ++failures;
          continue;
        }
        std::memcpy(span->data(), data.data() + off, size);
        auto p = uploader->commit(std::move(*span), dst.ptr + off, stream.s);
        if (p) {
          last = *p;
        } else {
          ++failures;
        }
      }
      if (!uploader->wait(last, 10s)) ++failures;
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(first_difference(dst.read().data(), data.data(), data.size()), "");
  EXPECT_EQ(uploader->stats().commits, static_cast<uint64_t>(kThreads * kEach));
}

// Checked destinations on the driver's own answer (cuMemGetAddressRange): an upload that would
// run past the end of its cudaMalloc allocation is refused before a byte moves; one that ends on
// its last byte lands.
TEST_F(UploaderGpuTest, AnUploadPastTheEndOfItsAllocationIsRefused) {
  DeviceBuffer dst(1 * MiB);
  ASSERT_NE(dst.ptr, nullptr);
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  void* base = nullptr;
  std::size_t size = 0;
  const cudaError_t range = make_runtime_api(device)->address_range(dst.ptr + 10, &base, &size);
  if (range == cudaErrorNotSupported) GTEST_SKIP() << "the driver has no cuMemGetAddressRange";
  ASSERT_EQ(range, cudaSuccess) << error_name(range);
  EXPECT_EQ(base, static_cast<void*>(dst.ptr));
  ASSERT_GE(size, 1 * MiB);
  const auto src = random_bytes(size + 4096, 5);
  for (uint64_t past : {uint64_t{1}, uint64_t{4096}}) {
    auto p = uploader->upload(dst.ptr + 4096, src.data(), size - 4096 + past, nullptr);
    ASSERT_FALSE(p.has_value()) << past;
    EXPECT_EQ(p.error().kind, UploadError::OutOfBounds) << past;
  }
  std::vector<std::byte> host(1000);  // host memory is no device allocation
  auto h = uploader->upload(host.data(), src.data(), host.size(), nullptr);
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().kind, UploadError::OutOfBounds);
  const auto untouched = dst.read();
  for (std::byte b : untouched)
    ASSERT_EQ(b, std::byte{0});
  auto p = uploader->upload(dst.ptr + 4096, src.data(), 1 * MiB - 4096, nullptr);
  ASSERT_TRUE(p.has_value()) << to_string(p.error().kind);
  ASSERT_TRUE(uploader->wait(*p, 10s));
  const auto back = dst.read();
  EXPECT_EQ(first_difference(back.data() + 4096, src.data(), 1 * MiB - 4096), "");
}

TEST_F(UploaderGpuTest, StreamWaitOrdersAnotherStreamAfterTheUpload) {
  Stream a, b;
  const uint64_t size = 3 * MiB + 1;  // fits the ring: the upload must not wait for the gate
  const auto src = random_bytes(size, 31);
  DeviceBuffer dst(size);  // allocations before the gate: they may synchronise
  std::byte* back = nullptr;
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&back), size));
  std::string why;
  auto gate = StreamGate::close(a.s, StreamGate::Kind::HostFunction, 20s, &why);
  ASSERT_NE(gate, nullptr) << why;
  auto p = uploader->upload(dst.ptr, src.data(), size, a.s);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(uploader->stream_wait(b.s, *p).has_value());
  // A read-back queued on b after the wait must see the uploaded bytes, although a is still held.
  CUDA_OK(cudaMemcpyAsync(back, dst.ptr, size, cudaMemcpyDeviceToHost, b.s));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(cudaStreamQuery(b.s), cudaErrorNotReady);  // b waits for a's upload
  gate->release();
  CUDA_OK(cudaStreamSynchronize(b.s));
  EXPECT_EQ(first_difference(back, src.data(), size), "");
  cudaFreeHost(back);
}

// The stalled stream: the ring fills behind a gate, each policy answers within its bound, and once
// the gate is released everything recovers.
class StalledStreamTest : public UploaderGpuTest,
                          public ::testing::WithParamInterface<StreamGate::Kind> {};

TEST_P(StalledStreamTest, EachPolicyHitsItsBoundAndTheRingRecovers) {
  const uint64_t ring = gpu_config().ring_bytes;
  Stream s;
  const auto first = random_bytes(ring, 1);
  const auto second = random_bytes(3 * ring, 2);
  DeviceBuffer dst1(ring), dst2(3 * ring);  // allocations before the gate: they may synchronise
  std::string why;
  auto gate = StreamGate::close(s.s, GetParam(), 3s, &why);
  if (gate == nullptr && GetParam() == StreamGate::Kind::Kernel) GTEST_SKIP() << why;
  ASSERT_NE(gate, nullptr) << why;
  if (!gate->holding()) {
    GTEST_SKIP() << "the gate did not hold the stream (the launch blocked until the kernel's "
                    "watchdog ended it, as compute-sanitizer may do)";
  }
  auto p1 = uploader->upload(dst1.ptr, first.data(), ring, s.s);  // fills the whole ring
  ASSERT_TRUE(p1.has_value());

  auto d = uploader->upload(dst2.ptr, second.data(), 1000, s.s, opts(ExhaustionPolicy::Defer));
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().kind, UploadError::WouldBlock);

  auto t0 = std::chrono::steady_clock::now();
  auto w =
      uploader->upload(dst2.ptr, second.data(), 1000, s.s, opts(ExhaustionPolicy::Wait, 100ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().kind, UploadError::Timeout);
  ASSERT_TRUE(w.error().reserve.has_value());
  ASSERT_TRUE(w.error().reserve->oldest_pending.has_value());
  EXPECT_LE(*w.error().reserve->oldest_pending, *p1);

  auto sp = uploader->upload(dst2.ptr, second.data(), 3 * ring, s.s, opts(std::nullopt, 100ms));
  ASSERT_FALSE(sp.has_value());
  EXPECT_EQ(sp.error().kind, UploadError::Timeout);
  EXPECT_EQ(sp.error().bytes_issued, 0u);
  EXPECT_FALSE(uploader->wait(*p1, 10ms));
  ASSERT_TRUE(gate->holding()) << "the gate opened by itself before the test released it";

  gate->release();
  auto again = uploader->upload(dst2.ptr, second.data(), 3 * ring, s.s);
  ASSERT_TRUE(again.has_value());
  ASSERT_TRUE(uploader->wait(*again, 10s));
  EXPECT_FALSE(gate->expired());
  EXPECT_EQ(first_difference(dst1.read().data(), first.data(), ring), "");
  EXPECT_EQ(first_difference(dst2.read().data(), second.data(), 3 * ring), "");
}

TEST_P(StalledStreamTest, ASplitUploadStalledHalfwayReportsItsProgressAndResumes) {
  const uint64_t ring = gpu_config().ring_bytes;
  Stream s;
  const uint64_t size = 3 * ring + 999;
  const auto src = random_bytes(size, 3);
  DeviceBuffer dst(size);
  std::string why;
  auto gate = StreamGate::close(s.s, GetParam(), 3s, &why);
  if (gate == nullptr && GetParam() == StreamGate::Kind::Kernel) GTEST_SKIP() << why;
  ASSERT_NE(gate, nullptr) << why;
  if (!gate->holding()) GTEST_SKIP() << "the gate did not hold the stream (blocking launch)";
  auto r = uploader->upload(dst.ptr, src.data(), size, s.s, opts(std::nullopt, 100ms));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, UploadError::Timeout);
  const uint64_t done = r.error().bytes_issued;
  EXPECT_GT(done, 0u);
  EXPECT_LE(done, ring);
  gate->release();
  auto rest = uploader->upload(dst.ptr + done, src.data() + done, size - done, s.s);
  ASSERT_TRUE(rest.has_value());
  ASSERT_TRUE(uploader->wait(*rest, 10s));
  EXPECT_EQ(first_difference(dst.read().data(), src.data(), size), "");
}

INSTANTIATE_TEST_SUITE_P(Gates, StalledStreamTest,
                         ::testing::Values(StreamGate::Kind::HostFunction,
                                           StreamGate::Kind::Kernel),
                         [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

TEST(UploaderGpuCreate, PinsExactlyTheRingOnce) {
  SKIP_WITHOUT_GPU();
  UploaderConfig c = gpu_config();
  c.ring_bytes = 2 * MiB + 4096;  // not a multiple of the chunk
  auto u = Uploader::create(c);
  ASSERT_TRUE(u.has_value()) << to_string(u.error());
  const auto src = random_bytes(20 * MiB, 9);
  DeviceBuffer dst(20 * MiB);
  auto p = u->upload(dst.ptr, src.data(), src.size(), nullptr);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(u->wait(*p, 10s));
  EXPECT_EQ(first_difference(dst.read().data(), src.data(), src.size()), "");
  const UploaderStats s = u->stats();
  EXPECT_EQ(s.pinned_bytes, c.ring_bytes);
  EXPECT_EQ(s.pinned_peak, c.ring_bytes);
  EXPECT_EQ(s.events, c.events);
  EXPECT_GT(s.copies, 20u);
}

}  // namespace
}  // namespace staging::cuda
