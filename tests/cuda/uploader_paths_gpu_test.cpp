// The upload pipeline's paths on a real GPU, every byte read back and compared: the default
// configuration at the sizes users move (the planner choosing pieces, method and direct part by
// itself), small pieces with either fill method, a direct part and an all-direct upload (the
// source scribbled over as soon as upload() returns), two Uploaders sharing one fill pool, and a
// MultiUploader over every device of the host uploading to all of them at once under one pinned
// cap. Skips itself without a usable CUDA device.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "gpu_helpers.hpp"
#include "staging/cuda/multi_uploader.hpp"
#include "staging/cuda/uploader.hpp"
#include "test_bytes.hpp"
#include "uploader_testing.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using detail::UploaderTestAccess;
using testing::DeviceBuffer;
using testing::first_difference;
using testing::random_bytes;
using testing::Stream;

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

UploaderConfig small_ring() {
  UploaderConfig c;
  c.ring_bytes = 8 * MiB;
  c.chunk_bytes = 2 * MiB;
  c.fill_threads = 3;
  c.wait_timeout = 10s;
  c.events = 256;
  c.check_invariants = true;
  return c;
}

// Uploads `size` random bytes on `stream`, scribbles over the source once upload() returns, and
// compares every byte read back.
void upload_and_check(Uploader& u, uint64_t size, uint64_t seed, cudaStream_t stream) {
  auto src = random_bytes(size, seed);
  const auto original = src;
  DeviceBuffer dst(size);
  ASSERT_NE(dst.ptr, nullptr);
  auto p = u.upload(dst.ptr, src.data(), size, stream);
  ASSERT_TRUE(p.has_value()) << to_string(p.error().kind) << " " << error_name(p.error().cuda);
  std::memset(src.data(), 0, size);
  ASSERT_TRUE(u.wait(*p, 10s));
  EXPECT_EQ(first_difference(dst.read().data(), original.data(), size), "") << size;
}

