// Checked destinations on the fake device: an upload or commit whose destination range leaves the
// device allocation holding its first byte (or starts in no allocation at all) is refused with
// OutOfBounds before anything is reserved or copied; the guard bytes around it stay
// zero and the Uploader goes on working. The fake answers address_range() from its device_alloc()
// blocks, as the driver's cuMemGetAddressRange does from its allocations.
//
//   allocation [0 ........................ 4096)   guard: the block after it is never written
//   upload at 4000, 96 bytes: fits (ends at 4096)   upload at 4000, 97 bytes: refused
#include <gtest/gtest.h>

#include <cstring>

#include "fake_device.hpp"
#include "faulty_device.hpp"
#include "staging/cuda/uploader.hpp"
#include "test_bytes.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using testing::FakeDevice;
using testing::first_difference;
using testing::random_bytes;

constexpr uint64_t KiB = 1024;

struct CheckedDestinationTest : ::testing::Test {
  FakeDevice device;
  std::optional<Uploader> uploader;
  std::byte* dst = nullptr;  // a 4 KiB allocation

  void SetUp() override {
    UploaderConfig c;
    c.ring_bytes = 256 * KiB;
    c.chunk_bytes = 64 * KiB;
    c.fill_threads = 2;
    c.events = 16;
    c.check_invariants = true;
    auto u = detail::create_uploader(c, device);
    ASSERT_TRUE(u.has_value());
    uploader.emplace(std::move(*u));
    dst = device.device_alloc(4 * KiB);
  }
  void TearDown() override {
    device.synchronize_all();
    EXPECT_TRUE(device.violations().empty()) << device.violations().front();
  }
  bool all_zero(const std::byte* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      if (p[i] != std::byte{0}) return false;
    return true;
  }
};

TEST_F(CheckedDestinationTest, AnUploadPastTheEndOfItsAllocationIsRefused) {
  const auto src = random_bytes(64 * KiB, 1);
  for (uint64_t bytes : {uint64_t{97}, uint64_t{4097}, 64 * KiB}) {
    auto p = uploader->upload(dst + 4000, src.data(), bytes, nullptr);
    ASSERT_FALSE(p.has_value()) << bytes;
    EXPECT_EQ(p.error().kind, UploadError::OutOfBounds) << bytes;
    EXPECT_EQ(p.error().bytes_issued, 0u);
  }
  device.synchronize_all();
  EXPECT_EQ(device.copies_run(), 0u);  // nothing copied, not even the part that would fit
  EXPECT_TRUE(all_zero(dst, 4 * KiB));
  EXPECT_EQ(uploader->stats().errors, 3u);
  EXPECT_EQ(uploader->stats().ring.reservations, 0u);  // nothing reserved either

  // Exactly to the last byte is fine, and the Uploader was never hurt.
  auto p = uploader->upload(dst + 4000, src.data(), 96, nullptr);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(uploader->wait(*p, 5s));
  device.synchronize_all();
  EXPECT_EQ(first_difference(dst + 4000, src.data(), 96), "");
  EXPECT_TRUE(all_zero(dst, 4000));
}

TEST_F(CheckedDestinationTest, AnAddressInNoAllocationIsRefused) {
  const auto src = random_bytes(100, 2);
  std::vector<std::byte> host(100);  // host memory, not a device allocation
  auto p = uploader->upload(host.data(), src.data(), 100, nullptr);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().kind, UploadError::OutOfBounds);
  EXPECT_EQ(to_string(p.error().kind), "OutOfBounds");
}

TEST_F(CheckedDestinationTest, ACommitPastTheEndIsRefusedAndItsSpanGivenBack) {
  auto span = uploader->reserve(8 * KiB);
  ASSERT_TRUE(span.has_value());
  const auto src = random_bytes(8 * KiB, 3);
  std::memcpy(span->data(), src.data(), src.size());
  auto p = uploader->commit(std::move(*span), dst + 1, nullptr, 4 * KiB);  // one byte over
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().kind, UploadError::OutOfBounds);
  EXPECT_EQ(uploader->stats().cancels, 1u);  // the span was closed, its bytes free again
  device.synchronize_all();
  EXPECT_EQ(device.copies_run(), 0u);
  EXPECT_TRUE(all_zero(dst, 4 * KiB));

  // The whole ring is available again: a span of all of it fits at once.
  UploadOptions defer;
  defer.policy = ExhaustionPolicy::Defer;
  auto whole = uploader->reserve(256 * KiB, defer);
  ASSERT_TRUE(whole.has_value());
  uploader->cancel(std::move(*whole));
}

TEST_F(CheckedDestinationTest, OneRangeQueryPerUploadAndNoneWhenTurnedOff) {
  UploaderConfig c = uploader->config();
  uploader.reset();
  const auto src = random_bytes(4 * KiB, 4);
  for (bool check : {true, false}) {
    testing::FaultyDevice counting(device, testing::Fault{});
    c.check_destinations = check;
    auto u = detail::create_uploader(c, counting);
    ASSERT_TRUE(u.has_value());
    auto p = u->upload(dst, src.data(), 4 * KiB, nullptr);
    ASSERT_TRUE(p.has_value());
    ASSERT_TRUE(u->wait(*p, 5s));
    EXPECT_EQ(counting.calls(testing::Call::AddressRange), check ? 1u : 0u);
    device.synchronize_all();
    EXPECT_EQ(first_difference(dst, src.data(), 4 * KiB), "");
  }
}

}  // namespace
}  // namespace staging::cuda
