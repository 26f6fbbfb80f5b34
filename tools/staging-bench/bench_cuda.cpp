// staging-bench --backend cuda: pageable-to-device uploads through staging::cuda::Uploader beside
// what users do instead, all measured in the same run on the same device buffer.
//
// Sections (GB/s = bytes / host wall time from the call until the stream has finished, median
// over repetitions after a warm-up; the source is malloc'd pageable memory, pre-touched and
// reused):
//   fill       CPU only: a FillPool of N threads (and the caller) copying into a pinned ring, per
//              method: the fill rate that bounds the ring
//   copy       back-to-back cudaMemcpyAsync from pinned memory per piece size, and the fit
//              time = size / link rate + overhead: the copy model's two numbers
//   calls      what one call of each CUDA function the Uploader makes per upload costs the
//              calling thread (event record and query, capture check, stream query, an async copy),
//              called directly and through the Uploader's DeviceApi (device made current around
//              each call; the destination check)
//   ceiling    cudaMemcpyAsync from pinned memory, one call per size (the reference)
//   pageable   cudaMemcpy from the pageable source
//   register   cudaHostRegister of the source, cudaMemcpyAsync, cudaHostUnregister (all timed)
//   pin1       one thread copies the source into a pinned buffer (cached, as PyTorch's pinned
//              allocator keeps it), then cudaMemcpyAsync: tensor.pin_memory().to(dev, non_blocking)
//   default    Uploader with the default configuration (what a user gets without choosing)
//   tuned      the same with the copy model measured in `copy`
//   ring       Uploader per fill method x fill thread count (x thread pinning)
//   chunk      the largest size per chunk (largest piece) size, if --chunk-sweep is given
//   inplace    N producers reserving spans, filling them, committing on their own streams;
//              inplace-team: one producer whose spans a FillPool of N threads fills
//   handmade   (only when named in --sections) a hand-written pipeline at its best: spinning
//              threads fill slices, the caller copies each piece once filled
//              (bench_cuda_handmade.cpp): what bounds any pipeline of pieces on this host
//   contention (only when named) the ceiling's copy while threads fill other pinned memory
//              (bench_cuda_contention.cpp)
//   phases     (only when named) default uploads with a timed event around each copy: the time
//              before the first copy, the copies' own rate, the gaps between them and the tail
//              (bench_cuda_phases.cpp): where an upload's time goes
//   multi-*    with --devices listing several: each device alone, then all at once
// Then TARGET lines: each issue target met or missed, with the ratio that decides it.
#include "bench_cuda.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "staging/cuda/uploader.hpp"
#include "staging/detail/core/fill_engine.hpp"
#include "staging/detail/cuda/device_api.hpp"

namespace staging::bench {
namespace cuda_bench {

using namespace staging::cuda;

bool wanted(const CudaOptions& o, const std::string& section) {
  return o.sections.empty() ||
         std::find(o.sections.begin(), o.sections.end(), section) != o.sections.end();
}

bool parse_fill(const std::string& s, FillMethod& out) {
  if (s == "auto")
    out = FillMethod::Auto;
  else if (s == "memcpy")
    out = FillMethod::Memcpy;
  else if (s == "streaming")
    out = FillMethod::Streaming;
  else
    return false;
  return true;
}

bool parse_pinning(const std::string& s, ThreadPinning& out) {
  if (s == "none")
    out = ThreadPinning::None;
  else if (s == "node")
    out = ThreadPinning::Node;
  else if (s == "core")
    out = ThreadPinning::Core;
  else
    return false;
  return true;
}

std::byte* pretouched(uint64_t bytes, uint64_t seed) {
  auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
  if (p == nullptr) return nullptr;
  for (uint64_t i = 0; i < bytes; i += 8) {
    const uint64_t v = (i * 0x9E3779B97F4A7C15ull) ^ seed;
    std::memcpy(p + i, &v, std::min<uint64_t>(8, bytes - i));
  }
  return p;
}

bool failed(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return false;
  std::fprintf(stderr, "staging-bench: %s failed: %s\n", what, cudaGetErrorName(err));
  return true;
}

namespace {

// Ratio of the default configuration to the ceiling each size must reach.
double default_target(uint64_t bytes) {
  if (bytes < 4 * MiB) return 0.6;
  if (bytes < 256 * MiB) return 0.8;
  return 0.95;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class SingleDevice {
 public:
  SingleDevice(const CommonOptions& common, const CudaOptions& cuda, Report& report,
               std::vector<Result>& results)
      : common_(common), cuda_(cuda), report_(report), results_(results) {}
  ~SingleDevice() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (device_ != nullptr) cudaFree(device_);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
    if (staging_ != nullptr) cudaFreeHost(staging_);
    std::free(pageable_);
  }
  SingleDevice(const SingleDevice&) = delete;
  SingleDevice& operator=(const SingleDevice&) = delete;

  int run() {
    device_index_ = cuda_.devices.front();
    if (failed(cudaSetDevice(device_index_), "cudaSetDevice")) return 1;
    if (int rc = allocate(); rc != 0) return rc;
    if (wanted(cuda_, "fill")) fill_rows();
    if (wanted(cuda_, "copy") && copy_rows() != 0) return 1;
    if (wanted(cuda_, "calls") && call_costs() != 0) return 1;
    if (baselines() != 0) return 1;
    const UploaderConfig base;
    if (wanted(cuda_, "default") && ring_rows("default", base, base.fill_threads) != 0) return 1;
    if (wanted(cuda_, "tuned") && link_gbps_ > 0) {
      UploaderConfig tuned;
      tuned.link_gbps = link_gbps_;
      tuned.copy_overhead = std::chrono::nanoseconds(static_cast<int64_t>(overhead_us_ * 1000));
      if (ring_rows("tuned", tuned, tuned.fill_threads) != 0) return 1;
    }
    if (wanted(cuda_, "ring") && ring_curve() != 0) return 1;
    if (wanted(cuda_, "chunk") && chunk_sweep() != 0) return 1;
    if (cuda_.inplace && wanted(cuda_, "inplace") && inplace_curve() != 0) return 1;
    // Only when named: the handmade sweep takes about a minute, the others tens of seconds.
    const auto named = [&](const char* section) {
      return std::find(cuda_.sections.begin(), cuda_.sections.end(), section) !=
             cuda_.sections.end();
    };
    const HandmadeBuffers buffers{pageable_, staging_, device_, stream_, max_bytes_};
    if (named("handmade") && handmade_rows(common_, buffers, ceiling_, report_) != 0) return 1;
    if (named("contention") && contention_rows(common_, buffers, pinned_, ceiling_, report_) != 0) {
      return 1;
    }
    if (named("phases") &&
        phases_rows(common_, cuda_, device_index_, buffers, ceiling_, report_) != 0) {
      return 1;
    }
    targets();
    return failures_ == 0 ? 0 : 1;
  }

 private:
  int allocate() {
    for (uint64_t s : common_.sizes_mib)
      max_bytes_ = std::max(max_bytes_, s * MiB);
    if (max_bytes_ == 0) {
      std::fprintf(stderr, "staging-bench: no sizes\n");
      return 1;
    }
    pageable_ = pretouched(max_bytes_, 0xA5A5A5A5A5A5A5A5ull);
    if (pageable_ == nullptr) return 1;
    const auto t0 = Clock::now();
    if (failed(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), max_bytes_, 0), "cudaHostAlloc")) {
      return 1;
    }
    report_.context("ceiling_pinning_seconds", seconds_since(t0));
    std::memcpy(pinned_, pageable_, max_bytes_);
    if (failed(cudaHostAlloc(reinterpret_cast<void**>(&staging_), max_bytes_, 0),
               "cudaHostAlloc")) {
      return 1;
    }
    std::memset(staging_, 1, max_bytes_);
    if (failed(cudaMalloc(reinterpret_cast<void**>(&device_), max_bytes_), "cudaMalloc")) return 1;
    if (failed(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate")) {
      return 1;
    }
    return 0;
  }

