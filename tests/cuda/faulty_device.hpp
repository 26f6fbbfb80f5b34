// FaultyDevice: a DeviceApi in front of another one that fails a chosen call, and counts.
//
// Every call is counted by kind. A Fault names a kind and an ordinal N: the N-th call of that
// kind (1-based) returns the fault's error instead of reaching the device behind. A transient
// fault fails that one call; a lost device (Fault::lost) fails that call and every later call of
// any kind — as a device that fell off the bus answers everything after.
//
// It also keeps the books a leak check needs: pinned allocations and events that succeeded,
// minus the host_free / event_destroy calls made for them (a destroy counts even when it is the
// call that fails: the library did its part).
//
//   calls:   host_alloc#1 event_create#1..#16 stream_is_capturing#1 address_range#1 copy#1 ...
//   Fault{Copy, 3}: the third copy returns the error; the others reach the device.
//
// Threading: safe from any thread (the counters are atomics, the fault fires once).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string_view>

#include "staging/detail/cuda/device_api.hpp"

namespace staging::cuda::testing {

/// The DeviceApi calls, one kind each.
enum class Call : uint8_t {
  HostAlloc,
  HostFree,
  EventCreate,
  EventDestroy,
  EventRecord,
  EventQuery,
  StreamWaitEvent,
  StreamIsCapturing,
  Copy,
  CopyPageable,
  StreamQuery,
  HostNumaNode,
  AddressRange,
  /// Every call on the timing events (event_create_timed, their records and queries,
  /// event_elapsed): the Uploader's measurements, whose failures it absorbs.
  Timing,
  Any,  // a Fault on every kind together (the N-th call of any kind)
};
inline constexpr std::size_t kCallKinds = static_cast<std::size_t>(Call::Any);

/// The name of a kind ("host_alloc", ...).
std::string_view call_name(Call kind) noexcept;

/// Which call fails, and how.
struct Fault {
  Call kind = Call::Any;
  uint64_t nth = 0;  ///< 1-based ordinal among the calls of `kind`; 0: no fault
  cudaError_t error = cudaErrorMemoryAllocation;
  bool lost = false;  ///< every call after it fails with `error` too
};

class FaultyDevice final : public DeviceApi {
 public:
  /// Forwards to `device` (which must outlive this) except where `fault` says.
  FaultyDevice(DeviceApi& device, Fault fault) : device_(device), fault_(fault) {}

  /// Called once, on the calling thread, when a lost fault fires (before that call returns):
  /// the device behind can stop running work, as a lost one does. Set before any call.
  void on_lost(std::function<void()> f) { on_lost_ = std::move(f); }
  /// Calls of `kind` made so far (Any: all of them).
  [[nodiscard]] uint64_t calls(Call kind) const noexcept;
  /// True once the fault has fired.
  [[nodiscard]] bool fired() const noexcept { return fired_.load(); }
  /// True while the device is lost (a lost fault fired).
  [[nodiscard]] bool lost() const noexcept { return lost_.load(); }
  /// Pinned allocations made minus those freed; events created minus destroyed.
  [[nodiscard]] int64_t live_allocations() const noexcept { return live_allocations_.load(); }
  [[nodiscard]] int64_t live_events() const noexcept { return live_events_.load(); }

  cudaError_t host_alloc(void** ptr, std::size_t bytes, unsigned flags) noexcept override;
  cudaError_t host_free(void* ptr) noexcept override;
  cudaError_t event_create(cudaEvent_t* event) noexcept override;
  cudaError_t event_create_timed(cudaEvent_t* event) noexcept override;
  cudaError_t event_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) noexcept override;
  cudaError_t event_destroy(cudaEvent_t event) noexcept override;
  cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) noexcept override;
  cudaError_t event_query(cudaEvent_t event) noexcept override;
  cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event) noexcept override;
  cudaError_t stream_is_capturing(cudaStream_t stream, bool* capturing) noexcept override;
  cudaError_t copy_to_device_async(void* dst, const void* src, std::size_t bytes,
                                   cudaStream_t stream) noexcept override;
  cudaError_t copy_pageable_to_device_async(void* dst, const void* src, std::size_t bytes,
                                            cudaStream_t stream) noexcept override;
  cudaError_t stream_query(cudaStream_t stream) noexcept override;
  cudaError_t host_numa_node(int* node) noexcept override;
  cudaError_t address_range(const void* ptr, void** base, std::size_t* size) noexcept override;

 private:
  // Counts a call of `kind`; the error it must return instead of reaching the device, or
  // cudaSuccess to go on.
  cudaError_t enter(Call kind) noexcept;
  // Timing for an event made by event_create_timed, else `kind`.
  Call kind_of(cudaEvent_t event, Call kind) const noexcept;

  DeviceApi& device_;
  const Fault fault_;
  std::array<std::atomic<uint64_t>, kCallKinds> calls_{};
  std::atomic<uint64_t> all_calls_{0};
  std::atomic<bool> fired_{false};
  std::atomic<bool> lost_{false};
  std::atomic<int64_t> live_allocations_{0};
  std::atomic<int64_t> live_events_{0};
  std::function<void()> on_lost_;
  mutable std::mutex timed_mu_;
  std::set<cudaEvent_t> timed_;  // made by event_create_timed
};

}  // namespace staging::cuda::testing
