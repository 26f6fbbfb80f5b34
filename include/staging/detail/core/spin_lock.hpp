// SpinLock: a lock for critical sections of a few instructions that many threads take at once
// (the fill pool's queue of slices, a timeline's table of points).
//
// Why not std::mutex there: a contended std::mutex puts the waiting thread to sleep in the kernel
// at once, and the unlocking thread wakes it with a system call. Where a dozen threads take the
// lock every few microseconds, those sleeps form a convoy — each hand-off waits for the next
// sleeper to be scheduled again, tens of microseconds on a virtual machine whose idle CPUs halt —
// and the whole queue moves at the speed of the wake-ups. A waiter here never sleeps in the
// kernel: it spins on a read of the lock word (pause), and yields its CPU after a few hundred
// spins so that a holder that was preempted gets to run.
//
// Meets the Lockable requirements (std::lock_guard, std::unique_lock, std::scoped_lock). Not
// recursive; not for waiting on conditions (use it beside a condition variable's own mutex).
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace staging {

/// A hint to the CPU that the caller is spinning (x86 `pause`; elsewhere nothing).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

/// See the file comment. Threading: any thread; the thread that locked it unlocks it.
class SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  /// Takes the lock, spinning (then yielding) while another thread holds it.
  void lock() noexcept {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      for (unsigned spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpinsBeforeYield) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  /// Takes the lock if it is free; never waits.
  [[nodiscard]] bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  /// Releases the lock (the caller holds it).
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr unsigned kSpinsBeforeYield = 256;
  std::atomic<bool> locked_{false};
};

}  // namespace staging
