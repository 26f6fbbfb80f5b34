// DeviceApi: the handful of CUDA runtime calls the cuda layer makes, behind an interface.
//
// The library talks to the GPU only through this interface: the real implementation
// (make_runtime_api) forwards to the CUDA runtime; tests substitute a fake device whose streams run
// on CPU threads, so that the whole upload pipeline (ring, events, fill threads) is exercised and
// byte-checked on machines without a GPU. Applications use make_runtime_api() (Uploader::create
// does so when given no DeviceApi) and never need to implement it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string_view>

namespace staging::cuda {

/// The CUDA calls of the cuda layer. Every method mirrors the runtime function named in its
/// comment, returns its cudaError_t and never throws.
///
/// Threading: every method may be called from any thread, concurrently (as the CUDA runtime
/// allows). Ownership: handles created through an instance are destroyed through the same one.
class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  /// cudaHostAlloc(ptr, bytes, flags): page-locked host memory the GPU can copy from.
  virtual cudaError_t host_alloc(void** ptr, std::size_t bytes, unsigned flags) noexcept = 0;
  /// cudaFreeHost(ptr).
  virtual cudaError_t host_free(void* ptr) noexcept = 0;
  /// cudaEventCreateWithFlags(event, cudaEventDisableTiming).
  virtual cudaError_t event_create(cudaEvent_t* event) noexcept = 0;
  /// cudaEventCreateWithFlags(event, cudaEventDefault): an event that records when the stream
  /// reached it, for event_elapsed(). Destroyed with event_destroy(). cudaErrorNotSupported (the
  /// default): this device cannot time, and the caller does without.
  virtual cudaError_t event_create_timed(cudaEvent_t* event) noexcept {
    (void)event;
    return cudaErrorNotSupported;
  }
  /// cudaEventElapsedTime(ms, start, end) of two events made by event_create_timed(), both
  /// recorded and complete: milliseconds between them on the device. cudaErrorNotSupported (the
  /// default): this device cannot time.
  virtual cudaError_t event_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) noexcept {
    (void)ms;
    (void)start;
    (void)end;
    return cudaErrorNotSupported;
  }
  /// cudaEventDestroy(event).
  virtual cudaError_t event_destroy(cudaEvent_t event) noexcept = 0;
  /// cudaEventRecord(event, stream).
  virtual cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) noexcept = 0;
  /// cudaEventQuery(event): cudaSuccess once the recorded work is done, cudaErrorNotReady before.
  virtual cudaError_t event_query(cudaEvent_t event) noexcept = 0;
  /// cudaStreamWaitEvent(stream, event, 0).
  virtual cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event) noexcept = 0;
  /// cudaStreamIsCapturing(stream, ...): `capturing` is true while the stream records a graph.
  virtual cudaError_t stream_is_capturing(cudaStream_t stream, bool* capturing) noexcept = 0;
  /// cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), `src` in pinned memory.
  virtual cudaError_t copy_to_device_async(void* dst, const void* src, std::size_t bytes,
                                           cudaStream_t stream) noexcept = 0;
  /// cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream) with `src` in pageable
  /// memory. The driver may stage the bytes before it returns, or read `src` later: the caller
  /// keeps `src` unchanged until the copy has completed on the stream.
  virtual cudaError_t copy_pageable_to_device_async(void* dst, const void* src, std::size_t bytes,
                                                    cudaStream_t stream) noexcept = 0;
  /// cudaStreamQuery(stream): cudaSuccess when every operation queued on it has completed,
  /// cudaErrorNotReady while some has not.
  virtual cudaError_t stream_query(cudaStream_t stream) noexcept = 0;
  /// The host NUMA node closest to the device (cudaDeviceGetAttribute with
  /// cudaDevAttrHostNumaId, else the PCI device's numa_node in sysfs); -1 when the host has no
  /// NUMA layout or it is unknown. `node` is written on success.
  virtual cudaError_t host_numa_node(int* node) noexcept = 0;
  /// cuMemGetAddressRange(base, size, ptr) (the driver's, reached through the runtime's driver
  /// entry points): the device allocation that contains `ptr`, written to `base` and `size` on
  /// success. cudaErrorInvalidValue when `ptr` lies in no allocation the driver knows;
  /// cudaErrorNotSupported when the driver cannot answer (an old driver without the entry point):
  /// the caller then has no range to check against.
  virtual cudaError_t address_range(const void* ptr, void** base, std::size_t* size) noexcept = 0;
};

/// The CUDA runtime as a DeviceApi, bound to `device`: each call that needs a current device
/// makes `device` current for its duration and restores the caller's current device after.
/// Threading: the returned object is safe from any thread. Never fails to construct (errors show
/// up in the calls).
[[nodiscard]] std::unique_ptr<DeviceApi> make_runtime_api(int device);

/// True for the errors after which the CUDA context cannot be used any more ("sticky" errors:
/// illegal address, launch failure, ECC, a lost or missing device, driver shutdown, unknown). Such
/// an error puts an Uploader into its failed state. Errors caused by a call's arguments (invalid
/// value, invalid handle, ...) are not sticky.
[[nodiscard]] bool is_sticky(cudaError_t error) noexcept;

/// cudaGetErrorName(error) as a string_view, e.g. "cudaErrorIllegalAddress". Never empty.
[[nodiscard]] std::string_view error_name(cudaError_t error) noexcept;

}  // namespace staging::cuda
