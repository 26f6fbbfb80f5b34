// The fault sweep (fault_sweep.hpp) on a real GPU: the same scripted uploads over the CUDA
// runtime, every DeviceApi call failed in turn in front of it (FaultyDevice), every byte that an
// upload reported as landed read back from the device, and the pinned allocations and events of
// the real driver counted back to zero after destruction. The GPU itself never fails here: what
// this shows is that the library's error paths leave real memory, events and in-flight copies in
// order. Two devices: one MultiUploader entry per GPU where the host has two, else two entries
// on the one GPU. Skips itself without a GPU; not run under compute-sanitizer (too slow there).
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "fault_sweep.hpp"
#include "gpu_helpers.hpp"
#include "stream_gate.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using testing::StreamGate;
using testing::SweepDevice;

class GpuSweepDevice final : public SweepDevice {
 public:
  explicit GpuSweepDevice(int device) : device_(device), api_(make_runtime_api(device)) {}
  ~GpuSweepDevice() override {
    gates_.clear();  // releases any gate still closed
    synchronize();
    for (cudaStream_t s : streams_)
      cudaStreamDestroy(s);
    for (void* p : memory_)
      cudaFree(p);
  }
  GpuSweepDevice(const GpuSweepDevice&) = delete;
  GpuSweepDevice& operator=(const GpuSweepDevice&) = delete;

  DeviceApi& api() override { return *api_; }
  std::byte* alloc(std::size_t bytes) override {
    cudaSetDevice(device_);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
    cudaMemset(p, 0, bytes);
    cudaDeviceSynchronize();
    memory_.push_back(p);
    return static_cast<std::byte*>(p);
  }
  cudaStream_t stream() override {
    cudaSetDevice(device_);
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    streams_.push_back(s);
    return s;
  }
  int close_gate(cudaStream_t stream) override {
    cudaSetDevice(device_);
    std::string why;
    auto gate = StreamGate::close(stream, StreamGate::Kind::HostFunction, 20000ms, &why);
    if (!gate) why_ = "no gate: " + why;
    gates_[next_gate_] = std::move(gate);
    return next_gate_++;
  }
  void open_gate(int id) override {
    auto it = gates_.find(id);
    if (it == gates_.end() || !it->second) return;
    if (it->second->expired()) why_ = "a gate was opened by its watchdog";
    it->second->release();
  }
  void synchronize() override {
    cudaSetDevice(device_);
    cudaDeviceSynchronize();
  }
  std::vector<std::byte> read(const std::byte* p, std::size_t bytes) override {
    cudaSetDevice(device_);
    std::vector<std::byte> out(bytes);
    cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost);
    return out;
  }
  std::string violation() override { return why_; }

 private:
  int device_;
  std::unique_ptr<DeviceApi> api_;
  std::vector<void*> memory_;
  std::vector<cudaStream_t> streams_;
  std::map<int, std::unique_ptr<StreamGate>> gates_;
  int next_gate_ = 1;
  std::string why_;
};

TEST(FaultSweepGpu, EveryCallOfOneUploaderFailedInTurn) {
  SKIP_WITHOUT_GPU();
  const auto make = [] { return std::make_unique<GpuSweepDevice>(0); };
  EXPECT_GT(testing::sweep_one_uploader(make, "gpu_single_device").fired, 100);
}

TEST(FaultSweepGpu, EveryCallOfOneDeviceOfTwoFailedInTurn) {
  SKIP_WITHOUT_GPU();
  // Devices 0 and 1 in turn where there are two (the factory is called for device 0, then 1).
  const int devices = testing::gpu_count();
  int next = 0;
  const auto make = [&]() -> std::unique_ptr<SweepDevice> {
    const int d = devices > 1 ? next++ % 2 : 0;
    return std::make_unique<GpuSweepDevice>(d);
  };
  EXPECT_GT(testing::sweep_one_device_of_two(make, "gpu_two_devices").fired, 100);
}

}  // namespace
}  // namespace staging::cuda
