// AtomicCounters: the live, thread-safe side of some counters of a stats struct. Threads add to
// them (one relaxed fetch_add each, as a plain std::atomic would); stats() copies them into the
// struct. The members are named once, as template arguments, so the copy cannot miss one:
//
//   struct CopyStats { uint64_t copies = 0; uint64_t bytes = 0; };
//   AtomicCounters<CopyStats, &CopyStats::copies, &CopyStats::bytes> live;
//   live.add<&CopyStats::copies>();        // any thread
//   live.add<&CopyStats::bytes>(n);
//   CopyStats s;
//   live.store_into(s);                    // s.copies, s.bytes = what was added (relaxed reads)
//
// Relaxed throughout: the counters are diagnostics, never a decision input, and a snapshot is not
// one instant (each counter is read on its own).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace staging {

/// Raises `v` to `n` when `n` is larger (a compare-and-swap loop; relaxed). Any thread.
inline void raise_relaxed(std::atomic<uint64_t>& v, uint64_t n) noexcept {
  uint64_t seen = v.load(std::memory_order_relaxed);
  while (n > seen && !v.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
  }
}

/// Relaxed atomic counters mirroring the uint64_t members `Members` of stats struct `S`. Any
/// thread may call any member function. Not copyable (it holds atomics). The counters start at
/// 0 and wrap at 2^64 like the atomics they are.
template <class S, uint64_t S::*... Members>
class AtomicCounters {
 public:
  /// Adds `n` to the counter of member `M` (relaxed).
  template <uint64_t S::*M>
  void add(uint64_t n = 1) noexcept {
    values_[index_of<M>()].fetch_add(n, std::memory_order_relaxed);
  }
  /// Raises the counter of member `M` to `n` when `n` is larger (a peak; relaxed).
  template <uint64_t S::*M>
  void raise_to(uint64_t n) noexcept {
    raise_relaxed(values_[index_of<M>()], n);
  }
  /// The counter of member `M` now (relaxed).
  template <uint64_t S::*M>
  [[nodiscard]] uint64_t load() const noexcept {
    return values_[index_of<M>()].load(std::memory_order_relaxed);
  }
  /// Sets every mirrored member of `s` to its counter (relaxed reads); other members untouched.
  void store_into(S& s) const noexcept {
    std::size_t i = 0;
    ((s.*Members = values_[i++].load(std::memory_order_relaxed)), ...);
  }
  /// Adds every counter to its member of `s` (to sum the counters of several threads).
  void add_into(S& s) const noexcept {
    std::size_t i = 0;
    ((s.*Members += values_[i++].load(std::memory_order_relaxed)), ...);
  }

 private:
  template <uint64_t S::*M>
  static consteval std::size_t index_of() noexcept {
    constexpr uint64_t S::*members[] = {Members...};
    std::size_t i = 0;
    while (members[i] != M)
      ++i;  // a member not listed: not a constant expression (i runs out)
    return i;
  }

  std::atomic<uint64_t> values_[sizeof...(Members)]{};
};

}  // namespace staging
