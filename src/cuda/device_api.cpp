// The CUDA runtime behind DeviceApi, and the classification of CUDA errors.
#include "staging/detail/cuda/device_api.hpp"

#include <cuda.h>

#include <cctype>
#include <fstream>
#include <string>

namespace staging::cuda {
namespace {

// Makes `device` current for a scope and restores the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) {
      status_ = cudaSetDevice(device);
      switched_ = status_ == cudaSuccess && previous_ >= 0;
    }
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  [[nodiscard]] cudaError_t status() const noexcept { return status_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};

// cuMemGetAddressRange from the driver, found once through the runtime (the library links no
// driver library of its own); null when the driver has no such entry point.
using AddressRangeFn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
AddressRangeFn address_range_entry() noexcept {
  static const AddressRangeFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return AddressRangeFn{nullptr};
    }
    return reinterpret_cast<AddressRangeFn>(p);
  }();
  return fn;
}

class RuntimeApi final : public DeviceApi {
 public:
  explicit RuntimeApi(int device) noexcept : device_(device) {}

  cudaError_t host_alloc(void** ptr, std::size_t bytes, unsigned flags) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaHostAlloc(ptr, bytes, flags);
  }
  cudaError_t host_free(void* ptr) noexcept override { return cudaFreeHost(ptr); }
  cudaError_t event_create(cudaEvent_t* event) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaEventCreateWithFlags(event, cudaEventDisableTiming);
  }
  cudaError_t event_create_timed(cudaEvent_t* event) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaEventCreateWithFlags(event, cudaEventDefault);
  }
  cudaError_t event_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) noexcept override {
    return cudaEventElapsedTime(ms, start, end);
  }
  cudaError_t event_destroy(cudaEvent_t event) noexcept override { return cudaEventDestroy(event); }
  cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaEventRecord(event, stream);
  }
  cudaError_t event_query(cudaEvent_t event) noexcept override { return cudaEventQuery(event); }
  cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaStreamWaitEvent(stream, event, 0);
  }
  cudaError_t stream_is_capturing(cudaStream_t stream, bool* capturing) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t err = cudaStreamIsCapturing(stream, &status);
    *capturing = status != cudaStreamCaptureStatusNone;
    return err;
  }
  cudaError_t copy_to_device_async(void* dst, const void* src, std::size_t bytes,
                                   cudaStream_t stream) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
  }
  cudaError_t copy_pageable_to_device_async(void* dst, const void* src, std::size_t bytes,
                                            cudaStream_t stream) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
  }
  cudaError_t stream_query(cudaStream_t stream) noexcept override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) return scope.status();
    return cudaStreamQuery(stream);
  }
  cudaError_t host_numa_node(int* node) noexcept override {
    int value = -1;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrHostNumaId, device_) == cudaSuccess) {
      *node = value;
      return cudaSuccess;
    }
    cudaGetLastError();  // an older driver without the attribute: not an error of ours
    char bus[32] = {};
    const cudaError_t err = cudaDeviceGetPCIBusId(bus, sizeof bus, device_);
    if (err != cudaSuccess) return err;
    std::string id(bus);
    for (char& ch : id)
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::ifstream in("/sys/bus/pci/devices/" + id + "/numa_node");
    if (!(in >> value)) value = -1;
    *node = value;
    return cudaSuccess;
  }
  cudaError_t address_range(const void* ptr, void** base, std::size_t* size) noexcept override {
    const AddressRangeFn fn = address_range_entry();
    if (fn == nullptr) return cudaErrorNotSupported;
    DeviceScope scope(device_);  // the driver answers in the current context
    if (scope.status() != cudaSuccess) return scope.status();
    CUdeviceptr b = 0;
    std::size_t n = 0;
    switch (fn(&b, &n, reinterpret_cast<CUdeviceptr>(ptr))) {
      case CUDA_SUCCESS:
        *base = reinterpret_cast<void*>(b);
        *size = n;
        return cudaSuccess;
      case CUDA_ERROR_INVALID_VALUE:
      case CUDA_ERROR_NOT_FOUND:
        return cudaErrorInvalidValue;
      default:
        return cudaErrorNotSupported;  // no answer: nothing to check against
    }
  }

 private:
  int device_;
};

}  // namespace

std::unique_ptr<DeviceApi> make_runtime_api(int device) {
  return std::make_unique<RuntimeApi>(device);
}

bool is_sticky(cudaError_t error) noexcept {
  switch (error) {
    case cudaErrorInitializationError:
    case cudaErrorCudartUnloading:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoDevice:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorExternalDevice:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

std::string_view error_name(cudaError_t error) noexcept {
  const char* name = cudaGetErrorName(error);
  return name != nullptr && *name != '\0' ? std::string_view(name) : std::string_view("cudaError?");
}

}  // namespace staging::cuda
