// staging-bench-cpu: the fixed CPU costs of an upload, without a GPU.
//
// What a small upload pays besides copying its bytes, measured on this host's CPUs:
//   wake      how long a sleeping fill thread takes to run after submit() wakes it (submit until
//             a one-slice job is done, and the pool's own timing), by pool size
//   handoff   N threads taking one lock per 32 KiB slice they copy: std::mutex (a contended waiter
//             sleeps in the kernel) against SpinLock (it never does) — locks per second, the mean
//             wait for the lock, and the copy rate they leave
//   job       one fill job through the pool, by size: the caller alone, the pool awake (held), the
//             pool asleep and woken, the pool asleep and not woken (the submitter fills)
//   upload    cuda::Uploader::upload() on a null device (copies and events complete at once): the
//             call's time beside the same bytes filled by the pool alone — the difference is the
//             Uploader's own fixed cost (reservation, plan, event points, copy calls); with the
//             pool awake (back-to-back uploads) and asleep (a pause before each); and the driver
//             calls one upload makes (copies, event records and queries, stream queries, capture
//             and destination checks), free here, each a cost on a GPU's driver
//   timeline  EventTimeline open + record + completed() per point, from one thread and from
//             several at once
//
// Every figure is the median over repetitions (p90 and max where the tail matters). Run it on the
// machine whose GPU is benchmarked: wake-ups and lock hand-offs cost very different amounts on a
// virtual machine whose idle CPUs halt than on bare metal.
//
//   build/bin/staging-bench-cpu [--threads N] [--seconds S]
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "exception_exit.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/cuda/uploader.hpp"
#include "staging/detail/core/fill_engine.hpp"
#include "staging/detail/core/host_topology.hpp"
#include "staging/detail/core/spin_lock.hpp"
#include "staging/detail/cuda/device_api.hpp"
#include "staging/detail/cuda/event_timeline.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using staging::Duration;
using staging::FillMethod;
using staging::FillPool;
using staging::FillPoolConfig;
constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Spread {
  double p50 = 0, p90 = 0, max = 0;
};
Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.p50 = v[v.size() / 2];
  s.p90 = v[v.size() * 9 / 10];
  s.max = v.back();
  return s;
}

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 131 + 7) & 0xFF);
  return v;
}

std::shared_ptr<FillPool> make_pool(unsigned threads, Duration spin) {
  FillPoolConfig c;
  c.threads = threads;
  c.spin = spin;
  c.pinning = staging::ThreadPinning::None;
  auto pool = FillPool::create(c);
  if (!pool) {
    std::fprintf(stderr, "staging-bench-cpu: FillPool::create failed\n");
    std::exit(1);
  }
  return *pool;
}

