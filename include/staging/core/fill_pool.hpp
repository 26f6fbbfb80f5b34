// FillPool: CPU threads that copy host bytes into staging memory in parallel, shared by every
// uploader (and every device) that gives it work.
//
// A submitter describes a piece of staging memory to fill as a FillJob (destination, source,
// bytes, method). The pool splits it into slices (whole 4 KiB pages, so no two threads write the
// same cache line) and its threads pull slices from one FIFO queue across all submitters: the
// oldest piece, the next to be copied to a device, fills first. A claim is a few instructions
// under a short lock; idle threads look for work for a moment (FillPoolConfig::spin) before they
// sleep, so a pipeline that submits a piece every few microseconds never pays a wake-up per piece.
// The submitter fills too: wait() copies the job's unclaimed slices on the calling thread before
// it waits for the slices other threads hold.
//
//   submitter A: submit(a0) submit(a1) ... wait(a0): copies a0's unclaimed slices, then waits
//   submitter B: submit(b0) ...
//   queue:       [a0: s0 s1 s2 s3][a1: s0 s1 ...][b0: ...]     threads take slices front first
//
// One pool is the CPU budget of all its submitters: several uploaders (one per GPU) that share a
// pool share its threads, instead of each starting its own and oversubscribing the cores.
// Threads can be kept on one NUMA node (the one a GPU's PCIe root belongs to) and pinned one per
// physical core (ThreadPinning); host_topology.hpp reads the host's layout.
//
// GPU-free: the threads only copy memory (copy_to_staging, fill_copy.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "staging/core/counters.hpp"
#include "staging/core/enum_names.hpp"
#include "staging/core/expected.hpp"
#include "staging/core/fill_copy.hpp"
#include "staging/core/host_topology.hpp"
#include "staging/core/timeline.hpp"

namespace staging {

/// Where a FillPool's threads may run.
enum class ThreadPinning : uint8_t {
  /// Wherever the operating system puts them.
  None,
  /// On the CPUs of FillPoolConfig::numa_node (any CPU when it is < 0 or has no usable CPU).
  Node,
  /// Each thread on one CPU of that node (or of the host, numa_node < 0): one thread per physical
  /// core first, then SMT siblings, round-robin when there are more threads than CPUs.
  Core,
};

/// How a FillPool is made. Validated by FillPool::create.
struct FillPoolConfig {
  /// Threads the pool starts. 0 is allowed: the submitters then copy every slice themselves
  /// (wait() fills the whole job on the calling thread).
  unsigned threads = 4;
  /// Where the threads run; see ThreadPinning. Pinning that the kernel refuses (a container's CPU
  /// set, say) is skipped for that thread and shows in FillPoolStats::pinned_threads.
  ThreadPinning pinning = ThreadPinning::Node;
  /// The NUMA node whose CPUs the threads use (Node, Core); < 0: the whole host.
  int numa_node = -1;
  /// How long an idle thread keeps looking for work before it sleeps (>= 0). While it looks, a
  /// new job starts without a wake-up (uploads issued back to back, or one after the other's
  /// stream synchronisation); 0 sleeps at once (no CPU spent idle).
  Duration spin = std::chrono::microseconds(100);
  /// The host layout to pin by; null reads it (HostTopology::read()). Only read by create().
  const HostTopology* topology = nullptr;
};

/// Why FillPool::create made no pool.
enum class FillPoolError : uint8_t {
  /// A negative spin.
  InvalidConfig,
  /// A thread could not be started (the threads started so far were stopped).
  ThreadStartFailed,
};

/// Names of ThreadPinning's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<ThreadPinning>) noexcept {
  return std::to_array<std::string_view>({"None", "Node", "Core"});
}
static_assert(enum_names_complete<ThreadPinning>(), "ThreadPinning: a value has no name");
/// Names of FillPoolError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<FillPoolError>) noexcept {
  return std::to_array<std::string_view>({"InvalidConfig", "ThreadStartFailed"});
}
static_assert(enum_names_complete<FillPoolError>(), "FillPoolError: a value has no name");

class FillPool;

