// staging-bench --backend cuda: pageable-to-device uploads through staging::cuda::Uploader,
// against plain cudaMemcpy from the same pageable memory and cudaMemcpyAsync from pinned memory
// (the ceiling), all measured in the same run on the same device buffer.
//
// Sections (one row per configuration, GB/s = bytes / host wall time from the call until the
// stream has finished, median over repetitions after one warm-up):
//   ceiling   cudaMemcpyAsync from pinned memory, one call per size
//   pageable  cudaMemcpy from the pageable source
//   ring      Uploader::upload from the pageable source: per fill method, per fill thread count
//   chunk     the same at the largest size, per chunk size (a sweep)
//   inplace   N producer threads, each on its own stream: reserve a span, copy into it from the
//             pageable source, commit
//   inplace-team  one producer: reserve a span, a team of N threads fills it together, commit
// The source is malloc'd pageable memory, pre-touched (written once before any timing) and reused
// by every repetition; sizes above the last-level cache therefore stream from DRAM.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "bench.hpp"
#include "staging/core/fill_copy.hpp"
#include "staging/cuda/uploader.hpp"

namespace staging::bench {
namespace {

using namespace staging::cuda;
using Clock = std::chrono::steady_clock;
constexpr uint64_t MiB = uint64_t{1} << 20;

struct CudaOptions {
  int device = 0;
  uint64_t ring_mib = 64;
  uint64_t chunk_mib = 8;
  std::vector<uint64_t> chunk_sweep_mib{2, 4, 8, 16};
  // "auto" first: the library's default, chosen per upload by size (FillMethod::Auto).
  std::vector<std::string> fills{"auto", "memcpy", "streaming"};
  bool inplace = true;
  // In-place producers copy with this method (a producer's own choice; memcpy measured best for
  // spans cycling through the ring) in spans of these sizes (0: ring / (2 x producers), clamped to
  // [1 MiB, chunk]).
  std::string inplace_fill = "memcpy";
  std::vector<uint64_t> span_mib{0};
};

// N threads (the caller and N - 1 workers) that copy one span together, each its own slice:
// the in-place pattern of a producer that parallelises its own fill (decode, gather, ...).
class FillTeam {
 public:
  explicit FillTeam(unsigned n) : n_(std::max(1u, n)), start_(n_), done_(n_) {
    for (unsigned i = 1; i < n_; ++i)
      workers_.emplace_back([this, i] {
        for (;;) {
          start_.arrive_and_wait();
          if (stop_) return;
          slice(i);
          done_.arrive_and_wait();
        }
      });
  }
  ~FillTeam() {
    stop_ = true;
    start_.arrive_and_wait();
    for (auto& t : workers_)
      t.join();
  }
  FillTeam(const FillTeam&) = delete;
  FillTeam& operator=(const FillTeam&) = delete;

  // Copies `bytes` from `src` to `dst`, split over the team; returns when every slice is done.
  void fill(std::byte* dst, const std::byte* src, uint64_t bytes, FillMethod method) {
    dst_ = dst;
    src_ = src;
    bytes_ = bytes;
    method_ = method;
    start_.arrive_and_wait();
    slice(0);
    done_.arrive_and_wait();
  }

 private:
  void slice(unsigned i) {
    // 4 KiB-aligned slices: no two threads write the same cache line.
    const uint64_t per = (bytes_ / n_ + 4095) & ~uint64_t{4095};
    const uint64_t begin = std::min<uint64_t>(bytes_, per * i);
    const uint64_t end = std::min<uint64_t>(bytes_, begin + per);
    if (end > begin) copy_to_staging(dst_ + begin, src_ + begin, end - begin, method_);
  }

