// staging-bench --backend cuda, section `handmade`: the pipeline a user would write by hand for
// one pageable upload, at its best, measured beside the Uploader on the same buffers.
//
//   k threads (spinning between uploads: no wake-up)   the calling thread
//   ------------------------------------------------   -----------------------------------------
//   claim the next slice (64 KiB) of the source,        for each piece in order: wait until all
//   copy it into pinned staging (memcpy or streaming    its slices are filled, cudaMemcpyAsync it
//   stores), count it done in its piece                 to the device; then synchronize
//
// Staging is a pinned buffer as large as the upload (no ring to wait for), the same for every
// repetition. Nothing is allocated, woken or recorded per upload: what is left is the fill, the
// copies and their overlap, which bounds any pipeline of pieces on this host. Each row is one
// (fill method, threads, piece size); a note per size names the best, for comparing with the
// Uploader's rows.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench_cuda.hpp"

namespace staging::bench::cuda_bench {
namespace {

constexpr uint64_t kSlice = uint64_t{64} << 10;

void relax() noexcept {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Threads that fill one upload's slices at a time, spinning between uploads.
class SpinCrew {
 public:
  SpinCrew(unsigned threads, uint64_t max_pieces) : done_(max_pieces) {
    for (unsigned t = 0; t < threads; ++t)
      threads_.emplace_back([this] { work(); });
  }
  SpinCrew(const SpinCrew&) = delete;
  SpinCrew& operator=(const SpinCrew&) = delete;
  ~SpinCrew() {
    stop_.store(true, std::memory_order_release);
    for (auto& t : threads_)
      t.join();
  }

  // Starts filling `bytes` of `src` into `dst` in pieces of `piece` (a multiple of kSlice).
  void start(std::byte* dst, const std::byte* src, uint64_t bytes, uint64_t piece,
             FillMethod method) {
    dst_ = dst;
    src_ = src;
    bytes_ = bytes;
    piece_ = piece;
    method_ = method;
    slices_ = (bytes + kSlice - 1) / kSlice;
    for (uint64_t i = 0; i < (bytes + piece - 1) / piece; ++i)
      done_[i].store(0, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  // Spins until piece `i` of the upload started last is filled.
  void wait_piece(uint64_t i) const {
    const uint64_t first = i * piece_ / kSlice;
    const uint64_t end = std::min(slices_, (i + 1) * piece_ / kSlice);
    while (done_[i].load(std::memory_order_acquire) < end - first)
      relax();
  }
  // Spins until every thread is back from the upload started last.
  void wait_all() const {
    while (finished_.load(std::memory_order_acquire) < threads_.size())
      relax();
  }

 private:
  void work() {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation_.load(std::memory_order_acquire);
      while (g == seen) {
        if (stop_.load(std::memory_order_acquire)) return;
        relax();
        g = generation_.load(std::memory_order_acquire);
      }
      seen = g;
      for (uint64_t s = next_.fetch_add(1, std::memory_order_relaxed); s < slices_;
           s = next_.fetch_add(1, std::memory_order_relaxed)) {
        const uint64_t at = s * kSlice;
        copy_to_staging(dst_ + at, src_ + at, std::min(kSlice, bytes_ - at), method_);
        done_[at / piece_].fetch_add(1, std::memory_order_release);
      }
      finished_.fetch_add(1, std::memory_order_release);
    }
  }

  std::vector<std::thread> threads_;
  std::vector<std::atomic<uint64_t>> done_;  // filled slices per piece
  alignas(64) std::atomic<uint64_t> next_{0};
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<uint64_t> finished_{0};
  std::atomic<bool> stop_{false};
  std::byte* dst_ = nullptr;
  const std::byte* src_ = nullptr;
  uint64_t bytes_ = 0, piece_ = kSlice, slices_ = 0;
  FillMethod method_ = FillMethod::Memcpy;
};

}  // namespace

int handmade_rows(const CommonOptions& common, const HandmadeBuffers& b,
                  const std::map<uint64_t, double>& ceilings, Report& report) {
  std::vector<unsigned> counts = common.threads;
  if (counts.size() < 2) counts = {2, 3, 4, 6, 8, 12};
  struct Best {
    double ratio = 0;
    std::string what;
  };
  std::map<uint64_t, Best> best;
  for (const FillMethod method : {FillMethod::Memcpy, FillMethod::Streaming}) {
    for (const unsigned threads : counts) {
      SpinCrew crew(threads, b.max_bytes / kSlice + 1);
      for (const uint64_t mib : common.sizes_mib) {
        const uint64_t bytes = mib * MiB;
        for (const uint64_t piece :
             {256 * uint64_t{1024}, 512 * uint64_t{1024}, 1 * MiB, 2 * MiB, 4 * MiB}) {
          if (piece > bytes) break;
          cudaError_t err = cudaSuccess;
          Row row = measure(common, "handmade", bytes, [&] {
            const auto t0 = Clock::now();
            crew.start(b.staging, b.pageable, bytes, piece, method);
            for (uint64_t i = 0; i * piece < bytes && err == cudaSuccess; ++i) {
              crew.wait_piece(i);
              const uint64_t n = std::min(piece, bytes - i * piece);
              err = cudaMemcpyAsync(b.device + i * piece, b.staging + i * piece, n,
                                    cudaMemcpyHostToDevice, b.stream);
            }
            if (err == cudaSuccess) err = cudaStreamSynchronize(b.stream);
            const double took = seconds_since(t0);
            crew.wait_all();
            return took;
          });
          if (failed(err, "cudaMemcpyAsync (handmade rows)")) return 1;
          const auto ceiling = ceilings.find(bytes);
          const double ratio = ceiling != ceilings.end() ? row.gbps / ceiling->second : 0;
          row.fields["threads"] = threads;
          row.fields["fill"] = std::string(to_string(resolve_fill_method(method)));
          row.fields["piece_kib"] = piece / 1024;
          row.fields["ratio"] = ratio;
          row.fields["what"] =
              "hand-written pipeline: spinning threads fill slices, copies per piece";
          if (ratio > best[bytes].ratio) {
            char what[160];
            std::snprintf(what, sizeof what, "%s, %u threads, %llu KiB pieces",
                          std::string(to_string(resolve_fill_method(method))).c_str(), threads,
                          static_cast<unsigned long long>(piece / 1024));
            best[bytes] = {ratio, what};
          }
          report.add(std::move(row));
        }
      }
    }
  }
  for (const auto& [bytes, b2] : best) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "handmade best at %llu MiB: %.3f x ceiling (%s)",
                  static_cast<unsigned long long>(bytes / MiB), b2.ratio, b2.what.c_str());
    report.note(buf);
  }
  return 0;
}

}  // namespace staging::bench::cuda_bench
