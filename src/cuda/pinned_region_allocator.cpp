#include "staging/detail/cuda/pinned_region_allocator.hpp"

#include <algorithm>

namespace staging::cuda {

bool PinnedBudget::try_charge(uint64_t bytes) noexcept {
  uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > cap_ || held > cap_ - bytes) return false;
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (held + bytes > peak &&
         !peak_.compare_exchange_weak(peak, held + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

PinnedRegionAllocator::PinnedRegionAllocator(DeviceApi& api, uint64_t cap,
                                             unsigned host_alloc_flags,
                                             std::shared_ptr<PinnedBudget> budget) noexcept
    : api_(api),
      cap_(cap),
      flags_(host_alloc_flags | cudaHostAllocPortable),
      budget_(std::move(budget)) {}

PinnedRegionAllocator::~PinnedRegionAllocator() {
  for (auto& [id, region] : regions_) {
    api_.host_free(region.base);
    if (budget_) budget_->credit(region.bytes);
  }
}

Expected<void, AllocError> PinnedRegionAllocator::create_region(uint32_t region, uint64_t bytes) {
  const uint64_t held = held_.load(std::memory_order_relaxed);
  if (bytes == 0 || bytes > cap_ || held > cap_ - bytes) {
    last_error_ = cudaErrorMemoryAllocation;
    return unexpected(AllocError::OutOfMemory);
  }
  if (budget_ && !budget_->try_charge(bytes)) {
    last_error_ = cudaErrorMemoryAllocation;
    return unexpected(AllocError::OutOfMemory);
  }
  void* ptr = nullptr;
  const cudaError_t err = api_.host_alloc(&ptr, static_cast<std::size_t>(bytes), flags_);
  if (err != cudaSuccess) {
    if (budget_) budget_->credit(bytes);
    last_error_ = err;
    if (err == cudaErrorMemoryAllocation) return unexpected(AllocError::OutOfMemory);
    return unexpected(is_sticky(err) ? AllocError::DeviceLost : AllocError::Other);
  }
  {
    std::lock_guard lock(mu_);
    regions_[region] = Region{static_cast<std::byte*>(ptr), bytes};
  }
  const uint64_t now = held_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return {};
}

void PinnedRegionAllocator::destroy_region(uint32_t region) noexcept {
  Region r;
  {
    std::lock_guard lock(mu_);
    const auto it = regions_.find(region);
    if (it == regions_.end()) return;
    r = it->second;
    regions_.erase(it);
  }
  api_.host_free(r.base);
  held_.fetch_sub(r.bytes, std::memory_order_relaxed);
  if (budget_) budget_->credit(r.bytes);
}

void PinnedRegionAllocator::abandon() noexcept {
  std::lock_guard lock(mu_);
  regions_.clear();
}

std::byte* PinnedRegionAllocator::base(uint32_t region) const noexcept {
  std::lock_guard lock(mu_);
  const auto it = regions_.find(region);
  return it == regions_.end() ? nullptr : it->second.base;
}

}  // namespace staging::cuda