  unsigned n_;
  std::barrier<> start_;
  std::barrier<> done_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_{false};
  std::byte* dst_ = nullptr;
  const std::byte* src_ = nullptr;
  uint64_t bytes_ = 0;
  FillMethod method_ = FillMethod::Memcpy;
};

CudaOptions& cuda_options() {
  static CudaOptions o;
  return o;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::optional<FillMethod> parse_fill(const std::string& s) {
  if (s == "streaming") return FillMethod::Streaming;
  if (s == "memcpy") return FillMethod::Memcpy;
  if (s == "auto") return FillMethod::Auto;
  return std::nullopt;
}

#define BENCH_CUDA(expr)                                                                           \
  do {                                                                                             \
    const cudaError_t bench_err_ = (expr);                                                         \
    if (bench_err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "staging-bench: %s failed: %s\n", #expr, cudaGetErrorName(bench_err_)); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (false)

class CudaBench {
 public:
  CudaBench(const CommonOptions& common, const CudaOptions& cuda, Report& report)
      : common_(common), cuda_(cuda), report_(report) {}
  ~CudaBench() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (device_ != nullptr) cudaFree(device_);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
    std::free(pageable_);
  }
  CudaBench(const CudaBench&) = delete;
  CudaBench& operator=(const CudaBench&) = delete;

  int run() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      std::fprintf(stderr, "staging-bench: no usable CUDA device (%s)\n",
                   err != cudaSuccess ? cudaGetErrorName(err) : "0 devices");
      return 2;
    }
    BENCH_CUDA(cudaSetDevice(cuda_.device));
    if (int rc = describe(); rc != 0) return rc;
    if (int rc = allocate(); rc != 0) return rc;
    if (int rc = baselines(); rc != 0) return rc;
    if (int rc = ring_curve(); rc != 0) return rc;
    if (int rc = chunk_sweep(); rc != 0) return rc;
    if (cuda_.inplace) {
      if (int rc = inplace_curve(); rc != 0) return rc;
    }
    targets();
    return failures_ == 0 ? 0 : 1;
  }

 private:
  int describe() {
    cudaDeviceProp prop{};
    BENCH_CUDA(cudaGetDeviceProperties(&prop, cuda_.device));
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_.device);
    report_.context("device", prop.name);
    report_.context("pci_bus", bus);
    report_.context("cuda_driver", driver);
    report_.context("cuda_runtime", runtime);
    report_.context("ring_mib", cuda_.ring_mib);
    report_.context("chunk_mib", cuda_.chunk_mib);
    report_.context("source", "pageable (malloc), pre-touched before timing, reused by every rep");
    report_.context("timing",
                    "host wall time from the call until cudaStreamSynchronize returns; "
                    "median of reps after one warm-up");
    return 0;
  }