bool wait_all_asleep(FillPool& pool) {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (staging::detail::engine_of(pool).awake() != 0) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

// --- wake ------------------------------------------------------------------------------------

void wake(const std::vector<unsigned>& sizes, int reps) {
  std::vector<std::byte> src = pattern(64 * KiB), dst(64 * KiB);
  for (unsigned n : sizes) {
    auto pool = make_pool(n, Duration::zero());  // sleep as soon as idle
    std::vector<double> took;
    for (int r = 0; r < reps; ++r) {
      if (!wait_all_asleep(*pool)) continue;
      staging::detail::FillJob job;
      job.dst = dst.data();
      job.src = src.data();
      job.bytes = 4096;
      job.slice_bytes = 4096;  // one slice: a woken thread copies it; the submitter only looks
      const auto t0 = Clock::now();
      staging::detail::engine_of(*pool).submit(job);
      while (!staging::detail::engine_of(*pool).done(job))
        staging::cpu_relax();
      took.push_back(us_since(t0));
    }
    const Spread s = spread(took);
    const staging::FillPoolStats st = pool->stats();
    std::printf(
        "wake      threads=%-3u submit until a woken thread copied 4 KiB: p50 %.1f us, p90 %.1f, "
        "max %.1f; the pool's timing: mean %.1f us, max %.1f over %llu wake-ups\n",
        n, s.p50, s.p90, s.max,
        st.wake_samples ? static_cast<double>(st.wake_ns) / st.wake_samples / 1e3 : 0.0,
        static_cast<double>(st.wake_max_ns) / 1e3,
        static_cast<unsigned long long>(st.wake_samples));
  }
}

// --- handoff ---------------------------------------------------------------------------------

template <class Lock>
void handoff_one(const char* name, unsigned n, double seconds) {
  Lock lock;
  uint64_t shared = 0;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> locks{0}, wait_ns{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n; ++t) {
    threads.emplace_back([&] {
      std::vector<std::byte> src = pattern(32 * KiB), dst(32 * KiB);
      uint64_t mine = 0, waited = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const auto t0 = Clock::now();
        lock.lock();
        waited += static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
        ++shared;
        lock.unlock();
        std::memcpy(dst.data(), src.data(), dst.size());
        ++mine;
      }
      locks.fetch_add(mine);
      wait_ns.fetch_add(waited);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& t : threads)
    t.join();
  const double per_s = static_cast<double>(locks.load()) / seconds;
  std::printf(
      "handoff   %-10s threads=%-3u %.2f M locks/s, mean wait for the lock %.2f us, copying %.1f "
      "GB/s (32 KiB per lock)\n",
      name, n, per_s / 1e6,
      locks.load() ? static_cast<double>(wait_ns.load()) / static_cast<double>(locks.load()) / 1e3
                   : 0.0,
      per_s * 32 * KiB / 1e9);
}

void handoff(const std::vector<unsigned>& sizes, double seconds) {
  for (unsigned n : sizes) {
    handoff_one<std::mutex>("std::mutex", n, seconds);
    handoff_one<staging::SpinLock>("SpinLock", n, seconds);
  }
}

// --- job -------------------------------------------------------------------------------------

void job(unsigned threads, int reps) {
  const std::size_t most = 4 * MiB;
  std::vector<std::byte> src = pattern(most), dst(most);
  for (uint64_t bytes : {64 * KiB, 512 * KiB, 1 * MiB, 4 * MiB}) {
    std::vector<double> alone, awake, woken, unwoken;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      std::memcpy(dst.data(), src.data(), bytes);
      alone.push_back(us_since(t0));
    }
    auto pool = make_pool(threads, std::chrono::microseconds(100));
    const auto one = [&](bool wake) {
      staging::detail::FillJob j;
      j.dst = dst.data();
      j.src = src.data();
      j.bytes = bytes;
      j.method = FillMethod::Memcpy;
      const auto t0 = Clock::now();
      staging::detail::engine_of(*pool).submit(j, wake);
      staging::detail::engine_of(*pool).wait(j);
      return us_since(t0);
    };
    {
      const staging::detail::FillEngine::Hold hold = staging::detail::engine_of(*pool).hold();
      for (int r = 0; r < reps; ++r)
        awake.push_back(one(true));
    }
    for (int r = 0; r < reps / 4; ++r) {
      if (wait_all_asleep(*pool)) woken.push_back(one(true));
      if (wait_all_asleep(*pool)) unwoken.push_back(one(false));
    }
    const Spread a = spread(alone), h = spread(awake), w = spread(woken), u = spread(unwoken);
    std::printf(
        "job       %5llu KiB  threads=%-3u caller alone %.1f us | pool awake %.1f (p90 %.1f) | "
        "asleep, woken %.1f (p90 %.1f) | asleep, not woken %.1f us\n",
        static_cast<unsigned long long>(bytes / KiB), threads, a.p50, h.p50, h.p90, w.p50, w.p90,
        u.p50);
  }
}

// --- upload on a null device -------------------------------------------------------------------

// A DeviceApi whose copies, events and streams complete at once and touch nothing: what is left
// of an upload is the Uploader's own work and the fills. It counts the driver calls an upload
// would make (each costs a GPU's driver something; here nothing).
class NullDevice final : public staging::cuda::DeviceApi {
 public:
  enum Call { Record, Query, StreamQuery, Capturing, Copy, AddressRange, Calls };
  std::array<std::atomic<uint64_t>, Calls> calls{};
  std::array<uint64_t, Calls> snapshot() const {
    std::array<uint64_t, Calls> out{};
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = calls[i].load(std::memory_order_relaxed);
    return out;
  }

  cudaError_t host_alloc(void** ptr, std::size_t bytes, unsigned) noexcept override {
    *ptr = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    return *ptr != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
  }
  cudaError_t host_free(void* ptr) noexcept override {
    std::free(ptr);
    return cudaSuccess;
  }
  cudaError_t event_create(cudaEvent_t* event) noexcept override {
    *event = reinterpret_cast<cudaEvent_t>(new (std::nothrow) int(0));
    return *event != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
  }
  cudaError_t event_destroy(cudaEvent_t event) noexcept override {
    delete reinterpret_cast<int*>(event);
    return cudaSuccess;
  }
  cudaError_t event_record(cudaEvent_t, cudaStream_t) noexcept override { return count(Record); }
  cudaError_t event_query(cudaEvent_t) noexcept override { return count(Query); }
  cudaError_t stream_wait_event(cudaStream_t, cudaEvent_t) noexcept override { return cudaSuccess; }
  cudaError_t stream_is_capturing(cudaStream_t, bool* capturing) noexcept override {
    *capturing = false;
    return count(Capturing);
  }
  cudaError_t copy_to_device_async(void*, const void*, std::size_t,
                                   cudaStream_t) noexcept override {
    return count(Copy);
  }
  cudaError_t copy_pageable_to_device_async(void*, const void*, std::size_t,
                                            cudaStream_t) noexcept override {
    return count(Copy);
  }
  cudaError_t stream_query(cudaStream_t) noexcept override { return count(StreamQuery); }
  cudaError_t host_numa_node(int* node) noexcept override {
    *node = -1;
    return cudaSuccess;
  }
  // The driver's answer costs a call on a GPU; here there is no allocation to describe.
  cudaError_t address_range(const void*, void**, std::size_t*) noexcept override {
    count(AddressRange);
    return cudaErrorNotSupported;
  }

 private:
  cudaError_t count(Call c) noexcept {
    calls[c].fetch_add(1, std::memory_order_relaxed);
    return cudaSuccess;
  }
};

void upload(unsigned threads, int reps) {
  NullDevice device;
  const std::size_t most = 4 * MiB;
  std::vector<std::byte> src = pattern(most), dst(most);
  for (unsigned t : {1u, threads}) {
    staging::cuda::UploaderConfig config;
    config.fill_threads = t;
    config.fill = FillMethod::Memcpy;
    config.direct = false;  // no direct part: the null device's "driver copy" would be free
    auto uploader = staging::cuda::detail::create_uploader(config, device);
    if (!uploader) {
      std::fprintf(stderr, "staging-bench-cpu: Uploader::create failed\n");
      std::exit(1);
    }
    auto pool = make_pool(t, std::chrono::microseconds(100));
    for (uint64_t bytes : {256 * KiB, 1 * MiB, 4 * MiB}) {
      const auto once = [&] {
        const auto t0 = Clock::now();
        auto p = uploader->upload(dst.data(), src.data(), bytes, nullptr);
        const double us = us_since(t0);
        if (!p) std::exit(1);
        return us;
      };
      const auto fill_only = [&] {
        staging::detail::FillJob j;
        j.dst = dst.data();
        j.src = src.data();
        j.bytes = bytes;
        j.method = FillMethod::Memcpy;
        const staging::detail::FillEngine::Hold hold = staging::detail::engine_of(*pool).hold();
        const auto t0 = Clock::now();
        staging::detail::engine_of(*pool).submit(j);
        staging::detail::engine_of(*pool).wait(j);
        return us_since(t0);
      };
      std::vector<double> awake, asleep, fill;
      for (int r = 0; r < 8; ++r)
        once();  // the planner's first measurements
      const staging::cuda::UploaderStats before = uploader->stats();
      const auto calls_before = device.snapshot();
      for (int r = 0; r < reps; ++r)
        awake.push_back(once());
      const staging::cuda::UploaderStats after = uploader->stats();
      const auto calls_after = device.snapshot();
      for (int r = 0; r < reps; ++r)
        fill.push_back(fill_only());
      for (int r = 0; r < reps / 4; ++r) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the pool falls asleep
        asleep.push_back(once());
      }
      const Spread a = spread(awake), s = spread(asleep), f = spread(fill);
      const double pieces = static_cast<double>(after.copies - before.copies) / reps;
      std::printf(
          "upload    %5llu KiB  threads=%-3u upload() %.1f us (p90 %.1f), %.1f pieces | the pool "
          "filling the same bytes %.1f us: fixed cost %.1f us | pool asleep before each upload "
          "%.1f us (p90 %.1f)\n",
          static_cast<unsigned long long>(bytes / KiB), t, a.p50, a.p90, pieces, f.p50,
          a.p50 - f.p50, s.p50, s.p90);
      const auto per = [&](NullDevice::Call c) {
        return static_cast<double>(calls_after[c] - calls_before[c]) / reps;
      };
      std::printf(
          "          driver calls per upload: copies %.1f, event records %.1f, event queries %.1f, "
          "stream queries %.1f, capture checks %.1f, address ranges %.1f\n",
          per(NullDevice::Copy), per(NullDevice::Record), per(NullDevice::Query),
          per(NullDevice::StreamQuery), per(NullDevice::Capturing), per(NullDevice::AddressRange));
    }
  }
}

