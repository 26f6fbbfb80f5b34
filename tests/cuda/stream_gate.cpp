#include "stream_gate.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace staging::cuda::testing {
namespace {

using Clock = std::chrono::steady_clock;

// --- HostFunction ---------------------------------------------------------------------------

struct HostGateState {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  bool expired = false;
  bool passed = false;  // the host function has returned
  std::chrono::milliseconds watchdog{0};
};

void CUDART_CB host_gate(void* user) {
  // Owns one reference to the state for as long as it runs.
  std::unique_ptr<std::shared_ptr<HostGateState>> holder(
      static_cast<std::shared_ptr<HostGateState>*>(user));
  HostGateState& s = **holder;
  std::unique_lock lock(s.mu);
  if (!s.cv.wait_for(lock, s.watchdog, [&] { return s.released; })) s.expired = true;
  s.passed = true;
  s.cv.notify_all();
}

class HostFunctionGate final : public StreamGate {
 public:
  explicit HostFunctionGate(std::shared_ptr<HostGateState> s) : state_(std::move(s)) {}
  ~HostFunctionGate() override {
    release();
    std::unique_lock lock(state_->mu);
    state_->cv.wait_for(lock, state_->watchdog + std::chrono::seconds(5),
                        [&] { return state_->passed; });
  }
  void release() override {
    {
      std::lock_guard lock(state_->mu);
      state_->released = true;
    }
    state_->cv.notify_all();
  }
  bool holding() override {
    std::lock_guard lock(state_->mu);
    return !state_->released && !state_->passed;
  }
  bool expired() override {
    std::lock_guard lock(state_->mu);
    return state_->expired;
  }

 private:
  std::shared_ptr<HostGateState> state_;
};

// --- Kernel ---------------------------------------------------------------------------------

#if defined(STAGING_TEST_STALL_KERNEL)
class KernelGate final : public StreamGate {
 public:
  KernelGate(cudaStream_t stream, int* host) : stream_(stream), host_(host) {}
  ~KernelGate() override {
    release();
    cudaStreamSynchronize(stream_);  // bounded: the kernel's watchdog ends it
    cudaFreeHost(host_);
  }
  void release() override { __atomic_store_n(&host_[0], 1, __ATOMIC_SEQ_CST); }
  bool holding() override {
    return __atomic_load_n(&host_[0], __ATOMIC_SEQ_CST) == 0 &&
           __atomic_load_n(&host_[1], __ATOMIC_SEQ_CST) == 0 &&
           cudaStreamQuery(stream_) == cudaErrorNotReady;
  }
  bool expired() override { return __atomic_load_n(&host_[1], __ATOMIC_SEQ_CST) == 2; }

 private:
  cudaStream_t stream_;
  int* host_;  // [0] flag (host writes), [1] status (kernel writes)
};
#endif

}  // namespace

const char* to_string(StreamGate::Kind kind) {
  return kind == StreamGate::Kind::HostFunction ? "HostFunction" : "Kernel";
}

std::unique_ptr<StreamGate> StreamGate::close(cudaStream_t stream, Kind kind,
                                              std::chrono::milliseconds watchdog,
                                              std::string* why) {
  if (kind == Kind::HostFunction) {
    auto state = std::make_shared<HostGateState>();
    state->watchdog = watchdog;
    auto* holder = new std::shared_ptr<HostGateState>(state);
    const cudaError_t err = cudaLaunchHostFunc(stream, host_gate, holder);
    if (err != cudaSuccess) {
      delete holder;
      *why = std::string("cudaLaunchHostFunc: ") + cudaGetErrorName(err);
      return nullptr;
    }
    return std::make_unique<HostFunctionGate>(std::move(state));
  }
#if defined(STAGING_TEST_STALL_KERNEL)
  int* host = nullptr;
  cudaError_t err = cudaHostAlloc(reinterpret_cast<void**>(&host), 2 * sizeof(int),
                                  cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) {
    *why = std::string("cudaHostAlloc(mapped): ") + cudaGetErrorName(err);
    return nullptr;
  }
  host[0] = 0;
  host[1] = 0;
  int* dev = nullptr;
  err = cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0);
  if (err == cudaSuccess) {
    err = launch_stall_kernel(stream, dev, dev + 1,
                              static_cast<unsigned long long>(watchdog.count()) * 1000000ull);
  }
  if (err != cudaSuccess) {
    cudaFreeHost(host);
    *why = std::string("stall kernel: ") + cudaGetErrorName(err);
    return nullptr;
  }
  return std::make_unique<KernelGate>(stream, host);
#else
  (void)stream;
  (void)watchdog;
  *why = "built without nvcc: no stall kernel";
  return nullptr;
#endif
}

}  // namespace staging::cuda::testing