  int allocate() {
    for (uint64_t s : common_.sizes_mib)
      max_bytes_ = std::max(max_bytes_, s * MiB);
    if (max_bytes_ == 0) {
      std::fprintf(stderr, "staging-bench: no sizes\n");
      return 1;
    }
    pageable_ = static_cast<std::byte*>(std::aligned_alloc(4096, max_bytes_));
    if (pageable_ == nullptr) {
      std::fprintf(stderr, "staging-bench: cannot allocate %llu pageable bytes\n",
                   static_cast<unsigned long long>(max_bytes_));
      return 1;
    }
    // Pre-touch: every page of the source exists before anything is timed.
    for (uint64_t i = 0; i < max_bytes_; i += 8) {
      const uint64_t v = (i * 0x9E3779B97F4A7C15ull) ^ 0xA5A5A5A5A5A5A5A5ull;
      std::memcpy(pageable_ + i, &v, std::min<uint64_t>(8, max_bytes_ - i));
    }
    const auto t0 = Clock::now();
    BENCH_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), max_bytes_, cudaHostAllocDefault));
    report_.context("ceiling_pinning_seconds", seconds_since(t0));
    std::memcpy(pinned_, pageable_, max_bytes_);
    BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&device_), max_bytes_));
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return 0;
  }

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
      BENCH_CUDA(err);
      ceiling.fields["what"] = "cudaMemcpyAsync from pinned";
      ceiling_[bytes] = ceiling.gbps;
      max_ceiling_ = std::max(max_ceiling_, ceiling.gbps);
      report_.add(std::move(ceiling));

      Row pageable = measure(common_, "pageable", bytes, [&] {
        const auto t0 = Clock::now();
        err = cudaMemcpy(device_, pageable_, bytes, cudaMemcpyHostToDevice);
        return seconds_since(t0);
      });
      BENCH_CUDA(err);
      pageable.fields["what"] = "cudaMemcpy from pageable";
      pageable.fields["ratio"] = pageable.gbps / ceiling_[bytes];
      pageable_gbps_[bytes] = pageable.gbps;
      report_.add(std::move(pageable));
    }
    return 0;
  }

  // What a row's fill method was: "auto(memcpy)" names the method Auto chose for that size.
  std::string fill_label(FillMethod fill, uint64_t bytes) const {
    if (fill != FillMethod::Auto) return std::string(to_string(resolve_fill_method(fill)));
    const FillMethod chosen = resolve_fill_method(
        bytes >= cuda_.ring_mib * MiB ? FillMethod::Memcpy : FillMethod::Streaming);
    return "auto(" + std::string(to_string(chosen)) + ")";
  }

  UploaderConfig config(unsigned threads, FillMethod fill, uint64_t chunk_bytes) const {
    UploaderConfig c;
    c.device = cuda_.device;
    c.ring_bytes = cuda_.ring_mib * MiB;
    c.chunk_bytes = chunk_bytes;
    c.fill_threads = std::max(1u, threads);
    c.fill = fill;
    c.wait_timeout = std::chrono::seconds(10);
    return c;
  }

  // Measures upload() of every size (or only `only_bytes`) with one Uploader; adds a row each.
  int ring_rows(const std::string& section, unsigned threads, FillMethod fill, uint64_t chunk,
                std::optional<uint64_t> only_bytes) {
    auto uploader = Uploader::create(config(threads, fill, chunk));
    if (!uploader) {
      std::fprintf(stderr, "staging-bench: Uploader::create: %s\n",
                   std::string(to_string(uploader.error())).c_str());
      return 1;
    }
    for (uint64_t mib : common_.sizes_mib) {
      const uint64_t bytes = mib * MiB;
      if (only_bytes && bytes != *only_bytes) continue;
      std::optional<UploadError> failure;
      Row row = measure(common_, section, bytes, [&] {
        const auto t0 = Clock::now();
        auto p = uploader->upload(device_, pageable_, bytes, stream_);
        if (!p) failure = p.error();
        cudaStreamSynchronize(stream_);
        return seconds_since(t0);
      });
      if (failure) {
        std::fprintf(stderr, "staging-bench: upload failed: %s (%s)\n",
                     std::string(to_string(failure->kind)).c_str(),
                     std::string(error_name(failure->cuda)).c_str());
        ++failures_;
        return 1;
      }
      row.fields["threads"] = threads;
      row.fields["fill"] = fill_label(fill, bytes);
      row.fields["chunk_mib"] = static_cast<double>(chunk) / MiB;
      row.fields["ratio"] = row.gbps / ceiling_[bytes];
      row.fields["x_pageable"] = row.gbps / pageable_gbps_[bytes];
      results_.push_back(
          {section, bytes, threads, fill_label(fill, bytes), chunk, row.gbps / ceiling_[bytes]});
      report_.add(std::move(row));
    }
    note_stats(*uploader);
    return 0;
  }

  void note_stats(const Uploader& uploader) {
    const UploaderStats s = uploader.stats();
    max_pinned_peak_ = std::max(max_pinned_peak_, s.pinned_peak);
    pinned_cap_ = s.pinned_cap;
    if (s.pinned_peak > s.pinned_cap) ++failures_;
  }

  int ring_curve() {
    for (const std::string& f : cuda_.fills) {
      const auto fill = parse_fill(f);
      if (!fill) {
        std::fprintf(stderr, "staging-bench: unknown fill method '%s'\n", f.c_str());
        return 1;
      }
      for (unsigned t : common_.threads) {
        if (int rc = ring_rows("ring", t, *fill, cuda_.chunk_mib * MiB, std::nullopt); rc != 0) {
          return rc;
        }
      }
    }
    return 0;
  }

  int chunk_sweep() {
    if (cuda_.chunk_sweep_mib.empty()) return 0;
    const uint64_t bytes = max_bytes_;
    std::vector<unsigned> ts = common_.threads;
    std::sort(ts.rbegin(), ts.rend());
    ts.resize(std::min<std::size_t>(ts.size(), 2));  // the two largest thread counts
    const FillMethod fill = parse_fill(cuda_.fills.front()).value_or(FillMethod::Auto);
    for (unsigned t : ts) {
      for (uint64_t c : cuda_.chunk_sweep_mib) {
        if (c == cuda_.chunk_mib || c * MiB > cuda_.ring_mib * MiB) continue;  // measured above
        if (int rc = ring_rows("chunk", t, fill, c * MiB, bytes); rc != 0) return rc;
      }
    }
    return 0;
  }

  int inplace_curve() {
    const uint64_t bytes = max_bytes_;
    const auto parsed = parse_fill(cuda_.inplace_fill);
    if (!parsed) {
      std::fprintf(stderr, "staging-bench: unknown fill method '%s'\n", cuda_.inplace_fill.c_str());
      return 1;
    }
    const FillMethod fill = *parsed;
    for (unsigned producers : common_.threads) {
      for (uint64_t span_mib : cuda_.span_mib) {
        if (int rc = inplace_rows(bytes, std::max(1u, producers), fill, span_mib); rc != 0) {
          return rc;
        }
      }
    }
    for (unsigned team : common_.threads) {
      if (int rc = inplace_team_rows(bytes, std::max(1u, team), fill); rc != 0) return rc;
    }
    return 0;
  }

  // One producer; each span (a chunk) is filled by a team of `team` threads, then committed.
  // The copy of span k overlaps the fill of span k + 1, as in upload()'s own pipeline.
  int inplace_team_rows(uint64_t bytes, unsigned team, FillMethod fill) {
    const uint64_t span = cuda_.chunk_mib * MiB;
    auto uploader = Uploader::create(config(1, fill, span));
    if (!uploader) return 1;
    FillTeam fillers(team);
    bool failed = false;
    Row row = measure(common_, "inplace-team", bytes, [&] {
      const auto t0 = Clock::now();
      for (uint64_t off = 0; off < bytes && !failed; off += span) {
        const uint64_t n = std::min(span, bytes - off);
        UploadOptions o;
        o.policy = ExhaustionPolicy::Wait;
        auto s = uploader->reserve(n, o);
        if (!s) {
          failed = true;
          break;
        }
        fillers.fill(s->data(), pageable_ + off, n, fill);
        if (!uploader->commit(std::move(*s), device_ + off, stream_)) failed = true;
      }
      cudaStreamSynchronize(stream_);
      return seconds_since(t0);
    });
    if (failed) {
      std::fprintf(stderr, "staging-bench: in-place team path failed\n");
      ++failures_;
      return 1;
    }
    const std::string label(to_string(resolve_fill_method(fill)));
    row.fields["threads"] = team;
    row.fields["fill"] = label;
    row.fields["span_mib"] = static_cast<double>(span) / MiB;
    row.fields["ratio"] = row.gbps / ceiling_[bytes];
    results_.push_back({"inplace-team", bytes, team, label, span, row.gbps / ceiling_[bytes]});
    report_.add(std::move(row));
    note_stats(*uploader);
    return 0;
  }

  int inplace_rows(uint64_t bytes, unsigned producers, FillMethod fill, uint64_t span_mib) {
    // Spans small enough that every producer can hold one while copies are in flight.
    const uint64_t span = span_mib != 0
                              ? span_mib * MiB
                              : std::clamp<uint64_t>(cuda_.ring_mib * MiB / (2 * producers), MiB,
                                                     cuda_.chunk_mib * MiB);
    auto uploader = Uploader::create(config(1, fill, cuda_.chunk_mib * MiB));
    if (!uploader) return 1;
    std::vector<cudaStream_t> streams(producers);
    for (auto& s : streams)
      BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::atomic<int> errors{0};
    Row row = measure(common_, "inplace", bytes, [&] {
      const auto t0 = Clock::now();
      std::vector<std::thread> threads;
      for (unsigned p = 0; p < producers; ++p) {
        threads.emplace_back([&, p] {
          for (uint64_t off = p * span; off < bytes; off += span * producers) {
            const uint64_t n = std::min(span, bytes - off);
            auto s = uploader->reserve(n, [] {
              UploadOptions o;
              o.policy = ExhaustionPolicy::Wait;
              return o;
            }());
            if (!s) {
              ++errors;
              return;
            }
            copy_to_staging(s->data(), pageable_ + off, n, fill);
            if (!uploader->commit(std::move(*s), device_ + off, streams[p])) ++errors;
          }
          cudaStreamSynchronize(streams[p]);
        });
      }
      for (auto& t : threads)
        t.join();
      return seconds_since(t0);
    });
    for (auto& s : streams)
      cudaStreamDestroy(s);
    if (errors.load() != 0) {
      std::fprintf(stderr, "staging-bench: in-place path failed %d times\n", errors.load());
      ++failures_;
      return 1;
    }
    row.fields["threads"] = producers;
    row.fields["fill"] = std::string(to_string(resolve_fill_method(fill)));
    row.fields["span_mib"] = static_cast<double>(span) / MiB;
    row.fields["ratio"] = row.gbps / ceiling_[bytes];
    results_.push_back({"inplace", bytes, producers,
                        std::string(to_string(resolve_fill_method(fill))), span,
                        row.gbps / ceiling_[bytes]});
    report_.add(std::move(row));
    note_stats(*uploader);
    return 0;
  }

  void targets() {
    char buf[512];
    // Pageable source >= 256 MiB through a ring of <= 64 MiB: >= 0.9 x the ceiling, fewest threads.
    const bool ring_ok_size = cuda_.ring_mib <= 64;
    for (const auto& [bytes, ceiling] : ceiling_) {
      if (bytes < 256 * MiB) continue;
      const Result* best = nullptr;
      const Result* fewest = nullptr;
      for (const Result& r : results_) {
        if (r.section != "ring" || r.bytes != bytes) continue;
        if (best == nullptr || r.ratio > best->ratio) best = &r;
        if (r.ratio >= 0.9 && (fewest == nullptr || r.threads < fewest->threads)) fewest = &r;
      }
      if (best == nullptr) continue;
      if (fewest != nullptr) {
        std::snprintf(
            buf, sizeof buf,
            "%.2f x ceiling (%.1f GB/s) with %u %s fill threads; best %.2f x (%u threads, "
            "%s); ring %llu MiB",
            fewest->ratio, fewest->ratio * ceiling, fewest->threads, fewest->fill.c_str(),
            best->ratio, best->threads, best->fill.c_str(),
            static_cast<unsigned long long>(cuda_.ring_mib));
      } else {
        std::snprintf(buf, sizeof buf,
                      "best %.2f x ceiling (%.1f GB/s of %.1f) with %u %s threads: short of 0.9 "
                      "by %.2f",
                      best->ratio, best->ratio * ceiling, ceiling, best->threads,
                      best->fill.c_str(), 0.9 - best->ratio);
      }
      report_.target("ring " + std::to_string(bytes / MiB) + " MiB pageable >= 0.9 x ceiling",
                     fewest != nullptr && ring_ok_size, buf);
      const double x = best->ratio * ceiling / pageable_gbps_[bytes];
      std::snprintf(buf, sizeof buf, "%.1f x plain cudaMemcpy from pageable (%.1f GB/s)", x,
                    pageable_gbps_[bytes]);
      report_.target("ring " + std::to_string(bytes / MiB) + " MiB >= 5 x pageable cudaMemcpy",
                     x >= 5.0, buf);
    }
    const Result* best_inplace = nullptr;
    const Result* fewest_inplace = nullptr;
    for (const Result& r : results_) {
      if (r.section != "inplace" && r.section != "inplace-team") continue;
      if (best_inplace == nullptr || r.ratio > best_inplace->ratio) best_inplace = &r;
      if (r.ratio >= 0.9 && (fewest_inplace == nullptr || r.threads < fewest_inplace->threads)) {
        fewest_inplace = &r;
      }
    }
    if (best_inplace != nullptr) {
      const Result* shown = fewest_inplace != nullptr ? fewest_inplace : best_inplace;
      std::snprintf(buf, sizeof buf, "%.2f x ceiling with %u %s threads (%s copy), %llu MiB",
                    shown->ratio, shown->threads,
                    shown->section == "inplace-team" ? "team fill" : "producer",
                    shown->fill.c_str(), static_cast<unsigned long long>(shown->bytes / MiB));
      report_.target("in-place producers >= 0.9 x ceiling", fewest_inplace != nullptr, buf);
    }
    std::snprintf(buf, sizeof buf, "most pinned bytes held by any Uploader %llu, cap %llu",
                  static_cast<unsigned long long>(max_pinned_peak_),
                  static_cast<unsigned long long>(pinned_cap_));
    report_.target("pinned memory never above the cap", max_pinned_peak_ <= pinned_cap_, buf);
  }

  struct Result {
    std::string section;
    uint64_t bytes;
    unsigned threads;
    std::string fill;
    uint64_t chunk;
    double ratio;
  };

  const CommonOptions& common_;
  const CudaOptions& cuda_;
  Report& report_;
  uint64_t max_bytes_ = 0;
  std::byte* pageable_ = nullptr;
  std::byte* pinned_ = nullptr;
  std::byte* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::map<uint64_t, double> ceiling_;
  std::map<uint64_t, double> pageable_gbps_;
  double max_ceiling_ = 0;
  std::vector<Result> results_;
  uint64_t max_pinned_peak_ = 0;
  uint64_t pinned_cap_ = 0;
  int failures_ = 0;
};

}  // namespace

