// Helpers of the tests that run on a real GPU: the skip when there is none, device memory and
// streams that clean up after themselves.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace staging::cuda::testing {

/// Why there is no usable device ("" when there is one).
inline std::string no_gpu_reason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      return std::string("no usable CUDA device: cudaGetDeviceCount returned ") +
             cudaGetErrorName(err);
    }
    if (count == 0) return std::string("no CUDA device");
    return std::string();
  }();
  return reason;
}

/// The number of CUDA devices (0 without a usable one).
inline int gpu_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

#define SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                     \
    if (const std::string why = ::staging::cuda::testing::no_gpu_reason(); !why.empty()) { \
      GTEST_SKIP() << why;                                                                 \
    }                                                                                      \
  } while (false)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

/// Device memory on the current device, zeroed, that frees itself.
struct DeviceBuffer {
  std::byte* ptr = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(std::size_t n) : bytes(n) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), n) != cudaSuccess) ptr = nullptr;
    // The legacy stream does not wait for the tests' non-blocking streams (which may be gated).
    if (ptr != nullptr) cudaMemset(ptr, 0, n);
    cudaStreamSynchronize(nullptr);
  }
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// Every byte, read back with cudaMemcpy.
  [[nodiscard]] std::vector<std::byte> read() const {
    std::vector<std::byte> out(bytes);
    cudaMemcpy(out.data(), ptr, bytes, cudaMemcpyDeviceToHost);
    return out;
  }
};

/// A non-blocking stream on the current device; synchronised and destroyed at the end.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }
  ~Stream() {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

}  // namespace staging::cuda::testing
