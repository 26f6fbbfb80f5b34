// staging-bench --backend cuda: the pieces shared by the single-device sections (bench_cuda.cpp)
// and the multi-device ones (bench_cuda_multi.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench.hpp"
#include "staging/core/fill_pool.hpp"

namespace staging::bench::cuda_bench {

using Clock = std::chrono::steady_clock;
constexpr uint64_t MiB = uint64_t{1} << 20;

/// Options of --backend cuda.
struct CudaOptions {
  std::vector<int> devices{0};
  uint64_t ring_mib = 64;  ///< per device
  uint64_t chunk_mib = 8;
  std::vector<std::string> fills{"auto", "memcpy", "streaming"};
  std::vector<std::string> pinnings{"node"};
  std::vector<uint64_t> chunk_sweep_mib{};
  unsigned warmup = 8;  ///< uploads before each ring row is measured (the planner's learning)
  bool inplace = true;
  unsigned inplace_runs = 5;
  std::string inplace_fill = "memcpy";
  std::vector<uint64_t> span_mib{0};
  std::vector<uint64_t> multi_sizes_mib{64, 1024};
  std::vector<std::string> sections{};  ///< empty: all that apply
};

/// True when `section` is to run (options.sections empty: every section).
bool wanted(const CudaOptions& o, const std::string& section);

/// Seconds since t0.
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// "memcpy" / "streaming" / "auto" as a FillMethod (false when unknown).
bool parse_fill(const std::string& s, FillMethod& out);
/// "none" / "node" / "core" as a ThreadPinning (false when unknown).
bool parse_pinning(const std::string& s, ThreadPinning& out);

/// Pageable memory, pre-touched with a pattern (every page exists before anything is timed).
std::byte* pretouched(uint64_t bytes, uint64_t seed);

/// Prints a CUDA failure and returns true when `err` is not cudaSuccess.
bool failed(cudaError_t err, const char* what);

/// One result, for the targets.
struct Result {
  std::string section;
  uint64_t bytes = 0;
  unsigned threads = 0;
  std::string fill;
  double gbps = 0;
  double ratio = 0;  ///< to the ceiling of the same size (and device set)
};

/// The single-device run's buffers, for the handmade rows.
struct HandmadeBuffers {
  const std::byte* pageable = nullptr;  ///< the source (max_bytes)
  std::byte* staging = nullptr;         ///< pinned, max_bytes
  std::byte* device = nullptr;          ///< device memory, max_bytes
  cudaStream_t stream = nullptr;
  uint64_t max_bytes = 0;
};

/// The `handmade` section (bench_cuda_handmade.cpp): a hand-written pipeline per fill method x
/// thread count (common.threads when it lists several, else 2-12) x piece size (256 KiB-4 MiB)
/// at every size, as rows with their ratio to `ceilings` (bytes -> GB/s), and a note per size
/// naming the best. Returns 0, or 1 on a CUDA failure.
int handmade_rows(const CommonOptions& common, const HandmadeBuffers& buffers,
                  const std::map<uint64_t, double>& ceilings, Report& report);

/// The `contention` section (bench_cuda_contention.cpp): for each size of 16 MiB or more in
/// `ceilings`, the ceiling's copy (one cudaMemcpyAsync of `pinned_source` to the device) while
/// load threads copy the pageable source into the staging buffer at 0.5, 1.0 and 1.3 x that
/// size's ceiling, per fill method: what the copies reach while a fill runs beside them. The
/// load's threads: the largest of common.threads, or 8 when it lists only 1. Returns 0, or 1 on a
/// CUDA failure.
int contention_rows(const CommonOptions& common, const HandmadeBuffers& buffers,
                    const std::byte* pinned_source, const std::map<uint64_t, double>& ceilings,
                    Report& report);
/// The `phases` section (bench_cuda_phases.cpp): for each size in `ceilings`, default uploads on
/// `device` through a DeviceApi that brackets each copy with timed events, as one row per size:
/// the time before the first copy, the copies' own time and rate, the gaps between them and the
/// tail after them (medians over the uploads). Returns 0, or 1 on a CUDA failure.
int phases_rows(const CommonOptions& common, const CudaOptions& cuda, int device,
                const HandmadeBuffers& buffers, const std::map<uint64_t, double>& ceilings,
                Report& report);
/// Runs the multi-device sections on options.devices (>= 2): each device alone, then all at
/// once, against the concurrent pinned ceiling. Returns the process status (0, or 1 on a failure).
int run_multi(const CommonOptions& common, const CudaOptions& cuda, Report& report,
              std::vector<Result>& results);

}  // namespace staging::bench::cuda_bench