  // --- what bounds the ring: CPU fill rate, and the copy engine's rate and overhead -----------

  void fill_rows() {
    // A ring-sized window of the pinned buffer (smaller when the largest size is), cycled.
    const uint64_t ring = std::min(cuda_.ring_mib * MiB, max_bytes_);
    const uint64_t piece = std::min(cuda_.chunk_mib * MiB, ring);
    const uint64_t total = std::max<uint64_t>(4 * ring, std::min<uint64_t>(max_bytes_, 256 * MiB));
    for (FillMethod method : {FillMethod::Memcpy, FillMethod::Streaming}) {
      for (unsigned t : common_.threads) {
        FillPoolConfig pc;
        pc.threads = t;
        auto pool = FillPool::create(pc);
        if (!pool) continue;
        std::vector<staging::detail::FillJob> jobs(ring / piece);
        std::vector<staging::detail::FillJob*> batch;
        Row row = measure(common_, "fill", total, [&] {
          const auto t0 = Clock::now();
          uint64_t src_off = 0;
          for (uint64_t done = 0; done < total;) {
            batch.clear();
            for (uint64_t k = 0; k < jobs.size() && done < total; ++k, done += piece) {
              jobs[k].dst = staging_ + k * piece;
              jobs[k].src = pageable_ + src_off;
              jobs[k].bytes = piece;
              jobs[k].method = method;
              src_off = src_off + 2 * piece > max_bytes_ ? 0 : src_off + piece;
              batch.push_back(&jobs[k]);
            }
            staging::detail::engine_of(**pool).submit(batch);
            for (staging::detail::FillJob* j : batch)
              staging::detail::engine_of(**pool).wait(*j);
          }
          return seconds_since(t0);
        });
        row.fields["threads"] = t;
        row.fields["fill"] = std::string(to_string(resolve_fill_method(method)));
        row.fields["what"] = "CPU only: pool threads + caller into a pinned ring";
        report_.add(std::move(row));
      }
    }
  }