Backend make_cuda_backend() {
  Backend b;
  b.name = "cuda";
  b.description = "pageable-to-device uploads through staging::cuda::Uploader";
  b.add_options = [](CLI::App& app) {
    CudaOptions& o = cuda_options();
    auto* g = app.add_option_group("cuda", "options of --backend cuda");
    g->add_option("--device", o.device, "CUDA device index");
    g->add_option("--ring-mib", o.ring_mib, "pinned ring (the cap), MiB");
    g->add_option("--chunk-mib", o.chunk_mib, "chunk size of the main curve, MiB");
    g->add_option("--chunk-sweep", o.chunk_sweep_mib,
                  "chunk sizes (MiB) swept at the largest size with the two largest thread counts "
                  "(empty: no sweep)")
        ->delimiter(',');
    g->add_option("--fills", o.fills, "fill methods: streaming, memcpy, auto")->delimiter(',');
    g->add_flag("!--no-inplace", o.inplace, "skip the in-place producer curve");
    g->add_option("--inplace-fill", o.inplace_fill,
                  "how in-place producers copy into their spans: memcpy, streaming, auto");
    g->add_option("--span-mib", o.span_mib,
                  "in-place span sizes, MiB (0: ring / (2 x producers), clamped to [1, chunk])")
        ->delimiter(',');
  };
  b.run = [](const CommonOptions& common, Report& report) {
    CudaBench bench(common, cuda_options(), report);
    return bench.run();
  };
  return b;
}

}  // namespace staging::bench