/// One piece of staging memory to fill: `bytes` from `src` to `dst`.
///
/// Ownership: the submitter's. It must stay alive and unmoved from FillPool::submit until done()
/// is true (after wait(), or cancel()); the pool never touches it after that. Reusable: submit it
/// again once done. The source and destination must stay valid for as long.
/// Threading: set the inputs before submit; read busy() after done().
class FillJob {
 public:
  /// Where the bytes go.
  std::byte* dst = nullptr;
  /// Where they come from (must not overlap dst).
  const std::byte* src = nullptr;
  /// How many (> 0).
  uint64_t bytes = 0;
  /// How to copy; Auto means resolve_fill_method(Auto).
  FillMethod method = FillMethod::Auto;
  /// Bytes per slice (rounded up to 4 KiB); 0: the job spread over every pool thread and the
  /// submitter, at least 32 KiB a slice.
  uint64_t slice_bytes = 0;
  /// Called once every slice has been copied, by the thread that copied the last one, before
  /// done() turns true; not called for a cancelled job. Must be quick and must not call the pool
  /// for this job. Null: nothing.
  void (*on_done)(FillJob& job, void* context) = nullptr;
  /// Passed to on_done.
  void* context = nullptr;

  FillJob() = default;
  FillJob(const FillJob&) = delete;
  FillJob& operator=(const FillJob&) = delete;

  /// Nanoseconds spent copying this job's slices, summed over the threads that copied them
  /// (meaningful once done()).
  [[nodiscard]] uint64_t busy_ns() const noexcept {
    return busy_ns_.load(std::memory_order_relaxed);
  }
  /// The method the slices were copied with (never Auto once submitted).
  [[nodiscard]] FillMethod resolved_method() const noexcept { return resolved_; }

 private:
  friend class FillPool;
  // Set by submit (under the pool's lock or before the job is visible to any thread).
  uint64_t slice_ = 0;
  uint64_t slices_ = 0;
  FillMethod resolved_ = FillMethod::Memcpy;
  // Guarded by the pool's lock.
  uint64_t claimed_ = 0;
  bool linked_ = false;
  FillJob* prev_ = nullptr;
  FillJob* next_ = nullptr;
  // Shared without the lock.
  std::atomic<uint64_t> finished_{0};  // slices copied or cancelled
  std::atomic<uint64_t> busy_ns_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{true};  // true before the first submit and once complete
};

/// What a FillPool has done since it was created. Plain data; a diagnostic.
struct FillPoolStats {
  unsigned threads = 0;          ///< threads of the pool
  unsigned pinned_threads = 0;   ///< of which the pinning asked for took effect
  uint64_t jobs = 0;             ///< jobs submitted
  uint64_t slices = 0;           ///< slices copied, by pool threads and submitters
  uint64_t bytes = 0;            ///< bytes copied (slices), by pool threads and submitters
  uint64_t helped_slices = 0;    ///< of the slices, those copied by submitters (wait, help)
  uint64_t helped_bytes = 0;     ///< and their bytes
  uint64_t memcpy_bytes = 0;     ///< bytes copied with Memcpy
  uint64_t memcpy_ns = 0;        ///< time spent copying them, summed over threads
  uint64_t streaming_bytes = 0;  ///< bytes copied with Streaming
  uint64_t streaming_ns = 0;     ///< time spent copying them, summed over threads
  uint64_t sleeps = 0;           ///< times a pool thread went to sleep for lack of work
  uint64_t wakeups = 0;  ///< threads woken by submit (a submit finding threads looking wakes none)
  uint64_t cancelled_slices = 0;  ///< slices dropped by cancel()
};

/// FillPoolStats' counters, in declaration order.
constexpr auto counters_of(std::type_identity<FillPoolStats>) noexcept {
  using S = FillPoolStats;
  constexpr CounterUnit bytes = CounterUnit::Bytes;
  return std::tuple{
      counter("threads", "threads", &S::threads),
      counter("pinned_threads", "pinned threads", &S::pinned_threads),
      counter("jobs", "jobs", &S::jobs),
      counter("slices", "slices copied", &S::slices),
      counter("bytes", "bytes copied", &S::bytes, bytes),
      counter("helped_slices", "slices copied by submitters", &S::helped_slices),
      counter("helped_bytes", "bytes copied by submitters", &S::helped_bytes, bytes),
      counter("memcpy_bytes", "bytes copied with memcpy", &S::memcpy_bytes, bytes),
      counter("memcpy_ns", "memcpy time (ns)", &S::memcpy_ns, CounterUnit::Nanoseconds),
      counter("streaming_bytes", "bytes copied with streaming stores", &S::streaming_bytes, bytes),
      counter("streaming_ns", "streaming time (ns)", &S::streaming_ns, CounterUnit::Nanoseconds),
      counter("sleeps", "sleeps", &S::sleeps),
      counter("wakeups", "wake-ups", &S::wakeups),
      counter("cancelled_slices", "slices cancelled", &S::cancelled_slices)};
}
static_assert(counters_complete<FillPoolStats>(), "FillPoolStats: counters_of is stale");

