// A fake RegionAllocator for host tests and staging-sim: every region is real host memory, so a
// test can write random bytes into a reservation and verify them later (what "the GPU" reads).
//
// Each region is followed by a guard of kGuardBytes bytes filled with a known pattern; a write
// past a region's end (invariant I4) shows up in guards_intact() and, when the region is
// destroyed, in log().guard_violations. New regions are filled with a non-zero pattern, so a test
// that forgets to write is not fooled by zeros.
//
// Failure injection: fail_next(n) fails the next n creations; set_budget() fails creations that
// would take the live bytes above a budget; set_max_region_bytes() refuses any region larger than
// a limit (default 1 GiB — a test asking for more is refused, not given the machine's memory).
//
// Threading: not synchronised; the ring's thread only. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/counters.hpp"

namespace staging::testing {

/// What a FakeRegionAllocator has done. Plain data.
struct FakeRegionLog {
  uint64_t created = 0;          ///< successful create_region() calls
  uint64_t destroyed = 0;        ///< destroy_region() calls
  uint64_t failed = 0;           ///< refused create_region() calls (armed, budget, size, memory)
  uint64_t live_regions = 0;     ///< regions that exist now
  uint64_t live_bytes = 0;       ///< their bytes (guards not counted)
  uint64_t peak_live_bytes = 0;  ///< the most live_bytes has been
  /// Regions destroyed with a damaged guard (something wrote past their end).
  uint64_t guard_violations = 0;
  /// Bytes of every successful creation, in order.
  std::vector<uint64_t> sizes;
};

/// FakeRegionLog's counters, in declaration order (counters.hpp); `sizes` is not a counter.
constexpr auto counters_of(std::type_identity<FakeRegionLog>) noexcept {
  using S = FakeRegionLog;
  return std::tuple{
      counter("created", "regions created", &S::created),
      counter("destroyed", "regions destroyed", &S::destroyed),
      counter("failed", "creations refused", &S::failed),
      counter("live_regions", "live regions", &S::live_regions),
      counter("live_bytes", "live bytes", &S::live_bytes, CounterUnit::Bytes),
      counter("peak_live_bytes", "peak live bytes", &S::peak_live_bytes, CounterUnit::Bytes),
      counter("guard_violations", "guard violations", &S::guard_violations),
      not_a_counter(&S::sizes)};
}
static_assert(counters_complete<FakeRegionLog>(),
              "FakeRegionLog: a member is missing from counters_of");

/// A RegionAllocator over host memory. See the file comment.
/// Ownership: owns the memory of its live regions (freed by destroy_region() or the destructor;
/// data() pointers die with them). Not copyable.
class FakeRegionAllocator final : public RegionAllocator {
 public:
  /// Bytes of the guard after every region.
  static constexpr std::size_t kGuardBytes = 64;
  /// The byte the guard is filled with.
  static constexpr std::byte kGuard{0xCD};
  /// The byte a new region is filled with (non-zero, so a forgotten write shows).
  static constexpr std::byte kFill{0xA5};

  /// Creates region `region` of `bytes` host bytes (plus the guard), unless a failure is armed
  /// (its error), or the size limit, the budget or the host refuses it (OutOfMemory); checked in
  /// that order, each refusal counted in log().failed. Creating a region that is live is a bug
  /// of the caller (the ring): it aborts.
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override {
    STAGING_ASSERT(!live(region), "FakeRegionAllocator: region created while live");
    const auto refuse = [this](AllocError e) -> Expected<void, AllocError> {
      ++log_.failed;
      return unexpected(e);
    };
    if (fail_next_ > 0) {
      --fail_next_;
      return refuse(error_);
    }
    if (bytes > max_region_bytes_ || bytes > SIZE_MAX - kGuardBytes) {
      return refuse(AllocError::OutOfMemory);
    }
    if (budget_ && (log_.live_bytes > *budget_ || bytes > *budget_ - log_.live_bytes)) {
      return refuse(AllocError::OutOfMemory);
    }
    const std::size_t n = static_cast<std::size_t>(bytes);
    std::unique_ptr<std::byte[]> memory(new (std::nothrow) std::byte[n + kGuardBytes]);
    if (!memory) return refuse(AllocError::OutOfMemory);
    std::memset(memory.get(), static_cast<int>(kFill), n);
    std::memset(memory.get() + n, static_cast<int>(kGuard), kGuardBytes);
    if (region >= regions_.size()) regions_.resize(region + 1);
    regions_[region] = Region{std::move(memory), bytes};
    ++log_.created;
    ++log_.live_regions;
    log_.sizes.push_back(bytes);
    log_.live_bytes += bytes;
    if (log_.live_bytes > log_.peak_live_bytes) log_.peak_live_bytes = log_.live_bytes;
    return {};
  }

  /// Releases region `region`. Destroying a region that is not live aborts (a ring bug).
  void destroy_region(uint32_t region) noexcept override {
    STAGING_ASSERT(live(region), "FakeRegionAllocator: destroying a region that is not live");
    if (!guards_intact(region)) ++log_.guard_violations;
    ++log_.destroyed;
    --log_.live_regions;
    log_.live_bytes -= regions_[region].bytes;
    regions_[region] = Region{};
  }

  /// True while region `region` exists.
  [[nodiscard]] bool live(uint32_t region) const noexcept {
    return region < regions_.size() && regions_[region].memory != nullptr;
  }
  /// The region's memory (as a backend's mapping would expose it). Precondition: live(region).
  [[nodiscard]] std::byte* data(uint32_t region) {
    STAGING_ASSERT(live(region), "FakeRegionAllocator: data() of a region that is not live");
    return regions_[region].memory.get();
  }
  /// The region's bytes (0 when not live).
  [[nodiscard]] uint64_t size(uint32_t region) const noexcept {
    return live(region) ? regions_[region].bytes : 0;
  }
  /// True when nothing wrote past the end of region `region` (true when not live).
  [[nodiscard]] bool guards_intact(uint32_t region) const noexcept {
    if (!live(region)) return true;
    const std::byte* guard = regions_[region].memory.get() + regions_[region].bytes;
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
      if (guard[i] != kGuard) return false;
    }
    return true;
  }
  /// True when every live region's guard is intact.
  [[nodiscard]] bool all_guards_intact() const noexcept {
    for (uint32_t i = 0; i < regions_.size(); ++i) {
      if (!guards_intact(i)) return false;
    }
    return true;
  }

  /// The next `count` creations fail with `error` (replacing what was armed before; 0 disarms).
  void fail_next(uint64_t count, AllocError error = AllocError::OutOfMemory) noexcept {
    fail_next_ = count;
    error_ = error;
  }
  /// Creations that would take the live bytes above `bytes` fail (none: no budget).
  void set_budget(std::optional<uint64_t> bytes) noexcept { budget_ = bytes; }
  /// Regions larger than `bytes` are refused with OutOfMemory (default 1 GiB; a region whose
  /// guard would not fit in size_t is refused whatever the limit).
  void set_max_region_bytes(uint64_t bytes) noexcept { max_region_bytes_ = bytes; }
  /// What the allocator has done so far.
  [[nodiscard]] const FakeRegionLog& log() const noexcept { return log_; }

 private:
  struct Region {
    std::unique_ptr<std::byte[]> memory;
    uint64_t bytes = 0;
  };
  std::vector<Region> regions_;
  FakeRegionLog log_;
  uint64_t fail_next_ = 0;
  AllocError error_ = AllocError::OutOfMemory;
  std::optional<uint64_t> budget_;
  uint64_t max_region_bytes_ = uint64_t{1} << 30;
};

}  // namespace staging::testing
