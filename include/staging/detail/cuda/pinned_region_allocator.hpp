// PinnedRegionAllocator: the byte ring's RegionAllocator over page-locked host memory
// (cudaHostAlloc), with a hard cap on the bytes held.
//
// Pinning is expensive (milliseconds per call, under a driver-wide lock), so the cuda layer creates
// its regions once, when the ring is made, and never in an upload path. The cap is checked here as
// well as in the ring (invariant I5): a request that would take the held bytes above it is refused
// with OutOfMemory before anything is pinned. Several allocators (one ring per GPU) can also share
// one PinnedBudget: a total cap over all of them, charged before pinning and credited after
// unpinning. The engine under cuda::Uploader, not part of the API.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "staging/core/byte_ring.hpp"
#include "staging/cuda/uploader.hpp"
#include "staging/detail/cuda/device_api.hpp"
#include "staging/detail/cuda/pinned_region.hpp"

namespace staging::cuda {

/// See the file comment.
///
/// Ownership: owns the pinned memory of its live regions (released by destroy_region or the
/// destructor); references the DeviceApi, which must outlive it, and shares the PinnedBudget.
/// Threading: create_region/destroy_region from one thread at a time (the ring's); base(), held(),
/// peak() and cap() from any thread.
class PinnedRegionAllocator final : public RegionAllocator {
 public:
  /// `cap`: most bytes held at once (> 0). `host_alloc_flags`: cudaHostAlloc flags
  /// (cudaHostAllocPortable is always added; cudaHostAllocWriteCombined is an option).
  /// `budget`: a total cap shared with other allocators (null: none).
  PinnedRegionAllocator(DeviceApi& api, uint64_t cap, unsigned host_alloc_flags,
                        std::shared_ptr<PinnedBudget> budget = nullptr) noexcept;
  /// Unpins every live region (not those forgotten by abandon()).
  ~PinnedRegionAllocator() override;
  PinnedRegionAllocator(const PinnedRegionAllocator&) = delete;
  PinnedRegionAllocator& operator=(const PinnedRegionAllocator&) = delete;

  /// Pins `bytes` (> 0) for `region`. Errors: OutOfMemory when bytes is 0, held() + bytes >
  /// cap() or the shared budget has no room for them (nothing is pinned; last_error()
  /// cudaErrorMemoryAllocation) or cudaHostAlloc reports
  /// cudaErrorMemoryAllocation; DeviceLost for a sticky CUDA error; Other for anything else
  /// (last_error() says which).
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override;
  /// Unpins `region` (cudaFreeHost; its error is ignored). Unknown regions are ignored.
  void destroy_region(uint32_t region) noexcept override;

  /// Forgets every live region without unpinning it: for an owner that cannot make sure the GPU
  /// has stopped reading them (a stalled stream, a failed device). The memory is leaked on
  /// purpose; held() and the shared budget keep counting it.
  void abandon() noexcept;

  /// The first byte of live `region`, or nullptr when it is not live.
  [[nodiscard]] std::byte* base(uint32_t region) const noexcept;
  /// Bytes pinned now (abandoned regions included).
  [[nodiscard]] uint64_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
  /// The most bytes ever pinned at once (<= cap()).
  [[nodiscard]] uint64_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
  /// The cap given at construction.
  [[nodiscard]] uint64_t cap() const noexcept { return cap_; }
  /// The CUDA error of the last failed create_region (cudaSuccess if none failed). Read it on
  /// the thread that calls create_region.
  [[nodiscard]] cudaError_t last_error() const noexcept { return last_error_; }

 private:
  using Region = detail::PinnedRegion;
  DeviceApi& api_;
  uint64_t cap_;
  unsigned flags_;
  std::shared_ptr<PinnedBudget> budget_;
  mutable std::mutex mu_;  // guards regions_ (base() may be called from other threads)
  std::map<uint32_t, Region> regions_;
  std::atomic<uint64_t> held_{0};
  std::atomic<uint64_t> peak_{0};
  cudaError_t last_error_ = cudaSuccess;
};

}  // namespace staging::cuda
