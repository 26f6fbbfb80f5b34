// The fault sweep (fault_sweep.hpp) on the fake device: every DeviceApi call of a scripted
// sequence failed in turn, for one Uploader and for one device of two. The count of fault points
// covered is printed ("fault sweep (...)") and recorded as a test property.
#include "fault_sweep.hpp"

#include <gtest/gtest.h>

#include "fake_device.hpp"

namespace staging::cuda {
namespace {

using testing::FakeDevice;
using testing::SweepDevice;

class FakeSweepDevice final : public SweepDevice {
 public:
  DeviceApi& api() override { return device_; }
  std::byte* alloc(std::size_t bytes) override { return device_.device_alloc(bytes); }
  cudaStream_t stream() override { return device_.create_stream(); }
  int close_gate(cudaStream_t stream) override { return device_.close_gate(stream); }
  void open_gate(int id) override { device_.open_gate(id); }
  void synchronize() override { device_.synchronize_all(); }
  std::vector<std::byte> read(const std::byte* p, std::size_t bytes) override {
    return {p, p + bytes};  // fake device memory is host memory
  }
  void lose() override { device_.halt(); }
  std::string violation() override {
    const auto v = device_.violations();
    return v.empty() ? std::string() : v.front();
  }

 private:
  FakeDevice device_;
};

std::unique_ptr<SweepDevice> make_fake() {
  return std::make_unique<FakeSweepDevice>();
}

TEST(FaultSweep, EveryCallOfOneUploaderFailedInTurn) {
  EXPECT_GT(testing::sweep_one_uploader(make_fake, "single_device").fired, 100);
}

// Two devices under one MultiUploader, the fault on the second: the first keeps uploading
// byte-exactly whatever happens to the second.
TEST(FaultSweep, EveryCallOfOneDeviceOfTwoFailedInTurn) {
  EXPECT_GT(testing::sweep_one_device_of_two(make_fake, "two_devices").fired, 100);
}

}  // namespace
}  // namespace staging::cuda