// --- timeline ----------------------------------------------------------------------------------

void timeline(unsigned threads, int points) {
  NullDevice device;
  auto made = staging::cuda::EventTimeline::create(device, 1024);
  if (!made) std::exit(1);
  staging::cuda::EventTimeline& t = **made;
  const auto cycle = [&] {
    auto p = t.open(std::chrono::seconds(1));
    if (!p) std::exit(1);
    t.record(*p, nullptr);
    (void)t.completed();
  };
  auto t0 = Clock::now();
  for (int i = 0; i < points; ++i)
    cycle();
  const double one = us_since(t0) * 1e3 / points;
  t0 = Clock::now();
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&] {
      for (int i = 0; i < points / static_cast<int>(threads); ++i)
        cycle();
    });
  }
  for (auto& w : workers)
    w.join();
  const double many = us_since(t0) * 1e3 / (points / threads * threads);
  std::printf(
      "timeline  open + record + completed(): %.0f ns per point from one thread; %u threads at "
      "once: %.0f ns per point (all threads together)\n",
      one, threads, many);
}

}  // namespace

int main(int argc, char** argv) try {
  const unsigned cpus = static_cast<unsigned>(staging::HostTopology::read().cpus(-1).size());
  unsigned threads = std::clamp(cpus > 2 ? cpus - 2 : 1u, 1u, 12u);  // the Uploader's default
  double seconds = 0.2;
  CLI::App app{
      "staging-bench-cpu: the fixed CPU costs of an upload (wake-ups, lock hand-offs, "
      "the Uploader's own work), without a GPU.",
      "staging-bench-cpu"};
  app.add_option("--threads", threads, "fill-pool threads (default: the Uploader's default here)")
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--seconds", seconds, "time per lock hand-off measurement")
      ->check(CLI::Range(0.01, 3600.0));
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;
  std::printf("# cpus usable: %u; pool threads: %u (the Uploader's default here)\n", cpus, threads);
  std::vector<unsigned> sizes{1, 4, threads};
  if (cpus > threads + 2) sizes.push_back(cpus - 2);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  wake(sizes, 200);
  handoff(sizes, seconds);
  job(threads, 200);
  upload(threads, 200);
  timeline(std::min(threads, 8u), 20000);
  return 0;
} catch (...) {
  return staging::tools::exception_exit("staging-bench-cpu");
}
