// CopyCrew: threads copying slices of a source into staging memory with copy_to_staging, for the
// bench rows that measure a fill on its own or beside the device's copies (the CUDA `contention`
// section, the streamer's `streamer-fill` and `streamer-beside-fill` rows).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "staging/core/fill_pool.hpp"

namespace staging::bench {

/// Threads copying `slice`-byte slices of `src` (`src_bytes`, cycled) into `dst` (`dst_bytes`,
/// cycled) from construction on: until they copied `bytes` rounded up to whole slices (0: until
/// stop()), paced to `pace_gbps` GB/s over all of them (0: as fast as they can). A slice of 0, or
/// a buffer smaller than one slice, starts no thread (the crew reaches 0 GB/s).
/// Threading: construct, stop() and finish() from one thread; the crew's threads are its own.
class CopyCrew {
 public:
  struct Options {
    uint64_t slice = uint64_t{1} << 20;
    uint64_t bytes = 0;    ///< stop after this many bytes (0: run until stop())
    double pace_gbps = 0;  ///< GB/s over all threads (0: unpaced)
    FillMethod method = FillMethod::Auto;
  };

  CopyCrew(unsigned threads, const std::byte* src, uint64_t src_bytes, std::byte* dst,
           uint64_t dst_bytes, const Options& options)
      : src_(src),
        dst_(dst),
        o_(options),
        src_slices_(o_.slice == 0 ? 1 : std::max<uint64_t>(1, src_bytes / o_.slice)),
        dst_slices_(o_.slice == 0 ? 1 : std::max<uint64_t>(1, dst_bytes / o_.slice)),
        slices_(o_.slice == 0 ? 0 : (o_.bytes + o_.slice - 1) / o_.slice),
        start_(Clock::now()) {
    if (o_.slice == 0 || src_bytes < o_.slice || dst_bytes < o_.slice) return;
    for (unsigned t = 0; t < threads; ++t)
      threads_.emplace_back([this] { work(); });
  }
  CopyCrew(const CopyCrew&) = delete;
  CopyCrew& operator=(const CopyCrew&) = delete;
  ~CopyCrew() { stop(); }

  /// Stops the threads (at once) and returns the rate they reached over their run, GB/s.
  double stop() {
    stop_.store(true, std::memory_order_relaxed);
    return finish();
  }
  /// Waits for the threads (a crew with a byte count: until they copied it) and returns the rate
  /// they reached, GB/s.
  double finish() {
    if (!threads_.empty()) {
      for (auto& t : threads_)
        t.join();
      threads_.clear();
      const double s = std::chrono::duration<double>(Clock::now() - start_).count();
      reached_ = static_cast<double>(done_.load() * o_.slice) / s / 1e9;
    }
    return reached_;
  }

 private:
  using Clock = std::chrono::steady_clock;

  void work() {
    while (!stop_.load(std::memory_order_relaxed)) {
      if (o_.pace_gbps > 0) {
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start_).count();
        const auto allowed = static_cast<uint64_t>(ns * o_.pace_gbps) / o_.slice;
        if (claimed_.load(std::memory_order_relaxed) >= allowed) {
#if defined(__x86_64__)
          _mm_pause();
#endif
          continue;
        }
      }
      const uint64_t i = claimed_.fetch_add(1, std::memory_order_relaxed);
      if (slices_ != 0 && i >= slices_) return;
      copy_to_staging(dst_ + (i % dst_slices_) * o_.slice, src_ + (i % src_slices_) * o_.slice,
                      static_cast<std::size_t>(o_.slice), o_.method);
      done_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  const std::byte* src_;
  std::byte* dst_;
  Options o_;
  uint64_t src_slices_;
  uint64_t dst_slices_;
  uint64_t slices_;
  Clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> claimed_{0};
  std::atomic<uint64_t> done_{0};
  double reached_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace staging::bench
