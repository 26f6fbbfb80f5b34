// staging-bench --backend cuda, section `contention`: the copy engine's rate while host threads
// fill other staging memory at the rate a pipeline of pieces fills it.
//
//   k load threads                                      the calling thread
//   ------------------------------------------------   -----------------------------------------
//   copy 1 MiB slices of the pageable source into       one cudaMemcpyAsync of the whole size from
//   another pinned buffer (memcpy or streaming          pinned memory (the ceiling's copy), then
//   stores), paced to `load` GB/s over all threads      synchronize; timed as the ceiling is
//
// An upload from pageable memory fills every byte it copies, so while its copies run the host's
// memory also serves the fill: at least the link's rate of reads and of writes. This section
// measures how fast the copies alone can go under that load, with nothing of the Uploader
// involved: a pipeline that overlaps its fill with its copies is bounded by it. Rows: each size
// x fill method x load (0.5, 1.0 and 1.3 x that size's ceiling), with the load reached.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench_cuda.hpp"

namespace staging::bench::cuda_bench {
namespace {

constexpr uint64_t kSlice = uint64_t{1} << 20;

// Threads copying slices of `src` into `dst` (both `bytes` long, cycled), paced so that all of
// them together copy `gbps` GB/s from start() on, until stop().
class LoadCrew {
 public:
  LoadCrew(unsigned threads, const std::byte* src, std::byte* dst, uint64_t bytes,
           FillMethod method, double gbps)
      : src_(src),
        dst_(dst),
        slices_(std::max<uint64_t>(1, bytes / kSlice)),
        method_(method),
        bytes_per_ns_(gbps),
        start_(Clock::now()) {
    for (unsigned t = 0; t < threads; ++t)
      threads_.emplace_back([this] { work(); });
  }
  LoadCrew(const LoadCrew&) = delete;
  LoadCrew& operator=(const LoadCrew&) = delete;
  ~LoadCrew() { stop(); }

  // Stops the threads; the rate they reached over their whole run (GB/s).
  double stop() {
    if (!threads_.empty()) {
      stop_.store(true, std::memory_order_relaxed);
      for (auto& t : threads_)
        t.join();
      threads_.clear();
      reached_ = static_cast<double>(done_.load() * kSlice) / seconds_since(start_) / 1e9;
    }
    return reached_;
  }

 private:
  void work() {
    while (!stop_.load(std::memory_order_relaxed)) {
      const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start_).count();
      const uint64_t allowed = static_cast<uint64_t>(ns * bytes_per_ns_) / kSlice;
      if (claimed_.load(std::memory_order_relaxed) >= allowed) {
#if defined(__x86_64__)
        _mm_pause();
#endif
        continue;
      }
      const uint64_t i = claimed_.fetch_add(1, std::memory_order_relaxed) % slices_;
      copy_to_staging(dst_ + i * kSlice, src_ + i * kSlice, kSlice, method_);
      done_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  const std::byte* src_;
  std::byte* dst_;
  uint64_t slices_;
  FillMethod method_;
  double bytes_per_ns_;  // GB/s is bytes per ns
  Clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> claimed_{0};
  std::atomic<uint64_t> done_{0};
  double reached_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace

int contention_rows(const CommonOptions& common, const HandmadeBuffers& buffers,
                    const std::byte* pinned_source, const std::map<uint64_t, double>& ceilings,
                    Report& report) {
  // The load's threads: the largest count asked for, else 8 (enough to reach 1.3 x the link with
  // either method on a 16-core host; the pacing keeps the rate, whatever the count).
  unsigned threads = 8;
  if (!common.threads.empty() &&
      *std::max_element(common.threads.begin(), common.threads.end()) > 1)
    threads = *std::max_element(common.threads.begin(), common.threads.end());
  for (const auto& [bytes, ceiling] : ceilings) {
    if (bytes < 16 * MiB || bytes > buffers.max_bytes) continue;
    for (const FillMethod method : {FillMethod::Memcpy, FillMethod::Streaming}) {
      for (const double load : {0.5, 1.0, 1.3}) {
        LoadCrew crew(threads, buffers.pageable, buffers.staging, buffers.max_bytes, method,
                      load * ceiling);
        cudaError_t err = cudaSuccess;
        Row row = measure(common, "contention", bytes, [&] {
          const auto t0 = Clock::now();
          err = cudaMemcpyAsync(buffers.device, pinned_source, bytes, cudaMemcpyHostToDevice,
                                buffers.stream);
          if (err == cudaSuccess) err = cudaStreamSynchronize(buffers.stream);
          return seconds_since(t0);
        });
        const double reached = crew.stop();
        if (failed(err, "cudaMemcpyAsync (contention)")) return 1;
        row.fields["what"] = "the ceiling's copy while threads fill other pinned memory";
        row.fields["fill"] = std::string(to_string(resolve_fill_method(method)));
        row.fields["threads"] = threads;
        row.fields["load_x_ceiling"] = load;
        row.fields["load_gbps"] = reached;
        row.fields["ratio"] = row.gbps / ceiling;
        report.add(std::move(row));
      }
    }
  }
  return 0;
}

}  // namespace staging::bench::cuda_bench