/// See the file comment.
///
/// Ownership: owns its threads; made by create() and shared (std::shared_ptr) by its submitters.
/// The destructor lets the threads copy what is queued, then joins them; no job may be waited
/// for then. Threading: every member function is safe from any thread, concurrently; a given
/// job is submitted, waited for and cancelled by one thread at a time.
class FillPool {
 public:
  /// Starts config.threads threads, pinned as asked. Errors: InvalidConfig, ThreadStartFailed.
  static Expected<std::shared_ptr<FillPool>, FillPoolError> create(const FillPoolConfig& config);
  /// Copies what is queued, stops and joins the threads.
  ~FillPool();
  FillPool(const FillPool&) = delete;
  FillPool& operator=(const FillPool&) = delete;

  /// Queues `job` (bytes > 0, not queued now) behind every job queued before it. Wakes sleeping
  /// threads (as many as the job has slices) only when no thread is looking for work.
  void submit(FillJob& job);
  /// Queues several jobs in order, with one wake-up.
  void submit(std::span<FillJob* const> jobs);
  /// True once every slice of `job` has been copied (or cancelled) and its on_done has returned;
  /// the job's bytes are then visible to the caller. Never blocks.
  [[nodiscard]] bool done(const FillJob& job) const noexcept {
    return job.done_.load(std::memory_order_acquire);
  }
  /// Copies one unclaimed slice of `job` on the calling thread; false when none is left (the job
  /// may still be in progress on other threads).
  bool help_one(FillJob& job);
  /// Copies unclaimed slices of `job` on the calling thread until none is left.
  void help(FillJob& job);
  /// Returns once done(job): helps (copies its unclaimed slices), then waits for the slices other
  /// threads are copying — looking for a moment, then sleeping.
  void wait(FillJob& job);
  /// As wait() for at most `timeout` (helping included); true when done(job).
  bool wait_for(FillJob& job, Duration timeout);
  /// Drops `job`'s unclaimed slices and waits for those being copied: afterwards no thread
  /// touches the job, its source or its destination, and done(job) is true. A job that is done
  /// already: nothing.
  void cancel(FillJob& job);

  /// Threads of the pool.
  [[nodiscard]] unsigned threads() const noexcept { return static_cast<unsigned>(threads_.size()); }
  /// The configuration it was created with (topology: null).
  [[nodiscard]] const FillPoolConfig& config() const noexcept { return config_; }
  /// A snapshot of the counters.
  [[nodiscard]] FillPoolStats stats() const;

 private:
  struct Slice {
    FillJob* job = nullptr;
    uint64_t index = 0;
  };
  struct alignas(64) Counters {
    std::atomic<uint64_t> slices{0}, bytes{0}, memcpy_bytes{0}, memcpy_ns{0}, streaming_bytes{0},
        streaming_ns{0};
  };
  explicit FillPool(const FillPoolConfig& config);
  void run(unsigned index, std::vector<int> cpus) noexcept;
  bool claim_locked(FillJob* only, Slice& out);
  void unlink_locked(FillJob& job);
  void copy_slice(const Slice& s, Counters& counters) noexcept;
  void finish(FillJob& job, uint64_t slices) noexcept;
  void block_until_done(FillJob& job);
  bool look_for_work() noexcept;
  void stop_threads() noexcept;

  FillPoolConfig config_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  FillJob* head_ = nullptr;  // jobs with unclaimed slices, FIFO (guarded by mu_)
  FillJob* tail_ = nullptr;
  unsigned sleepers_ = 0;               // guarded by mu_
  bool stop_ = false;                   // guarded by mu_
  std::atomic<uint64_t> unclaimed_{0};  // slices queued and not claimed (written under mu_)
  std::atomic<bool> stopping_{false};

  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::atomic<int> blocked_waiters_{0};

  std::vector<std::unique_ptr<Counters>> counters_;  // one per thread
  Counters helper_counters_;                         // submitters' slices
  std::atomic<uint64_t> jobs_{0}, sleeps_{0}, wakeups_{0}, cancelled_slices_{0};
  std::atomic<unsigned> pinned_{0};
  std::vector<std::thread> threads_;
};

}  // namespace staging
