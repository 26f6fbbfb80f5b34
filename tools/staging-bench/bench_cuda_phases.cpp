// staging-bench --backend cuda, section `phases`: where the time of one default upload goes.
//
// The Uploader runs with its default configuration on the CUDA runtime, reached through a
// DeviceApi that brackets every copy it issues with two timed events. With one more event before
// the call and one after its return, each upload's time splits into
//
//   host:  call ─────── first copy queued ── ... ── last copy queued ── return ······ sync returns
//   GPU:   e0 ── first ──┤copy 1├─gap─┤copy 2├┤copy 3├ ... ┤copy n├─ after ─ e_end ── tail ──┘
//
//   first     GPU time from the call until the first copy started: the plan, the pool's wake-up
//             and the first piece's fill
//   copying   the copies' own time, summed; copy_x_ceiling compares the ring copies' rate with
//             the ceiling (the fill running beside them slows them); a direct part's copy (from
//             the pageable source, planned with few fill threads) is counted apart in direct_us
//   gaps      time between copies when none ran: the copy engine waited for a piece to be filled
//   after     from the last copy's end until e_end (recorded when upload() returned)
//   tail      host time beyond the GPU's span: the synchronize's wake-up and the event skew
//
// Per upload, total = first + copying + gaps + after + tail, and lost_us = total - ideal (the size
// at the ceiling's rate) = first + gaps + after + tail + (copying - ideal); the row shows each
// field's median, which need not add up. The events cost a little themselves (two records per
// copy on the calling thread), so a row's time sits slightly over the `default` row's of the same
// run (its GB/s under).
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "bench_cuda.hpp"
#include "staging/cuda/uploader.hpp"
#include "staging/detail/cuda/device_api.hpp"

namespace staging::bench::cuda_bench {
namespace {

using staging::cuda::DeviceApi;

// The runtime's DeviceApi with a timed event before and after each copy while armed. Threading:
// the copies of one upload come from its calling thread; arm(), copies() and disarm() are called
// by that thread between uploads.
class TimedApi final : public DeviceApi {
 public:
  struct Copy {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    Clock::time_point queued{};
    uint64_t bytes = 0;
    bool direct = false;  // a direct part's copy from the pageable source
  };

  explicit TimedApi(int device) : inner_(staging::cuda::make_runtime_api(device)) {}
  TimedApi(const TimedApi&) = delete;
  TimedApi& operator=(const TimedApi&) = delete;
  ~TimedApi() override {
    for (cudaEvent_t e : events_)
      cudaEventDestroy(e);
  }

  void arm() {
    copies_.clear();
    used_ = 0;
    armed_ = true;
  }
  void disarm() { armed_ = false; }
  [[nodiscard]] const std::vector<Copy>& copies() const { return copies_; }
  [[nodiscard]] cudaError_t error() const { return error_; }

  cudaError_t host_alloc(void** p, std::size_t b, unsigned f) noexcept override {
    return inner_->host_alloc(p, b, f);
  }
  cudaError_t host_free(void* p) noexcept override { return inner_->host_free(p); }
  cudaError_t event_create(cudaEvent_t* e) noexcept override { return inner_->event_create(e); }
  cudaError_t event_create_timed(cudaEvent_t* e) noexcept override {
    return inner_->event_create_timed(e);
  }
  cudaError_t event_elapsed(float* ms, cudaEvent_t a, cudaEvent_t b) noexcept override {
    return inner_->event_elapsed(ms, a, b);
  }
  cudaError_t event_destroy(cudaEvent_t e) noexcept override { return inner_->event_destroy(e); }
  cudaError_t event_record(cudaEvent_t e, cudaStream_t s) noexcept override {
    return inner_->event_record(e, s);
  }
  cudaError_t event_query(cudaEvent_t e) noexcept override { return inner_->event_query(e); }
  cudaError_t stream_wait_event(cudaStream_t s, cudaEvent_t e) noexcept override {
    return inner_->stream_wait_event(s, e);
  }
  cudaError_t stream_is_capturing(cudaStream_t s, bool* c) noexcept override {
    return inner_->stream_is_capturing(s, c);
  }
  cudaError_t copy_to_device_async(void* d, const void* s, std::size_t b,
                                   cudaStream_t st) noexcept override {
    return bracketed(st, b, false, [&] { return inner_->copy_to_device_async(d, s, b, st); });
  }
  cudaError_t copy_pageable_to_device_async(void* d, const void* s, std::size_t b,
                                            cudaStream_t st) noexcept override {
    return bracketed(st, b, true,
                     [&] { return inner_->copy_pageable_to_device_async(d, s, b, st); });
  }
  cudaError_t stream_query(cudaStream_t s) noexcept override { return inner_->stream_query(s); }
  cudaError_t host_numa_node(int* n) noexcept override { return inner_->host_numa_node(n); }
  cudaError_t address_range(const void* p, void** base, std::size_t* size) noexcept override {
    return inner_->address_range(p, base, size);
  }