  int copy_rows() {
    std::vector<std::pair<double, double>> points;  // (bytes, seconds per copy)
    for (uint64_t kib : {64, 256, 1024, 4096, 16384}) {
      const uint64_t size = kib * 1024;
      if (size > max_bytes_) break;
      const uint64_t count = std::max<uint64_t>(8, std::min<uint64_t>(256, (64 * MiB) / size));
      cudaError_t err = cudaSuccess;
      Row row = measure(common_, "copy", size * count, [&] {
        const auto t0 = Clock::now();
        for (uint64_t k = 0; k < count && err == cudaSuccess; ++k) {
          const uint64_t off = (k * size) % (max_bytes_ - size + 1);
          err =
              cudaMemcpyAsync(device_ + off, pinned_ + off, size, cudaMemcpyHostToDevice, stream_);
        }
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
        return seconds_since(t0);
      });
      if (failed(err, "cudaMemcpyAsync (copy rows)")) return 1;
      row.fields["piece_kib"] = kib;
      row.fields["copies"] = count;
      row.fields["what"] = "back-to-back cudaMemcpyAsync from pinned";
      points.emplace_back(static_cast<double>(size),
                          static_cast<double>(size * count) / (row.gbps * 1e9) / count);
      report_.add(std::move(row));
    }
    if (points.size() < 2) return 0;
    // Least squares: seconds per copy = bytes / rate + overhead.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : points) {
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double n = static_cast<double>(points.size());
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    const double intercept = (sy - slope * sx) / n;
    link_gbps_ = slope > 0 ? 1 / slope / 1e9 : 0;
    overhead_us_ = std::max(0.0, intercept * 1e6);
    const UploaderConfig defaults;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "copy model measured: %.1f GB/s + %.2f us per copy (the Uploader's defaults: "
                  "%.1f GB/s + %.2f us; the 'tuned' rows use the measured values)",
                  link_gbps_, overhead_us_, defaults.link_gbps,
                  static_cast<double>(defaults.copy_overhead.count()) / 1000);
    report_.note(buf);
    report_.context("link_gbps_measured", link_gbps_);
    report_.context("copy_overhead_us_measured", overhead_us_);
    return 0;
  }

  // The calling thread's cost of `call`, ns per call: the median of 9 batches of 200 calls (the
  // stream synchronized after each batch when `sync`). The first failure is kept in `err`.
  double per_call_ns(const std::function<cudaError_t()>& call, bool sync, cudaError_t& err) {
    constexpr int kCalls = 200;
    std::vector<double> batches;
    for (int b = 0; b < 9 && err == cudaSuccess; ++b) {
      const auto t0 = Clock::now();
      for (int i = 0; i < kCalls; ++i) {
        const cudaError_t e = call();
        if (e != cudaSuccess && e != cudaErrorNotReady) err = e;
      }
      batches.push_back(seconds_since(t0) * 1e9 / kCalls);
      if (sync) err = cudaStreamSynchronize(stream_);
    }
    return median(batches);
  }

  // The calling thread's cost of each CUDA call an upload makes, ns per call.
  int call_costs() {
    cudaEvent_t event = nullptr;
    if (failed(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate")) {
      return 1;
    }
    cudaError_t err = cudaSuccess;
    const double record = per_call_ns([&] { return cudaEventRecord(event, stream_); }, true, err);
    const double query = per_call_ns([&] { return cudaEventQuery(event); }, false, err);
    const double capture = per_call_ns(
        [&] {
          cudaStreamCaptureStatus status{};
          return cudaStreamIsCapturing(stream_, &status);
        },
        false, err);
    const double stream_query = per_call_ns([&] { return cudaStreamQuery(stream_); }, false, err);
    const double copy = per_call_ns(
        [&] { return cudaMemcpyAsync(device_, pinned_, 4096, cudaMemcpyHostToDevice, stream_); },
        true, err);
    if (err == cudaSuccess) api_call_costs(event, err);
    cudaEventDestroy(event);
    if (failed(err, "a call of the calls section")) return 1;
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "calls, ns each on the calling thread: cudaEventRecord %.0f, cudaEventQuery %.0f, "
        "cudaStreamIsCapturing %.0f, cudaStreamQuery %.0f, cudaMemcpyAsync 4 KiB %.0f",
        record, query, capture, stream_query, copy);
    report_.note(buf);
    report_.context("call_ns_event_record", record);
    report_.context("call_ns_event_query", query);
    report_.context("call_ns_stream_is_capturing", capture);
    report_.context("call_ns_stream_query", stream_query);
    report_.context("call_ns_memcpy_async", copy);
    return 0;
  }

  // The same calls as the Uploader makes them: through its DeviceApi, which makes the device
  // current around each, plus the destination check (cuMemGetAddressRange).
  void api_call_costs(cudaEvent_t event, cudaError_t& err) {
    const std::unique_ptr<DeviceApi> api = make_runtime_api(device_index_);
    const double record = per_call_ns([&] { return api->event_record(event, stream_); }, true, err);
    const double capture = per_call_ns(
        [&] {
          bool capturing = false;
          return api->stream_is_capturing(stream_, &capturing);
        },
        false, err);
    const double range = per_call_ns(
        [&] {
          void* base = nullptr;
          std::size_t size = 0;
          const cudaError_t e = api->address_range(device_, &base, &size);
          return e == cudaErrorNotSupported ? cudaSuccess : e;
        },
        false, err);
    const double copy = per_call_ns(
        [&] { return api->copy_to_device_async(device_, pinned_, 4096, stream_); }, true, err);
    if (err != cudaSuccess) return;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "calls through the Uploader's DeviceApi (the device made current around each), "
                  "ns each: event record %.0f, capture check %.0f, destination check "
                  "(cuMemGetAddressRange) %.0f, async copy 4 KiB %.0f",
                  record, capture, range, copy);
    report_.note(buf);
    report_.context("call_ns_api_event_record", record);
    report_.context("call_ns_api_stream_is_capturing", capture);
    report_.context("call_ns_api_address_range", range);
    report_.context("call_ns_api_memcpy_async", copy);
  }

  // --- what users do instead --------------------------------------------------------------------

