// FillPool: the CPU threads that copy host bytes into the pinned ring.
//
// A submitter hands the pool a FillJob (one ring piece: destination, source, bytes), split into
// slices of a given size; the threads take slices in FIFO order across all jobs (so the oldest
// piece, the next to be copied to the device, fills first) and each copies its slice alone (no two
// threads write the same cache line: slices are multiples of 4 KiB, except a piece's last). The
// submitter waits for its job, issues the device copy, and reuses or drops the job.
//
// Internal to the cuda layer (GPU-free: the threads never call CUDA; tested without a GPU).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "staging/cuda/uploader.hpp"

namespace staging::cuda::detail {

/// One piece to fill. Owned by the submitter, which keeps it alive (and unmoved) from submit()
/// until done() is true (after wait() or cancel()).
struct FillJob {
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  uint64_t bytes = 0;
  /// How to copy this job; Auto: the pool's method.
  FillMethod method = FillMethod::Auto;
  /// Slices not yet copied. Written under the pool's mutex; read without it by done().
  std::atomic<uint64_t> remaining{0};
};

/// See the file comment.
///
/// Ownership: owns its threads (joined by the destructor, which first lets them finish the slices
/// already queued). Threading: submit/done/wait/cancel from any thread, concurrently; a given job
/// is used by one submitter.
class FillPool {
 public:
  /// Starts `threads` (>= 1) threads copying with `method`. Throws std::system_error if a thread
  /// cannot be started (the caller turns that into an error value).
  FillPool(unsigned threads, FillMethod method);
  ~FillPool();
  FillPool(const FillPool&) = delete;
  FillPool& operator=(const FillPool&) = delete;

  /// Queues `job` in slices of `slice_bytes` (> 0, rounded up to 4 KiB). `job.bytes` > 0.
  void submit(FillJob& job, uint64_t slice_bytes);
  /// True when every slice of `job` has been copied (or cancelled).
  [[nodiscard]] bool done(const FillJob& job);
  /// Blocks until done(job): spins briefly (a piece is usually near done when waited for),
  /// then sleeps on a condition variable.
  void wait(FillJob& job);
  /// Removes `job`'s queued slices and waits for those being copied: afterwards no thread touches
  /// the job, its source or its destination.
  void cancel(FillJob& job);

  [[nodiscard]] unsigned threads() const noexcept { return static_cast<unsigned>(threads_.size()); }

 private:
  struct Slice {
    FillJob* job;
    uint64_t offset;
    uint64_t bytes;
  };
  void run() noexcept;

  FillMethod method_;
  std::atomic<uint64_t> queued_{0};  // slices in queue_, readable without the mutex
  std::mutex mu_;
  std::condition_variable work_cv_;  // slices queued, or stopping
  std::condition_variable done_cv_;  // a job's last slice finished
  std::deque<Slice> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace staging::cuda::detail
