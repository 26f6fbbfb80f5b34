// StreamGate: a stalled CUDA stream for tests — work queued on the stream after the gate does not
// run until release(), and never waits forever: a watchdog opens the gate by itself (and says so).
//
//   HostFunction  a host function (cudaLaunchHostFunc) blocking on a condition variable.
//   Kernel        a one-thread kernel spinning on a host-mapped flag (stall_kernel.cu), bounded by
//                 the GPU's global timer. Only when the tests were built with nvcc.
//
// Under compute-sanitizer a kernel launch may block until the kernel ends: the Kernel gate then
// opens by its watchdog before the test can release it; holding() tells the test so that it can
// skip instead of failing.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <string>

namespace staging::cuda::testing {

class StreamGate {
 public:
  enum class Kind { HostFunction, Kernel };

  /// Closes a gate on `stream`. Null with `why` set when it cannot (a CUDA error, or Kernel in
  /// a build without nvcc).
  static std::unique_ptr<StreamGate> close(cudaStream_t stream, Kind kind,
                                           std::chrono::milliseconds watchdog, std::string* why);
  /// Releases the gate (if still closed) and waits until the stream has passed it.
  virtual ~StreamGate() = default;
  /// Opens the gate: the work behind it runs.
  virtual void release() = 0;
  /// True while the stream is held at the gate (not yet released nor opened by the watchdog).
  [[nodiscard]] virtual bool holding() = 0;
  /// True when the watchdog opened the gate (the test took too long, or the launch blocked).
  [[nodiscard]] virtual bool expired() = 0;
};

[[nodiscard]] const char* to_string(StreamGate::Kind kind);

#if defined(STAGING_TEST_STALL_KERNEL)
/// stall_kernel.cu: launches the spinning kernel on `stream`. `flag` and `status` are device
/// pointers to host-mapped ints; the kernel returns when *flag != 0 (status 1) or after
/// `watchdog_ns` (status 2).
cudaError_t launch_stall_kernel(cudaStream_t stream, const int* flag, int* status,
                                unsigned long long watchdog_ns);
#endif

}  // namespace staging::cuda::testing