  int baselines() {
    for (uint64_t mib : common_.sizes_mib) {
      const uint64_t bytes = mib * MiB;
      cudaError_t err = cudaSuccess;
      Row ceiling = measure(common_, "ceiling", bytes, [&] {
        const auto t0 = Clock::now();
        err = cudaMemcpyAsync(device_, pinned_, bytes, cudaMemcpyHostToDevice, stream_);
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
        return seconds_since(t0);
      });
      if (failed(err, "cudaMemcpyAsync (ceiling)")) return 1;
      ceiling.fields["what"] = "cudaMemcpyAsync from pinned";
      ceiling_[bytes] = ceiling.gbps;
      report_.add(std::move(ceiling));
      if (!wanted(cuda_, "baselines") && !wanted(cuda_, "pageable")) continue;

      Row pageable = measure(common_, "pageable", bytes, [&] {
        const auto t0 = Clock::now();
        err = cudaMemcpy(device_, pageable_, bytes, cudaMemcpyHostToDevice);
        return seconds_since(t0);
      });
      if (failed(err, "cudaMemcpy (pageable)")) return 1;
      pageable_gbps_[bytes] = pageable.gbps;
      add_baseline(std::move(pageable), "cudaMemcpy from pageable");

      Row reg = measure(common_, "register", bytes, [&] {
        const auto t0 = Clock::now();
        err = cudaHostRegister(pageable_, bytes, cudaHostRegisterDefault);
        if (err == cudaSuccess) {
          err = cudaMemcpyAsync(device_, pageable_, bytes, cudaMemcpyHostToDevice, stream_);
          if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
          const cudaError_t un = cudaHostUnregister(pageable_);
          if (err == cudaSuccess) err = un;
        }
        return seconds_since(t0);
      });
      if (failed(err, "cudaHostRegister path")) return 1;
      add_baseline(std::move(reg), "cudaHostRegister + cudaMemcpyAsync + unregister");

      Row pin1 = measure(common_, "pin1", bytes, [&] {
        const auto t0 = Clock::now();
        std::memcpy(staging_, pageable_, bytes);
        err = cudaMemcpyAsync(device_, staging_, bytes, cudaMemcpyHostToDevice, stream_);
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
        return seconds_since(t0);
      });
      if (failed(err, "pin1 path")) return 1;
      add_baseline(std::move(pin1), "one thread copies into cached pinned memory, then copies");
    }
    return 0;
  }

  void add_baseline(Row row, const char* what) {
    row.fields["what"] = what;
    row.fields["ratio"] = row.gbps / ceiling_[row.bytes];
    if (pageable_gbps_.count(row.bytes) != 0) {
      row.fields["x_pageable"] = row.gbps / pageable_gbps_[row.bytes];
    }
    results_.push_back({row.section, row.bytes, 1, "", row.gbps, row.gbps / ceiling_[row.bytes]});
    report_.add(std::move(row));
  }

  // --- the Uploader
  // -------------------------------------------------------------------------------

  // The fill a row reports: the method the uploads used (auto: the one most used), or "(direct)"
  // appended when every upload went straight from the source.
  static std::string fill_label(FillMethod method, uint64_t memcpy_n, uint64_t streaming_n) {
    std::string fill(to_string(method));
    if (memcpy_n + streaming_n == 0) {
      fill += "(direct)";  // every upload went straight from the source
    } else if (method == FillMethod::Auto) {
      fill = std::string("auto(") + (memcpy_n >= streaming_n ? "memcpy" : "streaming") + ")";
    } else {
      fill = std::string(to_string(resolve_fill_method(method)));
    }
    return fill;
  }

  // The fill pool's share of the row: bytes the caller helped fill, threads woken per upload.
  static void add_pool_fields(Row& row, const UploaderStats& before, const UploaderStats& after,
                              double uploads) {
    row.fields["helped"] =
        static_cast<double>(after.pool.helped_bytes - before.pool.helped_bytes) /
        std::max<double>(1, static_cast<double>(after.pool.bytes - before.pool.bytes));
    // Threads woken per upload (0: the pool stayed awake between uploads), and what a wake-up
    // took on average (µs) over the row.
    row.fields["wakeups"] = static_cast<double>(after.pool.wakeups - before.pool.wakeups) / uploads;
    const uint64_t woken = after.pool.wake_samples - before.pool.wake_samples;
    row.fields["wake_us"] =
        woken == 0 ? 0.0
                   : static_cast<double>(after.pool.wake_ns - before.pool.wake_ns) / woken / 1e3;
  }