 private:
  template <class F>
  cudaError_t bracketed(cudaStream_t stream, std::size_t bytes, bool direct, F&& copy) noexcept {
    if (!armed_) return copy();
    Copy c;
    c.bytes = bytes;
    c.direct = direct;
    c.start = next_event();
    c.end = next_event();
    if (c.start == nullptr || c.end == nullptr) return copy();  // error_ says why
    note(cudaEventRecord(c.start, stream));
    const cudaError_t err = copy();
    c.queued = Clock::now();
    note(cudaEventRecord(c.end, stream));
    copies_.push_back(c);
    return err;
  }
  cudaEvent_t next_event() noexcept {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      if (const cudaError_t err = cudaEventCreate(&e); err != cudaSuccess) {
        note(err);
        return nullptr;
      }
      events_.push_back(e);
    }
    return events_[used_++];
  }
  void note(cudaError_t err) noexcept {
    if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
  }

  std::unique_ptr<DeviceApi> inner_;
  std::vector<cudaEvent_t> events_;  // reused from upload to upload
  std::size_t used_ = 0;
  std::vector<Copy> copies_;
  bool armed_ = false;
  cudaError_t error_ = cudaSuccess;
};

// One upload's split, microseconds.
struct Split {
  double total = 0, call = 0, first = 0, first_queued = 0, copying = 0, gaps = 0, after = 0,
         tail = 0;
  double direct = 0;        // the direct part's copy (in copying too)
  double direct_bytes = 0;  // bytes
  double pieces = 0;
};

double us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

double median_of(std::vector<Split>& splits, double Split::*field) {
  std::vector<double> v;
  v.reserve(splits.size());
  for (const Split& s : splits)
    v.push_back(s.*field);
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One armed upload of `bytes`, split; nullopt when it or a CUDA call failed.
std::optional<Split> one_upload(staging::cuda::Uploader& uploader, TimedApi& api,
                                const HandmadeBuffers& buffers, uint64_t bytes, cudaEvent_t e0,
                                cudaEvent_t e_end) {
  api.arm();
  cudaEventRecord(e0, buffers.stream);
  const auto t0 = Clock::now();
  auto point = uploader.upload(buffers.device, buffers.pageable, bytes, buffers.stream);
  const auto returned = Clock::now();
  cudaEventRecord(e_end, buffers.stream);
  const cudaError_t sync = cudaStreamSynchronize(buffers.stream);
  const auto synced = Clock::now();
  api.disarm();
  if (!point || failed(sync, "cudaStreamSynchronize (phases)") ||
      failed(api.error(), "cudaEventRecord (phases)") || api.copies().empty()) {
    return std::nullopt;
  }
  const auto& copies = api.copies();
  cudaError_t timing = cudaSuccess;
  const auto us_between = [&](cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    if (const cudaError_t err = cudaEventElapsedTime(&ms, a, b); err != cudaSuccess) timing = err;
    return 1000.0 * ms;
  };
  Split s;
  s.total = us(synced - t0);
  s.call = us(returned - t0);
  s.first_queued = us(copies.front().queued - t0);
  s.first = us_between(e0, copies.front().start);
  for (std::size_t k = 0; k < copies.size(); ++k) {
    const double took = us_between(copies[k].start, copies[k].end);
    s.copying += took;
    if (copies[k].direct) {
      s.direct += took;
      s.direct_bytes += static_cast<double>(copies[k].bytes);
    }
    if (k + 1 < copies.size()) s.gaps += us_between(copies[k].end, copies[k + 1].start);
  }
  s.after = us_between(copies.back().end, e_end);
  s.tail = s.total - us_between(e0, e_end);
  s.pieces = static_cast<double>(copies.size());
  if (failed(timing, "cudaEventElapsedTime (phases)")) return std::nullopt;
  return s;
}

// The row of one size: the medians of its uploads' splits.
Row phases_row(std::vector<Split>& splits, uint64_t bytes, double ceiling) {
  Row row;
  row.section = "phases";
  row.bytes = bytes;
  row.reps = static_cast<unsigned>(splits.size());
  const double total = median_of(splits, &Split::total);
  double best = total;
  for (const Split& s : splits)
    best = std::min(best, s.total);
  row.gbps = static_cast<double>(bytes) / total / 1e3;
  row.gbps_best = static_cast<double>(bytes) / best / 1e3;
  const double ideal = static_cast<double>(bytes) / ceiling / 1e3;
  const double ring_copying =
      median_of(splits, &Split::copying) - median_of(splits, &Split::direct);
  const double ring_ideal =
      (static_cast<double>(bytes) - median_of(splits, &Split::direct_bytes)) / ceiling / 1e3;
  row.fields["what"] = "the default Uploader, an event before and after each copy";
  row.fields["ratio"] = row.gbps / ceiling;
  row.fields["pieces"] = median_of(splits, &Split::pieces);
  row.fields["ideal_us"] = ideal;
  row.fields["lost_us"] = total - ideal;
  row.fields["call_us"] = median_of(splits, &Split::call);
  row.fields["first_queued_us"] = median_of(splits, &Split::first_queued);
  row.fields["first_us"] = median_of(splits, &Split::first);
  row.fields["copying_us"] = median_of(splits, &Split::copying);
  row.fields["copy_x_ceiling"] = ring_copying > 0 ? ring_ideal / ring_copying : 0;
  row.fields["direct_us"] = median_of(splits, &Split::direct);
  row.fields["direct_share"] = median_of(splits, &Split::direct_bytes) / static_cast<double>(bytes);
  row.fields["gaps_us"] = median_of(splits, &Split::gaps);
  row.fields["after_us"] = median_of(splits, &Split::after);
  row.fields["tail_us"] = median_of(splits, &Split::tail);
  return row;
}

}  // namespace

int phases_rows(const CommonOptions& common, const CudaOptions& cuda, int device,
                const HandmadeBuffers& buffers, const std::map<uint64_t, double>& ceilings,
                Report& report) {
  TimedApi api(device);
  staging::cuda::UploaderConfig config;
  config.ring_bytes = cuda.ring_mib * MiB;
  config.chunk_bytes = cuda.chunk_mib * MiB;
  config.wait_timeout = std::chrono::seconds(10);
  auto uploader = staging::cuda::detail::create_uploader(config, api);
  if (!uploader) {
    std::fprintf(stderr, "staging-bench: Uploader::create (phases): %s\n",
                 std::string(to_string(uploader.error())).c_str());
    return 1;
  }
  cudaEvent_t e0 = nullptr;
  cudaEvent_t e_end = nullptr;
  if (failed(cudaEventCreate(&e0), "cudaEventCreate")) return 1;
  if (failed(cudaEventCreate(&e_end), "cudaEventCreate")) {
    cudaEventDestroy(e0);
    return 1;
  }
  int rc = 0;
  for (const auto& [bytes, ceiling] : ceilings) {
    if (bytes > buffers.max_bytes) continue;
    // The planner learns on unarmed uploads first, as the `default` rows' warm-up does; one armed
    // upload then grows the event pool to this size's number of copies.
    for (unsigned i = 0; i <= cuda.warmup; ++i) {
      if (i == cuda.warmup) api.arm();
      if (!uploader->upload(buffers.device, buffers.pageable, bytes, buffers.stream)) rc = 1;
      cudaStreamSynchronize(buffers.stream);
      api.disarm();
    }
    std::vector<Split> splits;
    double spent = 0;
    while (rc == 0 && splits.size() < common.max_reps &&
           (splits.size() < std::max(5u, common.min_reps) || spent < common.min_seconds)) {
      const std::optional<Split> s = one_upload(*uploader, api, buffers, bytes, e0, e_end);
      if (!s) {
        rc = 1;
        break;
      }
      spent += s->total / 1e6;
      splits.push_back(*s);
    }
    if (rc != 0) {
      std::fprintf(stderr, "staging-bench: phases: an upload of %llu bytes failed\n",
                   static_cast<unsigned long long>(bytes));
      break;
    }
    report.add(phases_row(splits, bytes, ceiling));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e_end);
  return rc;
}

}  // namespace staging::bench::cuda_bench
