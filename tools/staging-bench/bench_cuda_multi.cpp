// staging-bench --backend cuda --devices 0,1,...: every device alone, then all at once, through one
// MultiUploader (one fill pool or one per NUMA node, one ring per device under one cap), against
// the concurrent pinned ceiling (cudaMemcpyAsync from pinned memory on every device at once).
//
// Rows (GB/s per device, and the aggregate = devices x bytes / time until the last finished):
//   multi-ceiling      pinned cudaMemcpyAsync, each device alone (device=N) and all at once (all)
//   multi-ring         MultiUploader::upload, alone and all at once (one uploading thread each)
//   multi-ring-own     all at once with one Uploader per device, each with its own pool (the
//                      threads split evenly): what sharing one pool changes
//   host-memcpy        CPU only: every usable CPU copying pageable memory (the host's bandwidth)
//   host-stream        the same with streaming stores (no read of the destination)
// Each device uploads its own pageable source (no two devices read the same bytes).
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "bench_cuda.hpp"
#include "staging/cuda/multi_uploader.hpp"
#include "staging/detail/core/fill_engine.hpp"

namespace staging::bench::cuda_bench {
namespace {

using namespace staging::cuda;

struct PerDevice {
  int index = 0;
  std::byte* source = nullptr;  // pageable
  std::byte* pinned = nullptr;
  std::byte* device = nullptr;
  cudaStream_t stream = nullptr;
};

// The first upload error of several threads.
class FirstError {
 public:
  void set(const UploadFailure& e) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = e;
  }
  std::optional<UploadFailure> get() {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  std::mutex mu_;
  std::optional<UploadFailure> error_;
};

// "0-15,32-47" for a sorted CPU list; "any" for an empty one (not pinned).
std::string cpu_list(const std::vector<int>& cpus) {
  if (cpus.empty()) return "any";
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]) +
           (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Multi {
 public:
  Multi(const CommonOptions& common, const CudaOptions& cuda, Report& report,
        std::vector<Result>& results)
      : common_(common), cuda_(cuda), report_(report), results_(results) {}
  ~Multi() {
    uploader_.reset();
    for (PerDevice& d : devices_) {
      cudaSetDevice(d.index);
      if (d.stream != nullptr) cudaStreamDestroy(d.stream);
      if (d.device != nullptr) cudaFree(d.device);
      if (d.pinned != nullptr) cudaFreeHost(d.pinned);
      std::free(d.source);
    }
  }
  Multi(const Multi&) = delete;
  Multi& operator=(const Multi&) = delete;

  int run() {
    for (uint64_t s : cuda_.multi_sizes_mib)
      max_bytes_ = std::max(max_bytes_, s * MiB);
    if (max_bytes_ == 0) return 0;
    for (int d : cuda_.devices) {
      PerDevice& p = devices_.emplace_back();
      p.index = d;
      if (failed(cudaSetDevice(d), "cudaSetDevice")) return 1;
      p.source = pretouched(max_bytes_, 0x5A5A5A5A00000000ull + static_cast<uint64_t>(d));
      if (p.source == nullptr) return 1;
      if (failed(
              cudaHostAlloc(reinterpret_cast<void**>(&p.pinned), max_bytes_, cudaHostAllocPortable),
              "cudaHostAlloc")) {
        return 1;
      }
      std::memcpy(p.pinned, p.source, max_bytes_);
      if (failed(cudaMalloc(reinterpret_cast<void**>(&p.device), max_bytes_), "cudaMalloc"))
        return 1;
      if (failed(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking), "cudaStreamCreate")) {
        return 1;
      }
    }
    host_bandwidth();
    MultiUploaderConfig mc;
    mc.devices = cuda_.devices;
    mc.pinned_bytes = cuda_.ring_mib * MiB * devices_.size();
    mc.uploader.chunk_bytes = cuda_.chunk_mib * MiB;
    mc.uploader.wait_timeout = std::chrono::seconds(10);
    auto multi = MultiUploader::create(mc);
    if (!multi) {
      std::fprintf(stderr, "staging-bench: MultiUploader::create: %s\n",
                   std::string(to_string(multi.error())).c_str());
      return 1;
    }
    uploader_ = std::make_unique<MultiUploader>(std::move(*multi));
    unsigned threads = 0;
    for (const auto& pool : uploader_->pools())
      threads += pool->threads();
    report_.context("multi_pools", uploader_->pools().size());
    report_.context("multi_fill_threads", threads);
    // Where each pool's threads may run (the affinity each was given; "any": not pinned).
    for (std::size_t k = 0; k < uploader_->pools().size(); ++k) {
      const FillPool& pool = *uploader_->pools()[k];
      std::vector<std::string> sets;
      for (const auto& cpus : pool.placement()) {
        const std::string set = cpu_list(cpus);
        if (std::find(sets.begin(), sets.end(), set) == sets.end()) sets.push_back(set);
      }
      std::string where;
      for (const std::string& set : sets)
        where += (where.empty() ? "" : " | ") + set;
      report_.context("multi_pool" + std::to_string(k),
                      std::to_string(pool.threads()) + " threads, numa_node " +
                          std::to_string(pool.config().numa_node) + ", pinning " +
                          std::string(to_string(pool.config().pinning)) + ", cpus " + where);
    }
    for (std::size_t i = 0; i < devices_.size(); ++i)
      report_.context("multi_device" + std::to_string(i) + "_numa_node", uploader_->numa_node(i));

    for (uint64_t mib : cuda_.multi_sizes_mib) {
      const uint64_t bytes = mib * MiB;
      if (sizes(bytes, threads) != 0) return 1;
    }
    const PinnedBudget& budget = uploader_->budget();
    char buf[256];
    std::snprintf(buf, sizeof buf, "most pinned bytes held by all rings %llu, cap %llu",
                  static_cast<unsigned long long>(budget.peak()),
                  static_cast<unsigned long long>(budget.cap()));
    report_.target("multi: pinned memory never above the total cap", budget.peak() <= budget.cap(),
                   buf);
    return failures_ == 0 ? 0 : 1;
  }

 private:
  // CPU only: every usable CPU copying pageable memory; bytes read per second.
  void host_bandwidth() {
    const unsigned cpus = static_cast<unsigned>(HostTopology::read().cpus(-1).size());
    FillPoolConfig pc;
    pc.threads = cpus > 1 ? cpus - 1 : 0;
    pc.pinning = ThreadPinning::None;
    auto pool = FillPool::create(pc);
    if (!pool) return;
    std::byte* a = devices_.front().source;
    std::byte* b = devices_.size() > 1 ? devices_[1].source : nullptr;
    if (b == nullptr) return;
    // Plain stores (each destination line read before it is written) and streaming stores (not
    // read: what a fill into a ring that does not fit in the cache costs the memory).
    for (const FillMethod method : {FillMethod::Memcpy, FillMethod::Streaming}) {
      const bool streaming = method == FillMethod::Streaming;
      Row row = measure(common_, streaming ? "host-stream" : "host-memcpy", max_bytes_, [&] {
        staging::detail::FillJob job;
        job.dst = b;
        job.src = a;
        job.bytes = max_bytes_;
        job.method = method;
        const auto t0 = Clock::now();
        staging::detail::engine_of(**pool).submit(job);
        staging::detail::engine_of(**pool).wait(job);
        return seconds_since(t0);
      });
      row.fields["threads"] = cpus;
      row.fields["what"] = std::string("CPU only: every usable CPU copying pageable memory with ") +
                           (streaming ? "streaming" : "plain") + " stores (bytes read/s)";
      report_.add(std::move(row));
    }
    // Restore device 1's own pattern (each device uploads distinct bytes).
    std::free(devices_[1].source);
    devices_[1].source = pretouched(max_bytes_, 0x5A5A5A5A00000000ull + devices_[1].index);
  }

  // Runs `op(i)` on every device at once (one thread each); returns the seconds until the last
  // finished and adds each device's own seconds to `each`.
  double together(const std::function<void(std::size_t)>& op,
                  std::vector<std::vector<double>>& each) {
    const std::size_t n = devices_.size();
    std::barrier start(static_cast<std::ptrdiff_t>(n + 1));
    std::vector<double> own(n);
    std::vector<std::thread> threads;
    Clock::time_point t0;
    for (std::size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        cudaSetDevice(devices_[i].index);
        start.arrive_and_wait();
        op(i);
        cudaStreamSynchronize(devices_[i].stream);
        own[i] = seconds_since(t0);
      });
    }
    t0 = Clock::now();
    start.arrive_and_wait();
    for (auto& t : threads)
      t.join();
    for (std::size_t i = 0; i < n; ++i)
      each[i].push_back(own[i]);
    return *std::max_element(own.begin(), own.end());
  }

  // Adds the all-at-once row of `section` and returns each device's median GB/s.
  std::vector<double> together_row(const std::string& section, uint64_t bytes,
                                   const std::function<void(std::size_t)>& op) {
    const std::size_t n = devices_.size();
    std::vector<std::vector<double>> each(n);
    Row row = measure(common_, section, bytes * n, [&] { return together(op, each); });
    std::vector<double> per;
    for (std::size_t i = 0; i < n; ++i)
      per.push_back(static_cast<double>(bytes) / median_of(each[i]) / 1e9);
    row.fields["device"] = "all";
    row.fields["devices"] = n;
    row.fields["bytes_per_device"] = bytes;
    row.fields["per_device_gbps"] = per;
    report_.add(std::move(row));
    return per;
  }

  // Each device's GB/s in one configuration: through the rings and the pinned ceiling, all at
  // once and alone, and all at once with a pool per device (empty: not measured).
  struct DeviceRates {
    const std::vector<double>& ring;
    const std::vector<double>& ceiling;
    const std::vector<double>& alone_ring;
    const std::vector<double>& alone_ceiling;
    const std::vector<double>& own;
  };

  void add_targets(uint64_t bytes, unsigned threads, const DeviceRates& rates) {
    const std::size_t n = devices_.size();
    const std::vector<double>& ring = rates.ring;
    const std::vector<double>& ceiling = rates.ceiling;
    const std::vector<double>& alone_ring = rates.alone_ring;
    const std::vector<double>& alone_ceiling = rates.alone_ceiling;
    const std::vector<double>& own = rates.own;
    // Targets: each device >= 0.9 x its concurrent ceiling; the aggregate beside the ceiling's.
    char buf[512];
    double ring_sum = 0, ceiling_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ring_sum += ring[i];
      ceiling_sum += ceiling[i];
      const double ratio = ring[i] / ceiling[i];
      std::snprintf(buf, sizeof buf,
                    "%.2f x its concurrent ceiling (%.1f of %.1f GB/s); alone %.2f x (%.1f of "
                    "%.1f); own pools instead of one shared: %.2f x",
                    ratio, ring[i], ceiling[i], alone_ring[i] / alone_ceiling[i], alone_ring[i],
                    alone_ceiling[i], own.empty() ? 0.0 : own[i] / ceiling[i]);
      report_.target("multi " + std::to_string(bytes / MiB) + " MiB device " +
                         std::to_string(devices_[i].index) + " >= 0.9 x concurrent ceiling",
                     ratio >= 0.9, buf);
      results_.push_back({"multi-ring", bytes, threads, "", ring[i], ratio});
    }
    std::snprintf(buf, sizeof buf,
                  "aggregate %.1f GB/s through the rings vs %.1f GB/s pinned concurrent ceiling "
                  "(%.2f x) over %zu devices, %u fill threads",
                  ring_sum, ceiling_sum, ring_sum / ceiling_sum, n, threads);
    report_.target("multi " + std::to_string(bytes / MiB) +
                       " MiB aggregate >= 0.9 x concurrent "
                       "ceiling",
                   ring_sum >= 0.9 * ceiling_sum, buf);
  }

  int sizes(uint64_t bytes, unsigned threads) {
    const std::size_t n = devices_.size();
    cudaError_t err = cudaSuccess;
    std::vector<double> alone_ceiling(n), alone_ring(n);
    // Each device alone.
    for (std::size_t i = 0; i < n; ++i) {
      PerDevice& d = devices_[i];
      cudaSetDevice(d.index);
      Row c = measure(common_, "multi-ceiling", bytes, [&] {
        const auto t0 = Clock::now();
        err = cudaMemcpyAsync(d.device, d.pinned, bytes, cudaMemcpyHostToDevice, d.stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(d.stream);
        return seconds_since(t0);
      });
      if (failed(err, "cudaMemcpyAsync (multi ceiling)")) return 1;
      alone_ceiling[i] = c.gbps;
      c.fields["device"] = std::to_string(d.index);
      report_.add(std::move(c));
      std::optional<UploadFailure> failure;
      const auto once = [&] {
        const auto t0 = Clock::now();
        auto p = uploader_->upload(i, d.device, d.source, bytes, d.stream);
        if (!p) failure = p.error();
        cudaStreamSynchronize(d.stream);
        return seconds_since(t0);
      };
      for (unsigned w = 0; w < cuda_.warmup; ++w)
        once();
      Row r = measure(common_, "multi-ring", bytes, once);
      if (failure) return upload_failed(*failure);
      alone_ring[i] = r.gbps;
      r.fields["device"] = std::to_string(d.index);
      r.fields["threads"] = threads;
      r.fields["ratio"] = r.gbps / c.gbps;
      report_.add(std::move(r));
    }
    // All at once.
    std::atomic<bool> copy_failed{false};
    const std::vector<double> ceiling = together_row("multi-ceiling", bytes, [&](std::size_t i) {
      PerDevice& d = devices_[i];
      if (cudaMemcpyAsync(d.device, d.pinned, bytes, cudaMemcpyHostToDevice, d.stream) !=
          cudaSuccess) {
        copy_failed = true;
      }
    });
    if (copy_failed) {
      std::fprintf(stderr, "staging-bench: cudaMemcpyAsync (multi ceiling, together) failed\n");
      return 1;
    }
    FirstError failure;
    const auto ring_op = [&](std::size_t i) {
      PerDevice& d = devices_[i];
      auto p = uploader_->upload(i, d.device, d.source, bytes, d.stream);
      if (!p) failure.set(p.error());
    };
    for (unsigned w = 0; w < cuda_.warmup; ++w) {
      std::vector<std::vector<double>> scratch(n);
      together(ring_op, scratch);
    }
    const std::vector<double> ring = together_row("multi-ring", bytes, ring_op);
    if (auto e = failure.get()) return upload_failed(*e);
    const std::vector<double> own = own_pools(bytes, threads);

    add_targets(bytes, threads, {ring, ceiling, alone_ring, alone_ceiling, own});
    return 0;
  }

  // All at once with one Uploader per device, each with its own pool of threads / devices.
  std::vector<double> own_pools(uint64_t bytes, unsigned threads) {
    const std::size_t n = devices_.size();
    std::vector<std::optional<Uploader>> own(n);
    for (std::size_t i = 0; i < n; ++i) {
      UploaderConfig c;
      c.device = devices_[i].index;
      c.ring_bytes = cuda_.ring_mib * MiB;
      c.chunk_bytes = cuda_.chunk_mib * MiB;
      c.fill_threads = std::max<unsigned>(1, threads / static_cast<unsigned>(n));
      c.wait_timeout = std::chrono::seconds(10);
      auto u = Uploader::create(c);
      if (!u) return {};
      own[i].emplace(std::move(*u));
    }
    FirstError failure;
    const auto op = [&](std::size_t i) {
      PerDevice& d = devices_[i];
      auto p = own[i]->upload(d.device, d.source, bytes, d.stream);
      if (!p) failure.set(p.error());
    };
    for (unsigned w = 0; w < cuda_.warmup; ++w) {
      std::vector<std::vector<double>> scratch(n);
      together(op, scratch);
    }
    std::vector<double> per = together_row("multi-ring-own", bytes, op);
    if (auto e = failure.get()) {
      upload_failed(*e);
      return {};
    }
    return per;
  }

  int upload_failed(const UploadFailure& e) {
    std::fprintf(stderr, "staging-bench: upload failed: %s (%s)\n",
                 std::string(to_string(e.kind)).c_str(), std::string(error_name(e.cuda)).c_str());
    ++failures_;
    return 1;
  }

  const CommonOptions& common_;
  const CudaOptions& cuda_;
  Report& report_;
  std::vector<Result>& results_;
  uint64_t max_bytes_ = 0;
  std::vector<PerDevice> devices_;
  std::unique_ptr<MultiUploader> uploader_;
  int failures_ = 0;
};

}  // namespace

int run_multi(const CommonOptions& common, const CudaOptions& cuda, Report& report,
              std::vector<Result>& results) {
  Multi multi(common, cuda, report, results);
  return multi.run();
}

}  // namespace staging::bench::cuda_bench