  // Rows of `config` (device and timeouts set here) at every size (or only `only`), each after
  // --warmup uploads of that size. `label_threads`: the thread count the rows report.
  int ring_rows(const std::string& section, UploaderConfig config, unsigned label_threads,
                std::optional<uint64_t> only = std::nullopt) {
    config.device = device_index_;
    config.ring_bytes = cuda_.ring_mib * MiB;
    config.chunk_bytes = section == "chunk" ? config.chunk_bytes : cuda_.chunk_mib * MiB;
    config.wait_timeout = std::chrono::seconds(10);
    auto uploader = Uploader::create(config);
    if (!uploader) {
      std::fprintf(stderr, "staging-bench: Uploader::create: %s\n",
                   std::string(to_string(uploader.error())).c_str());
      return 1;
    }
    if (label_threads == 0) label_threads = uploader->config().fill_threads;  // the automatic count
    for (uint64_t mib : common_.sizes_mib) {
      const uint64_t bytes = mib * MiB;
      if (only && bytes != *only) continue;
      std::optional<UploadFailure> failure;
      const auto once = [&] {
        const auto t0 = Clock::now();
        auto p = uploader->upload(device_, pageable_, bytes, stream_);
        if (!p) failure = p.error();
        cudaStreamSynchronize(stream_);
        return seconds_since(t0);
      };
      for (unsigned i = 0; i < cuda_.warmup; ++i)
        once();
      const UploaderStats before = uploader->stats();
      Row row = measure(common_, section, bytes, once);
      const UploaderStats after = uploader->stats();
      if (failure) {
        std::fprintf(stderr, "staging-bench: upload failed: %s (%s)\n",
                     std::string(to_string(failure->kind)).c_str(),
                     std::string(error_name(failure->cuda)).c_str());
        ++failures_;
        return 1;
      }
      const double uploads = static_cast<double>(after.uploads - before.uploads);
      const uint64_t memcpy_n = after.memcpy_uploads - before.memcpy_uploads;
      const uint64_t streaming_n = after.streaming_uploads - before.streaming_uploads;
      const std::string fill = fill_label(config.fill, memcpy_n, streaming_n);
      row.fields["threads"] = label_threads;
      row.fields["fill"] = fill;
      row.fields["pinning"] = std::string(to_string(config.fill_pinning));
      row.fields["ratio"] = row.gbps / ceiling_[bytes];
      if (pageable_gbps_.count(bytes) != 0) {
        row.fields["x_pageable"] = row.gbps / pageable_gbps_[bytes];
      }
      row.fields["pieces"] = static_cast<double>(after.copies - before.copies) / uploads;
      row.fields["timed"] =
          static_cast<double>(after.timed_uploads - before.timed_uploads) / uploads;
      row.fields["direct_share"] = static_cast<double>(after.direct_bytes - before.direct_bytes) /
                                   (uploads * static_cast<double>(bytes));
      row.fields["fill_gbps_per_thread"] = memcpy_n >= streaming_n
                                               ? after.fill_gbps_per_thread_memcpy
                                               : after.fill_gbps_per_thread_streaming;
      add_pool_fields(row, before, after, uploads);
      if (section == "chunk")
        row.fields["chunk_mib"] = static_cast<double>(config.chunk_bytes) / MiB;
      results_.push_back(
          {section, bytes, label_threads, fill, row.gbps, row.gbps / ceiling_[bytes]});
      report_.add(std::move(row));
    }
    record_pinned(uploader->stats());
    return 0;
  }

  int ring_curve() {
    for (const std::string& f : cuda_.fills) {
      FillMethod fill;
      if (!parse_fill(f, fill)) {
        std::fprintf(stderr, "staging-bench: unknown fill method '%s'\n", f.c_str());
        return 1;
      }
      for (const std::string& pin : cuda_.pinnings) {
        ThreadPinning pinning;
        if (!parse_pinning(pin, pinning)) {
          std::fprintf(stderr, "staging-bench: unknown pinning '%s'\n", pin.c_str());
          return 1;
        }
        for (unsigned t : common_.threads) {
          UploaderConfig c;
          c.fill_threads = std::max(1u, t);
          c.fill = fill;
          c.fill_pinning = pinning;
          if (ring_rows("ring", c, c.fill_threads) != 0) return 1;
        }
      }
    }
    return 0;
  }

  int chunk_sweep() {
    for (uint64_t c : cuda_.chunk_sweep_mib) {
      if (c * MiB > cuda_.ring_mib * MiB) continue;
      UploaderConfig config;
      config.chunk_bytes = c * MiB;
      if (ring_rows("chunk", config, config.fill_threads, max_bytes_) != 0) return 1;
    }
    return 0;
  }

  // --- in-place producers ---------------------------------------------------------------------

  // Where in-place producers spend their time, summed over spans (ns).
  struct SpanTimes {
    std::atomic<uint64_t> spans{0}, reserve_ns{0}, fill_ns{0}, commit_ns{0};
    void add(Clock::time_point t0, Clock::time_point reserved, Clock::time_point filled,
             Clock::time_point committed) {
      const auto ns = [](Clock::duration d) {
        return static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
      };
      spans.fetch_add(1, std::memory_order_relaxed);
      reserve_ns.fetch_add(ns(reserved - t0), std::memory_order_relaxed);
      fill_ns.fetch_add(ns(filled - reserved), std::memory_order_relaxed);
      commit_ns.fetch_add(ns(committed - filled), std::memory_order_relaxed);
    }
  };

  // Runs `one` (a measure()) --inplace-runs times; the row is the median of the runs' medians,
  // with the mean time per span spent reserving (waiting for the ring lock and room), filling and
  // committing (the copy and the event record) over all runs.
  void inplace_row(const std::string& section, unsigned threads, uint64_t span,
                   const std::function<Row()>& one, const std::string& fill,
                   const SpanTimes& times) {
    std::vector<double> runs;
    Row last;
    for (unsigned r = 0; r < std::max(1u, cuda_.inplace_runs); ++r) {
      last = one();
      runs.push_back(last.gbps);
    }
    last.gbps = median(runs);
    const double spans = std::max<double>(1, static_cast<double>(times.spans.load()));
    last.fields["reserve_us"] = static_cast<double>(times.reserve_ns.load()) / spans / 1e3;
    last.fields["fill_us"] = static_cast<double>(times.fill_ns.load()) / spans / 1e3;
    last.fields["commit_us"] = static_cast<double>(times.commit_ns.load()) / spans / 1e3;
    last.fields["threads"] = threads;
    last.fields["fill"] = fill;
    last.fields["span_mib"] = static_cast<double>(span) / MiB;
    last.fields["runs"] = runs;
    last.fields["runs_min"] = *std::min_element(runs.begin(), runs.end());
    last.fields["runs_max"] = *std::max_element(runs.begin(), runs.end());
    last.fields["ratio"] = last.gbps / ceiling_[last.bytes];
    results_.push_back(
        {section, last.bytes, threads, fill, last.gbps, last.gbps / ceiling_[last.bytes]});
    report_.add(std::move(last));
  }

