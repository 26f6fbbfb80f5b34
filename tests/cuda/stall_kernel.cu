// The kernel behind StreamGate::Kind::Kernel: one thread spinning on a host-mapped flag, bounded
// by the GPU's global nanosecond timer so that it can never hold the GPU forever.
#include "stream_gate.hpp"

namespace staging::cuda::testing {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stall_kernel(const volatile int* flag, volatile int* status,
                             unsigned long long watchdog_ns) {
  const unsigned long long start = global_ns();
  while (*flag == 0) {
    if (global_ns() - start > watchdog_ns) {
      *status = 2;
      __threadfence_system();
      return;
    }
    __nanosleep(2000);
  }
  *status = 1;
  __threadfence_system();
}

}  // namespace

cudaError_t launch_stall_kernel(cudaStream_t stream, const int* flag, int* status,
                                unsigned long long watchdog_ns) {
  stall_kernel<<<1, 1, 0, stream>>>(flag, status, watchdog_ns);
  return cudaGetLastError();
}

}  // namespace staging::cuda::testing
