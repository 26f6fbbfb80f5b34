// FaultyDevice: counting, the fault, and the books of allocations and events.
#include "faulty_device.hpp"

namespace staging::cuda::testing {

std::string_view call_name(Call kind) noexcept {
  switch (kind) {
    case Call::HostAlloc:
      return "host_alloc";
    case Call::HostFree:
      return "host_free";
    case Call::EventCreate:
      return "event_create";
    case Call::EventDestroy:
      return "event_destroy";
    case Call::EventRecord:
      return "event_record";
    case Call::EventQuery:
      return "event_query";
    case Call::StreamWaitEvent:
      return "stream_wait_event";
    case Call::StreamIsCapturing:
      return "stream_is_capturing";
    case Call::Copy:
      return "copy_to_device_async";
    case Call::CopyPageable:
      return "copy_pageable_to_device_async";
    case Call::StreamQuery:
      return "stream_query";
    case Call::HostNumaNode:
      return "host_numa_node";
    case Call::AddressRange:
      return "address_range";
    case Call::Timing:
      return "timing";
    case Call::Any:
      break;
  }
  return "any call";
}

uint64_t FaultyDevice::calls(Call kind) const noexcept {
  if (kind == Call::Any) return all_calls_.load();
  return calls_[static_cast<std::size_t>(kind)].load();
}

cudaError_t FaultyDevice::enter(Call kind) noexcept {
  const uint64_t own = calls_[static_cast<std::size_t>(kind)].fetch_add(1) + 1;
  const uint64_t all = all_calls_.fetch_add(1) + 1;
  if (lost_.load()) return fault_.error;
  const uint64_t n = fault_.kind == Call::Any ? all : (fault_.kind == kind ? own : 0);
  if (fault_.nth == 0 || n != fault_.nth) return cudaSuccess;
  bool expected = false;
  if (!fired_.compare_exchange_strong(expected, true)) return cudaSuccess;
  if (fault_.lost) {
    lost_.store(true);
    if (on_lost_) on_lost_();
  }
  return fault_.error;
}

cudaError_t FaultyDevice::host_alloc(void** ptr, std::size_t bytes, unsigned flags) noexcept {
  if (const cudaError_t e = enter(Call::HostAlloc); e != cudaSuccess) return e;
  const cudaError_t e = device_.host_alloc(ptr, bytes, flags);
  if (e == cudaSuccess) ++live_allocations_;
  return e;
}

cudaError_t FaultyDevice::host_free(void* ptr) noexcept {
  --live_allocations_;
  if (const cudaError_t e = enter(Call::HostFree); e != cudaSuccess) {
    // The memory stays with the device behind (as a failing cudaFreeHost leaves it): give it back
    // there so that the test process does not leak it.
    device_.host_free(ptr);
    return e;
  }
  return device_.host_free(ptr);
}

cudaError_t FaultyDevice::event_create(cudaEvent_t* event) noexcept {
  if (const cudaError_t e = enter(Call::EventCreate); e != cudaSuccess) return e;
  const cudaError_t e = device_.event_create(event);
  if (e == cudaSuccess) ++live_events_;
  return e;
}

cudaError_t FaultyDevice::event_create_timed(cudaEvent_t* event) noexcept {
  if (const cudaError_t e = enter(Call::Timing); e != cudaSuccess) return e;
  const cudaError_t e = device_.event_create_timed(event);
  if (e == cudaSuccess) {
    ++live_events_;
    std::lock_guard lock(timed_mu_);
    timed_.insert(*event);
  }
  return e;
}

cudaError_t FaultyDevice::event_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) noexcept {
  if (const cudaError_t e = enter(Call::Timing); e != cudaSuccess) return e;
  return device_.event_elapsed(ms, start, end);
}

Call FaultyDevice::kind_of(cudaEvent_t event, Call kind) const noexcept {
  std::lock_guard lock(timed_mu_);
  return timed_.count(event) != 0 ? Call::Timing : kind;
}

cudaError_t FaultyDevice::event_destroy(cudaEvent_t event) noexcept {
  --live_events_;
  if (const cudaError_t e = enter(Call::EventDestroy); e != cudaSuccess) {
    device_.event_destroy(event);
    return e;
  }
  return device_.event_destroy(event);
}

cudaError_t FaultyDevice::event_record(cudaEvent_t event, cudaStream_t stream) noexcept {
  if (const cudaError_t e = enter(kind_of(event, Call::EventRecord)); e != cudaSuccess) return e;
  return device_.event_record(event, stream);
}

cudaError_t FaultyDevice::event_query(cudaEvent_t event) noexcept {
  if (const cudaError_t e = enter(kind_of(event, Call::EventQuery)); e != cudaSuccess) return e;
  return device_.event_query(event);
}

cudaError_t FaultyDevice::stream_wait_event(cudaStream_t stream, cudaEvent_t event) noexcept {
  if (const cudaError_t e = enter(Call::StreamWaitEvent); e != cudaSuccess) return e;
  return device_.stream_wait_event(stream, event);
}

cudaError_t FaultyDevice::stream_is_capturing(cudaStream_t stream, bool* capturing) noexcept {
  if (const cudaError_t e = enter(Call::StreamIsCapturing); e != cudaSuccess) return e;
  return device_.stream_is_capturing(stream, capturing);
}

cudaError_t FaultyDevice::copy_to_device_async(void* dst, const void* src, std::size_t bytes,
                                               cudaStream_t stream) noexcept {
  if (const cudaError_t e = enter(Call::Copy); e != cudaSuccess) return e;
  return device_.copy_to_device_async(dst, src, bytes, stream);
}

cudaError_t FaultyDevice::copy_pageable_to_device_async(void* dst, const void* src,
                                                        std::size_t bytes,
                                                        cudaStream_t stream) noexcept {
  if (const cudaError_t e = enter(Call::CopyPageable); e != cudaSuccess) return e;
  return device_.copy_pageable_to_device_async(dst, src, bytes, stream);
}

cudaError_t FaultyDevice::stream_query(cudaStream_t stream) noexcept {
  if (const cudaError_t e = enter(Call::StreamQuery); e != cudaSuccess) return e;
  return device_.stream_query(stream);
}

cudaError_t FaultyDevice::host_numa_node(int* node) noexcept {
  if (const cudaError_t e = enter(Call::HostNumaNode); e != cudaSuccess) return e;
  return device_.host_numa_node(node);
}

cudaError_t FaultyDevice::address_range(const void* ptr, void** base, std::size_t* size) noexcept {
  if (const cudaError_t e = enter(Call::AddressRange); e != cudaSuccess) return e;
  return device_.address_range(ptr, base, size);
}

}  // namespace staging::cuda::testing