  // The in-place rows: N producers, each on its own stream, taking the next span of the source as
  // they go. False when a stream cannot be made.
  bool producer_rows(Uploader& uploader, const UploaderConfig& c, FillMethod fill,
                     const std::string& label, std::atomic<int>& errors) {
    const uint64_t bytes = max_bytes_;
    UploadOptions wait;
    wait.policy = staging::ExhaustionPolicy::Wait;
    for (unsigned producers : common_.threads) {
      producers = std::max(1u, producers);
      std::vector<cudaStream_t> streams(producers);
      for (auto& s : streams)
        if (failed(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"))
          return false;
      for (uint64_t span_mib : cuda_.span_mib) {
        // Small enough that every producer holds one span while as much again is copying (an
        // open span holds back the reuse of every later byte of the ring), large enough that the
        // copy's fixed cost stays small (2 MiB at 16 producers).
        const uint64_t span = span_mib != 0 ? span_mib * MiB
                                            : std::clamp<uint64_t>(c.ring_bytes / (2 * producers),
                                                                   MiB, c.chunk_bytes);
        SpanTimes times;
        inplace_row(
            "inplace", producers, span,
            [&] {
              return measure(common_, "inplace", bytes, [&] {
                std::atomic<uint64_t> cursor{0};
                const auto t0 = Clock::now();
                std::vector<std::thread> threads;
                for (unsigned p = 0; p < producers; ++p) {
                  threads.emplace_back([&, p] {
                    cudaSetDevice(device_index_);
                    for (;;) {
                      const uint64_t off = cursor.fetch_add(span);
                      if (off >= bytes) break;
                      const uint64_t n = std::min(span, bytes - off);
                      const auto r0 = Clock::now();
                      auto s = uploader.reserve(n, wait);
                      if (!s) {
                        ++errors;
                        return;
                      }
                      const auto r1 = Clock::now();
                      copy_to_staging(s->data(), pageable_ + off, n, fill);
                      const auto r2 = Clock::now();
                      if (!uploader.commit(std::move(*s), device_ + off, streams[p])) ++errors;
                      times.add(r0, r1, r2, Clock::now());
                    }
                    cudaStreamSynchronize(streams[p]);
                  });
                }
                for (auto& t : threads)
                  t.join();
                return seconds_since(t0);
              });
            },
            label, times);
      }
      for (auto& s : streams)
        cudaStreamDestroy(s);
    }
    return true;
  }

  // The in-place-team rows: one producer; a FillPool of N threads (and the producer) fills each
  // span. The producer holds the pool while it streams: its threads keep looking for the next
  // span while the producer waits for ring room, instead of falling asleep between spans. False
  // when a pool cannot be made.
  bool team_rows(Uploader& uploader, const UploaderConfig& c, FillMethod fill,
                 const std::string& label, std::atomic<int>& errors) {
    const uint64_t bytes = max_bytes_;
    UploadOptions wait;
    wait.policy = staging::ExhaustionPolicy::Wait;
    for (unsigned team : common_.threads) {
      FillPoolConfig pc;
      pc.threads = team > 0 ? team - 1 : 0;
      auto pool = FillPool::create(pc);
      if (!pool) return false;
      const uint64_t span = c.chunk_bytes;
      SpanTimes times;
      inplace_row(
          "inplace-team", std::max(1u, team), span,
          [&] {
            return measure(common_, "inplace-team", bytes, [&] {
              const staging::detail::FillEngine::Hold hold =
                  staging::detail::engine_of(**pool).hold();
              const auto t0 = Clock::now();
              for (uint64_t off = 0; off < bytes; off += span) {
                const uint64_t n = std::min(span, bytes - off);
                const auto r0 = Clock::now();
                auto s = uploader.reserve(n, wait);
                if (!s) {
                  ++errors;
                  break;
                }
                const auto r1 = Clock::now();
                staging::detail::FillJob job;
                job.dst = s->data();
                job.src = pageable_ + off;
                job.bytes = n;
                job.method = fill;
                staging::detail::engine_of(**pool).submit(job);
                staging::detail::engine_of(**pool).wait(job);
                const auto r2 = Clock::now();
                if (!uploader.commit(std::move(*s), device_ + off, stream_)) ++errors;
                times.add(r0, r1, r2, Clock::now());
              }
              cudaStreamSynchronize(stream_);
              return seconds_since(t0);
            });
          },
          label, times);
    }
    return true;
  }

  int inplace_curve() {
    FillMethod fill;
    if (!parse_fill(cuda_.inplace_fill, fill)) {
      std::fprintf(stderr, "staging-bench: unknown fill method '%s'\n", cuda_.inplace_fill.c_str());
      return 1;
    }
    const std::string label(to_string(resolve_fill_method(fill)));
    UploaderConfig c;
    c.device = device_index_;
    c.ring_bytes = cuda_.ring_mib * MiB;
    c.chunk_bytes = cuda_.chunk_mib * MiB;
    c.fill_threads = 1;
    c.wait_timeout = std::chrono::seconds(10);
    auto uploader = Uploader::create(c);
    if (!uploader) return 1;
    std::atomic<int> errors{0};
    if (!producer_rows(*uploader, c, fill, label, errors)) return 1;
    if (!team_rows(*uploader, c, fill, label, errors)) return 1;
    if (errors.load() != 0) {
      std::fprintf(stderr, "staging-bench: the in-place paths failed %d times\n", errors.load());
      ++failures_;
      return 1;
    }
    record_pinned(uploader->stats());
    return 0;
  }

  // --- targets ----------------------------------------------------------------------------------

  const Result* find(const std::string& section, uint64_t bytes, unsigned threads = 0,
                     const std::string& fill_prefix = "") const {
    for (const Result& r : results_) {
      if (r.section == section && r.bytes == bytes && (threads == 0 || r.threads == threads) &&
          r.fill.compare(0, fill_prefix.size(), fill_prefix) == 0) {
        return &r;
      }
    }
    return nullptr;
  }

  void targets() {
    char buf[512];
    for (const auto& [bytes, ceiling] : ceiling_) {
      const std::string size = std::to_string(bytes / MiB) + " MiB";
      // The default configuration against its target, and against the best configuration.
      if (const Result* d = find("default", bytes)) {
        const double goal = default_target(bytes);
        const Result* best = d;
        for (const Result& r : results_) {
          if (r.bytes == bytes &&
              (r.section == "ring" || r.section == "tuned" || r.section == "chunk") &&
              r.ratio > best->ratio) {
            best = &r;
          }
        }
        std::snprintf(buf, sizeof buf,
                      "%.2f x ceiling (%.1f of %.1f GB/s), target %.2f; best "
                      "configuration %.2f (%s, %u threads, %s)",
                      d->ratio, d->gbps, ceiling, goal, best->ratio, best->section.c_str(),
                      best->threads, best->fill.c_str());
        report_.target(
            "default " + size + " >= " + std::to_string(goal).substr(0, 4) + " x ceiling",
            d->ratio >= goal, buf);
        std::snprintf(buf, sizeof buf, "default %.2f vs best %.2f (%.0f %%)", d->ratio, best->ratio,
                      100 * d->ratio / best->ratio);
        report_.target("default " + size + " within 3 % of the best configuration",
                       d->ratio >= 0.97 * best->ratio, buf);
      }
      if (pageable_gbps_.count(bytes) == 0) continue;
      const double pageable = pageable_gbps_.at(bytes);
      // One fill thread (the default fill method) against pageable cudaMemcpy.
      if (const Result* one = find("ring", bytes, 1, "auto")) {
        std::snprintf(buf, sizeof buf, "%.2f x pageable (%.1f vs %.1f GB/s)", one->gbps / pageable,
                      one->gbps, pageable);
        report_.target("1 fill thread " + size + " >= 1.0 x pageable cudaMemcpy",
                       one->gbps >= pageable, buf);
      }
      // Any configuration.
      const Result* worst = nullptr;
      for (const Result& r : results_) {
        if (r.bytes == bytes &&
            (r.section == "ring" || r.section == "default" || r.section == "tuned") &&
            (worst == nullptr || r.gbps < worst->gbps)) {
          worst = &r;
        }
      }
      if (worst != nullptr) {
        std::snprintf(buf, sizeof buf, "slowest configuration %.2f x pageable (%s, %u threads, %s)",
                      worst->gbps / pageable, worst->section.c_str(), worst->threads,
                      worst->fill.c_str());
        report_.target("every configuration " + size + " >= 1.0 x pageable cudaMemcpy",
                       worst->gbps >= pageable, buf);
      }
    }
    const Result* best_inplace = nullptr;
    for (const Result& r : results_) {
      if ((r.section == "inplace" || r.section == "inplace-team") &&
          (best_inplace == nullptr || r.ratio > best_inplace->ratio)) {
        best_inplace = &r;
      }
    }
    if (best_inplace != nullptr) {
      std::snprintf(buf, sizeof buf, "median of %u runs %.2f x ceiling (%s, %u threads, %s copy)",
                    cuda_.inplace_runs, best_inplace->ratio, best_inplace->section.c_str(),
                    best_inplace->threads, best_inplace->fill.c_str());
      report_.target("in-place >= 0.9 x ceiling", best_inplace->ratio >= 0.9, buf);
    }
    if (pinned_cap_ != 0) {  // judged only when some section's Uploader was recorded
      std::snprintf(buf, sizeof buf,
                    "most pinned bytes held by any Uploader %llu, largest cap %llu",
                    static_cast<unsigned long long>(max_pinned_peak_),
                    static_cast<unsigned long long>(pinned_cap_));
      report_.target("pinned memory never above the cap", !pinned_over_cap_, buf);
    }
  }

  // Notes one Uploader's pinned memory: its peak against its own cap (every section's uploader,
  // the in-place ones included).
  void record_pinned(const UploaderStats& s) {
    max_pinned_peak_ = std::max(max_pinned_peak_, s.pinned_peak);
    pinned_cap_ = std::max(pinned_cap_, s.pinned_cap);
    if (s.pinned_peak > s.pinned_cap) {
      pinned_over_cap_ = true;
      ++failures_;
    }
  }

  const CommonOptions& common_;
  const CudaOptions& cuda_;
  Report& report_;
  std::vector<Result>& results_;
  int device_index_ = 0;
  uint64_t max_bytes_ = 0;
  std::byte* pageable_ = nullptr;
  std::byte* pinned_ = nullptr;   // the source, pinned: the ceiling's
  std::byte* staging_ = nullptr;  // pin1's cached pinned buffer, and the fill rows' ring
  std::byte* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::map<uint64_t, double> ceiling_;
  std::map<uint64_t, double> pageable_gbps_;
  double link_gbps_ = 0;
  double overhead_us_ = 0;
  uint64_t max_pinned_peak_ = 0;
  uint64_t pinned_cap_ = 0;       // the largest cap of any Uploader
  bool pinned_over_cap_ = false;  // an Uploader's peak passed its own cap
  int failures_ = 0;
};

int describe(const CudaOptions& cuda, Report& report) {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  report.context("cuda_driver", driver);
  report.context("cuda_runtime", runtime);
  for (int d : cuda.devices) {
    cudaDeviceProp prop{};
    if (failed(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties")) return 1;
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, d);
    int node = -1;
    make_runtime_api(d)->host_numa_node(&node);
    report.context("device" + std::to_string(d), std::string(prop.name) + " pci " + bus +
                                                     " host NUMA node " + std::to_string(node));
  }
  const HostTopology topo = HostTopology::read();
  std::string nodes;
  for (const auto& n : topo.nodes)
    nodes += (nodes.empty() ? "" : ", ") +
             ("node" + std::to_string(n.id) + ": " + std::to_string(n.cpus.size()) + " cpus");
  report.context("host_numa", nodes);
  report.context("ring_mib_per_device", cuda.ring_mib);
  report.context("chunk_mib", cuda.chunk_mib);
  report.context("warmup_uploads", cuda.warmup);
  report.context("source", "pageable (malloc), pre-touched before timing, reused by every rep");
  report.context("timing",
                 "host wall time from the call until the stream is synchronised; median of reps "
                 "after one warm-up (ring rows: after --warmup uploads)");
  return 0;
}

CudaOptions& options() {
  static CudaOptions o;
  return o;
}

}  // namespace
}  // namespace cuda_bench

Backend make_cuda_backend() {
  using namespace cuda_bench;
  Backend b;
  b.name = "cuda";
  b.description = "pageable-to-device uploads through staging::cuda::Uploader";
  b.add_options = [](CLI::App& app) {
    CudaOptions& o = options();
    auto* g = app.add_option_group("cuda", "options of --backend cuda");
    g->add_option("--devices,--device", o.devices,
                  "CUDA devices; the first is measured alone in every section, several add the "
                  "multi-device sections")
        ->delimiter(',');
    g->add_option("--ring-mib", o.ring_mib, "pinned ring per device (the cap), MiB");
    g->add_option("--chunk-mib", o.chunk_mib, "largest piece (and reservation), MiB");
    g->add_option("--chunk-sweep", o.chunk_sweep_mib,
                  "largest-piece sizes (MiB) measured at the largest size (section chunk)")
        ->delimiter(',');
    g->add_option("--fills", o.fills, "fill methods of the ring rows: auto, memcpy, streaming")
        ->delimiter(',');
    g->add_option("--pinnings", o.pinnings,
                  "fill thread pinning of the ring rows: none, node, core")
        ->delimiter(',');
    g->add_option("--warmup", o.warmup, "uploads before each ring row is measured");
    g->add_flag("!--no-inplace", o.inplace, "skip the in-place producer rows");
    g->add_option("--inplace-runs", o.inplace_runs, "in-place rows: runs, the row is their median");
    g->add_option("--inplace-fill", o.inplace_fill,
                  "how in-place producers copy into their spans: memcpy, streaming, auto");
    g->add_option("--span-mib", o.span_mib,
                  "in-place span sizes, MiB (0: ring / (2 x producers), clamped to [1, chunk])")
        ->delimiter(',');
    g->add_option("--multi-sizes", o.multi_sizes_mib, "sizes of the multi-device sections, MiB")
        ->delimiter(',');
    g->add_option("--sections", o.sections,
                  "only these sections: fill, copy, calls, baselines, default, tuned, ring, chunk, "
                  "inplace, multi, handmade, contention, phases (the ceiling is always measured; "
                  "handmade, contention and phases run only when named)")
        ->delimiter(',');
  };
  b.run = [](const CommonOptions& common, Report& report) {
    CudaOptions& cuda = options();
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      std::fprintf(stderr, "staging-bench: no usable CUDA device (%s)\n",
                   err != cudaSuccess ? cudaGetErrorName(err) : "0 devices");
      return kNoDevice;
    }
    if (cuda.devices.empty()) cuda.devices.push_back(0);
    for (int d : cuda.devices) {
      if (d < 0 || d >= count) {
        std::fprintf(stderr, "staging-bench: no CUDA device %d (%d present)\n", d, count);
        return 2;
      }
    }
    if (describe(cuda, report) != 0) return 1;
    std::vector<Result> results;
    int status = 0;
    const bool multi_only = cuda.sections.size() == 1 && cuda.sections.front() == "multi";
    if (!multi_only) {
      SingleDevice single(common, cuda, report, results);
      status = single.run();
    }
    if (status == 0 && cuda.devices.size() > 1 && wanted(cuda, "multi")) {
      status = run_multi(common, cuda, report, results);
    }
    return status;
  };
  return b;
}

}  // namespace staging::bench
