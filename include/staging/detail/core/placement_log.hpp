// PlacementLog<T>: an append-only array that many threads claim entries of at once, without a
// lock, and that keeps its storage from one batch to the next.
//
// Entries live in segments of doubling size (segment k holds first_segment << k entries), so an
// index never moves once claimed and the log grows without copying what writers are filling.
// claim(n) hands out n consecutive indices with one atomic add; at() finds (and on first use
// creates, with one compare-and-swap) the segment an index is in. Segments stay allocated after
// reset(), so a log that has reached a batch's working set allocates nothing more.
//
// Threading: claim() and at() from any thread, concurrently; each claimed entry is written by the
// thread that claimed it. reset(), size() as a count of complete entries and reading entries of
// other threads only once those threads are known to be done (e.g. a drained WriterGate).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "staging/detail/core/assert.hpp"

namespace staging {

/// See the file comment. T must be default-constructible and trivially copyable (entries are
/// plain records). Not movable (writers refer to it by address).
template <class T>
class PlacementLog {
  static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
                "PlacementLog entries are plain records");

 public:
  /// A log whose first segment holds `first_segment` entries (rounded up to a power of two,
  /// between 16 and 65536) and that hands out at most `max_entries` (0, or more than the 48
  /// segments hold: as many as they hold).
  explicit PlacementLog(std::size_t first_segment = 256, uint64_t max_entries = 0) noexcept
      : shift_(std::countr_zero(
            std::bit_ceil(std::clamp<std::size_t>(first_segment, 16, std::size_t{1} << 16)))),
        max_entries_(max_entries == 0 ? capacity_of(kSegments)
                                      : std::min(max_entries, capacity_of(kSegments))) {}
  PlacementLog(const PlacementLog&) = delete;
  PlacementLog& operator=(const PlacementLog&) = delete;
  /// Frees every segment. Precondition: no thread uses the log.
  ~PlacementLog() {
    for (auto& s : segments_)
      delete[] s.load(std::memory_order_relaxed);
  }

  /// Claims `n` (>= 1) consecutive entries; returns the first index, or none when they would
  /// reach past the log's maximum (the log is then full until reset(): every later claim fails
  /// too). Lock-free.
  [[nodiscard]] std::optional<uint64_t> claim(uint64_t n = 1) noexcept {
    const uint64_t first = next_.fetch_add(n, std::memory_order_relaxed);
    if (first > max_entries_ || n > max_entries_ - first) return std::nullopt;
    return first;
  }

  /// The entry at `index` (claimed), creating its segment on first use. None when the segment
  /// cannot be allocated (out of memory). Lock-free except for the allocation itself.
  [[nodiscard]] T* at(uint64_t index) noexcept {
    const auto [segment, offset] = locate(index);
    T* s = segments_[segment].load(std::memory_order_acquire);
    if (s == nullptr) [[unlikely]] {
      s = create(segment);
      if (s == nullptr) return nullptr;
    }
    return s + offset;
  }
  /// The entry at `index`, or null when its segment was never created (no claimer reached it).
  /// Reading another thread's entry needs that thread to be done (see the file comment).
  [[nodiscard]] const T* find(uint64_t index) const noexcept {
    const auto [segment, offset] = locate(index);
    const T* s = segments_[segment].load(std::memory_order_acquire);
    return s == nullptr ? nullptr : s + offset;
  }

  /// Calls f(entry) for each entry [0, n) in index order, skipping those whose segment was never
  /// created (as find() would answer null): one load per segment, not per entry. Reading another
  /// thread's entries needs that thread to be done (see the file comment).
  template <class F>
  void for_each(uint64_t n, F&& f) const {
    n = std::min(n, max_entries_);
    for (std::size_t k = 0; k < kSegments && capacity_of(k) < n; ++k) {
      const T* s = segments_[k].load(std::memory_order_acquire);
      if (s == nullptr) continue;
      const uint64_t count = std::min(n, capacity_of(k + 1)) - capacity_of(k);
      for (uint64_t i = 0; i < count; ++i)
        f(s[i]);
    }
  }

  /// Indices claimed so far (capped at the maximum): the entries [0, size()) once every claimer
  /// is done.
  [[nodiscard]] uint64_t size() const noexcept {
    return std::min(next_.load(std::memory_order_acquire), max_entries_);
  }
  /// Forgets every entry (keeps the segments). Precondition: no thread claims or writes.
  void reset() noexcept { next_.store(0, std::memory_order_relaxed); }
  /// The most entries the log hands out.
  [[nodiscard]] uint64_t max_entries() const noexcept { return max_entries_; }

 private:
  static constexpr std::size_t kSegments = 48;

  // Entries in segments [0, k): first_segment * (2^k - 1).
  [[nodiscard]] uint64_t capacity_of(std::size_t k) const noexcept {
    return ((uint64_t{1} << k) - 1) << shift_;
  }
  // Segment k starts at first * (2^k - 1): with q = index / first + 1, k = floor(log2(q)).
  [[nodiscard]] std::pair<std::size_t, uint64_t> locate(uint64_t index) const noexcept {
    const uint64_t q = (index >> shift_) + 1;
    const auto k = static_cast<std::size_t>(std::bit_width(q) - 1);
    STAGING_ASSERT(k < kSegments, "PlacementLog index beyond its segments");
    return {k, index - capacity_of(k)};
  }
  T* create(std::size_t segment) noexcept {
    T* fresh = new (std::nothrow) T[std::size_t{1} << (segment + shift_)];
    if (fresh == nullptr) return nullptr;
    T* expected = nullptr;
    if (segments_[segment].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel,
                                                   std::memory_order_acquire)) {
      return fresh;
    }
    delete[] fresh;  // another thread created it first
    return expected;
  }

  const int shift_;
  const uint64_t max_entries_;
  alignas(64) std::atomic<uint64_t> next_{0};
  alignas(64) std::array<std::atomic<T*>, kSegments> segments_{};
};

}  // namespace staging
