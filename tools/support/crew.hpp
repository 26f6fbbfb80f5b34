// Crew: persistent threads that run one job per round, for the benchmarks whose frames are
// written by many threads at once (staging-bench-core's shared-frame rows, staging-bench's
// frame-small "shared" route). Threading: construct, round() and destroy from one thread (the
// owner); the job runs on the crew's threads, one call per thread per round.
//
// Placement: with STAGING_BENCH_CPUS set (a list of CPU numbers and ranges, "0,2,4-7"), thread t
// of every crew is pinned to the list's t-th CPU in increasing order (modulo the list's length);
// the owner is not pinned.
// Unset, empty or unparsable: no thread is pinned and the system places them (the default). For
// hosts whose CPUs share cores in a way the system cannot see (a guest's virtual CPUs), so that a
// run can put each writer on a core of its own.
#pragma once

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "staging/detail/core/host_topology.hpp"
#include "staging/detail/core/spin_lock.hpp"

// How a Crew's threads wait between rounds.
enum class CrewWait {
  Barrier,  // std::barrier: a thread that finished early may sleep, and is woken for the next
  Hot,      // spinning on an atomic round counter (yielding after a while), as the workers of an
            // engine's job system keep looking for work during a frame: no wake-up per round
};

// The CPUs that STAGING_BENCH_CPUS lists ("0,2,4-7" -> 0 2 4 5 6 7, in increasing order); empty
// where it is unset or malformed.
inline std::vector<int> crew_cpus() {
  const char* text = std::getenv("STAGING_BENCH_CPUS");
  if (text == nullptr) return {};
  return staging::parse_cpu_list(text).value_or(std::vector<int>{});
}

// Persistent threads that run one job per frame: round() releases them all, and returns once
// every one has finished its job. The benchmarks' frames are these rounds.
class Crew {
 public:
  Crew(unsigned threads, std::function<void(unsigned)> job, CrewWait wait = CrewWait::Barrier)
      : start_(threads + 1), done_(threads + 1), job_(std::move(job)), wait_(wait) {
    const std::vector<int> cpus = crew_cpus();
    for (unsigned t = 0; t < threads; ++t) {
      const int cpu = cpus.empty() ? -1 : cpus[t % cpus.size()];
      pool_.emplace_back([this, t, cpu] {
        // Best effort: a CPU outside the process's set leaves the thread where it was.
        if (cpu >= 0) staging::pin_current_thread(std::span<const int>(&cpu, 1));
        for (uint64_t seen = 0;;) {
          if (wait_ == CrewWait::Hot) {
            spin_until([&] { return round_.load(std::memory_order_acquire) != seen; });
            seen = round_.load(std::memory_order_acquire);
          } else {
            start_.arrive_and_wait();
          }
          if (stop_.load(std::memory_order_acquire)) return;
          job_(t);
          if (wait_ == CrewWait::Hot) {
            finished_.fetch_add(1, std::memory_order_acq_rel);
          } else {
            done_.arrive_and_wait();
          }
        }
      });
    }
  }
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;
  ~Crew() {
    stop_.store(true, std::memory_order_release);
    if (wait_ == CrewWait::Hot) {
      round_.fetch_add(1, std::memory_order_acq_rel);
    } else {
      start_.arrive_and_wait();
    }
    for (auto& t : pool_)
      t.join();
  }
  // Runs one round; returns its wall time.
  std::chrono::nanoseconds round() {
    const auto begin = std::chrono::steady_clock::now();
    if (wait_ == CrewWait::Hot) {
      finished_.store(0, std::memory_order_relaxed);
      round_.fetch_add(1, std::memory_order_acq_rel);
      const auto all = static_cast<uint32_t>(pool_.size());
      spin_until([&] { return finished_.load(std::memory_order_acquire) == all; });
    } else {
      start_.arrive_and_wait();
      done_.arrive_and_wait();
    }
    return std::chrono::steady_clock::now() - begin;
  }

 private:
  // Spins until `ready()`; after about 100 us, yields between looks (more threads than cores).
  template <class Ready>
  static void spin_until(Ready ready) {
    for (uint32_t i = 0; !ready(); ++i) {
      if (i < (1u << 14)) {
        staging::cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
  }

  std::barrier<> start_, done_;
  std::function<void(unsigned)> job_;
  CrewWait wait_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> round_{0};
  std::atomic<uint32_t> finished_{0};
  std::vector<std::thread> pool_;
};