struct PathsGpuTest : ::testing::Test {
  std::optional<Uploader> uploader;
  void SetUp() override { SKIP_WITHOUT_GPU(); }
  void make(const UploaderConfig& c) {
    auto u = Uploader::create(c);
    ASSERT_TRUE(u.has_value()) << to_string(u.error());
    uploader.emplace(std::move(*u));
  }
  void force(std::optional<uint64_t> direct, std::optional<uint64_t> piece,
             std::optional<FillMethod> method = std::nullopt) {
    UploaderTestAccess::force(*uploader, direct, piece, method);
  }
  void TearDown() override {
    if (uploader) {
      EXPECT_FALSE(uploader->failed()) << error_name(uploader->error());
      const UploaderStats s = uploader->stats();
      EXPECT_LE(s.pinned_peak, s.pinned_cap);
    }
    uploader.reset();
    if (testing::no_gpu_reason().empty()) {
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
  }
};

TEST_F(PathsGpuTest, TheDefaultConfigurationAtTheSizesUsersMove) {
  make(UploaderConfig{});  // 64 MiB ring, automatic threads, pieces, method and direct part
  Stream s;
  uint64_t seed = 1;
  for (uint64_t size : {1 * MiB, 4 * MiB + 5, 16 * MiB, 64 * MiB, 100 * MiB + 3}) {
    for (int rep = 0; rep < 3; ++rep) {  // the planner measures and changes its mind meanwhile
      SCOPED_TRACE(::testing::Message() << "size " << size << " rep " << rep);
      upload_and_check(*uploader, size, ++seed, s.s);
    }
  }
  const UploaderStats st = uploader->stats();
  EXPECT_EQ(st.uploads, 15u);
  EXPECT_GT(st.pool.bytes, 0u);
}

TEST_F(PathsGpuTest, SmallPiecesWithEitherMethod) {
  make(small_ring());
  Stream s;
  uint64_t seed = 100;
  for (FillMethod m : {FillMethod::Memcpy, FillMethod::Streaming}) {
    for (uint64_t piece : {64 * KiB, 200 * KiB, 1 * MiB}) {
      force(std::nullopt, piece, m);
      for (uint64_t size : {uint64_t{1}, 300 * KiB + 7, 5 * MiB + 1, 20 * MiB + 3}) {
        SCOPED_TRACE(::testing::Message()
                     << to_string(m) << " piece " << piece << " size " << size);
        upload_and_check(*uploader, size, ++seed, s.s);
      }
    }
  }
}

// The direct part reads the pageable source through the driver: upload() must not return before
// that copy has completed (the source is scribbled over at once).
TEST_F(PathsGpuTest, ADirectPartThenTheRing) {
  UploaderConfig c = small_ring();
  c.fill_threads = 1;
  make(c);
  Stream s;
  force(3 * MiB, 512 * KiB);
  for (int i = 0; i < 4; ++i)
    upload_and_check(*uploader, i % 2 ? 20 * MiB + 1 : 5 * MiB + 3, 200 + i, s.s);
  force(64 * MiB, std::nullopt);  // the whole upload
  upload_and_check(*uploader, 12 * MiB + 1, 210, s.s);
  const UploaderStats st = uploader->stats();
  EXPECT_EQ(st.direct_uploads, 5u);
  EXPECT_EQ(st.direct_bytes, 4 * 3 * MiB + 12 * MiB + 1);
  EXPECT_GT(st.direct_gbps, 0);
}

TEST_F(PathsGpuTest, TwoUploadersShareOnePool) {
  FillPoolConfig pc;
  pc.threads = 4;
  auto pool = FillPool::create(pc);
  ASSERT_TRUE(pool.has_value());
  UploaderConfig c = small_ring();
  c.fill_pool = *pool;
  auto a = Uploader::create(c);
  auto b = Uploader::create(c);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  std::thread ta([&] {
    Stream s;
    for (int i = 0; i < 4; ++i)
      upload_and_check(*a, 9 * MiB + i, 300 + i, s.s);
  });
  std::thread tb([&] {
    Stream s;
    for (int i = 0; i < 4; ++i)
      upload_and_check(*b, 9 * MiB + i, 400 + i, s.s);
  });
  ta.join();
  tb.join();
  EXPECT_EQ((*pool)->threads(), 4u);
  EXPECT_GT((*pool)->stats().jobs, 8u);
}

// Every device of the host at once (one device works too), each uploading from its own thread.
TEST(MultiUploaderGpu, EveryDeviceAtOnceUnderOneCap) {
  SKIP_WITHOUT_GPU();
  const int devices = testing::gpu_count();
  MultiUploaderConfig mc;
  mc.pinned_bytes = static_cast<uint64_t>(devices) * 16 * MiB;
  mc.uploader = small_ring();
  mc.uploader.check_invariants = true;
  auto multi = MultiUploader::create(mc);
  ASSERT_TRUE(multi.has_value()) << to_string(multi.error());
  ASSERT_EQ(multi->size(), static_cast<std::size_t>(devices));
  EXPECT_EQ(multi->budget().held(), mc.pinned_bytes);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < devices; ++i) {
    threads.emplace_back([&, i] {
      if (cudaSetDevice(multi->device(i)) != cudaSuccess) {
        ++failures;
        return;
      }
      Stream s;
      for (int k = 0; k < 4; ++k) {
        const uint64_t size = 40 * MiB + 1000 * k + i;  // several times each ring
        auto src = random_bytes(size, 1000 * i + k);
        const auto original = src;
        DeviceBuffer dst(size);
        auto p = multi->upload(i, dst.ptr, src.data(), size, s.s);
        if (!p) {
          ++failures;
          continue;
        }
        std::memset(src.data(), 0, size);
        if (!multi->uploader(i).wait(*p, 10s)) ++failures;
        if (!first_difference(dst.read().data(), original.data(), size).empty()) ++failures;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(multi->budget().peak(), multi->budget().cap());
  ASSERT_EQ(multi->size(), static_cast<std::size_t>(devices));
  for (std::size_t i = 0; i < multi->size(); ++i)
    EXPECT_EQ(multi->uploader(i).stats().uploads, 4u);
}

}  // namespace
}  // namespace staging::cuda
