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

#include "bench_cuda.hpp"
#include "copy_crew.hpp"

namespace staging::bench::cuda_bench {

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
        CopyCrew::Options load_options;
        load_options.pace_gbps = load * ceiling;
        load_options.method = method;
        CopyCrew crew(threads, buffers.pageable, buffers.max_bytes, buffers.staging,
                      buffers.max_bytes, load_options);
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
