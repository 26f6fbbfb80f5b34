// FillPool: CPU threads that copy host bytes into staging memory in parallel, shared by every
// uploader (and every device) that gives it work.
//
// A submitter describes a piece of staging memory to fill as a FillJob (destination, source,
// bytes, method). The pool splits it into slices (whole 4 KiB pages, so no two threads write the
// same cache line) and its threads take slices from the oldest job first, since it is the next to
// be copied to a device. Jobs queue in lanes, one per submitter that asks for its own
// (new_lane(): one per device's uploader, say); threads serve the lanes that have work in turn,
// slice by slice, so one device's long queue never holds back another's next piece. The submitter
// fills too: wait() copies the job's unclaimed slices on the calling thread before it waits for the
// slices other threads hold.
//
//   lane 0 (device 0): [a0: s0 s1 s2 s3][a1: s0 s1 ...]     threads: a0.s0, b0.s0, a0.s1, b0.s1 ...
//   lane 1 (device 1): [b0: s0 s1 ...]
//
// What a claim costs: a few instructions under a SpinLock (spin_lock.hpp) — a waiting thread
// never sleeps in the kernel, so a dozen threads claiming at once cannot form a convoy of
// wake-ups. Idle threads look for work for a moment (FillPoolConfig::spin) before they sleep, and
// for longer (held_spin) while a submitter holds the pool (hold(): an upload in progress whose
// next pieces are coming), so a pipeline never pays a wake-up per piece. Sleeping threads are
// woken by submit() (one futex call); the pool measures how long they take to run again
// (wake_latency()), so that a submitter can fill a small job itself instead of waiting for them.
//
// One pool is the CPU budget of all its submitters: several uploaders (one per GPU) that share a
// pool share its threads, instead of each starting its own and oversubscribing the cores.
// Threads can be kept on one NUMA node (the one a GPU's PCIe root belongs to) and pinned one per
// physical core (ThreadPinning); host_topology.hpp reads the host's layout.
//
// GPU-free: the threads only copy memory (copy_to_staging, below).
#pragma once

#include <array>
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
#include <utility>
#include <vector>

#include "staging/core/expected.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/atomic_counters.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/fill_lanes.hpp"
#include "staging/detail/core/host_topology.hpp"
#include "staging/detail/core/spin_lock.hpp"

namespace staging {

// Copying host bytes into staging memory: the routine the fill threads run (fill_pool.hpp), public
// for producers that write staging memory themselves (from a decompressor's output, a file buffer).
//
// Staging memory is written once by the CPU and read by the GPU's DMA engine, never by this CPU
// again. Two ways to write it:
//  - Memcpy: plain stores through the caches. Fastest when the staging memory is already in the
//    CPU's last-level cache (a ring smaller than the cache that an upload cycles through): no DRAM
//    round trip, and the DMA engine reads the lines from the cache.
//  - Streaming: non-temporal stores that bypass the caches. Fastest when the staging memory is
//    not cached: no read-for-ownership of every destination line, one DRAM write per byte.
// Which one wins depends on the host and on the upload; docs/cuda.md shows where they cross.

/// How bytes are copied into staging memory.
enum class FillMethod : uint8_t {
  /// Chosen by whoever runs the copy: the Uploader per upload (see its FillMethod documentation);
  /// copy_to_staging() and a FillJob without another choice: Streaming on x86-64, Memcpy
  /// elsewhere.
  Auto,
  /// std::memcpy.
  Memcpy,
  /// Non-temporal (streaming) stores, AVX2 when the CPU has it, else SSE2; fenced before the copy
  /// returns. x86-64 only (Memcpy elsewhere).
  Streaming,
};

/// Names of FillMethod's values, in order, as the tools spell them (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<FillMethod>) noexcept {
  return std::to_array<std::string_view>({"auto", "memcpy", "streaming"});
}
static_assert(enum_names_complete<FillMethod>(), "FillMethod: a value has no name");

/// The method copy_to_staging() runs for `method` on this machine and build: Auto becomes
/// Streaming on x86-64 and Memcpy elsewhere; Streaming becomes Memcpy where it is not available
/// (non-x86-64); Memcpy stays Memcpy. Never returns Auto.
[[nodiscard]] FillMethod resolve_fill_method(FillMethod method) noexcept;

/// Copies `bytes` from `src` to `dst` (the ranges must not overlap; any alignment) by `method`.
/// Streaming stores are fenced before return (sfence): the bytes are visible to any thread (and
/// DMA engine) that synchronises with this one afterwards. Copies under 512 bytes use memcpy
/// whatever the method. `bytes` may be 0 (nothing is copied; the pointers must still be valid).
/// Threading: reentrant.
void copy_to_staging(std::byte* dst, const std::byte* src, std::size_t bytes,
                     FillMethod method = FillMethod::Auto) noexcept;

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
  /// As `spin`, while some submitter holds the pool (FillPool::hold(): an upload in progress that
  /// will submit more pieces, after a wait for ring room, say). Taken as at least `spin`.
  Duration held_spin = std::chrono::milliseconds(2);
  /// The host layout to pin by; null reads it (HostTopology::read()). Only read by create().
  const HostTopology* topology = nullptr;
};

/// Why FillPool::create made no pool.
enum class FillPoolError : uint8_t {
  /// A negative spin or held_spin.
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
  /// The lane the job queues in (FillPool::new_lane(); any value, taken modulo the lane count).
  /// Jobs of one lane are served in submission order; lanes with work are served in turn.
  unsigned lane = 0;
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
  unsigned lane_index_ = 0;
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
  uint64_t unwoken_jobs = 0;      ///< jobs submitted with wake = false
  uint64_t wake_samples = 0;      ///< wake-ups timed: from submit's wake call until the thread ran
  uint64_t wake_ns = 0;           ///< their total time
  uint64_t wake_max_ns = 0;       ///< the longest of them
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
      counter("cancelled_slices", "slices cancelled", &S::cancelled_slices),
      counter("unwoken_jobs", "jobs submitted without waking threads", &S::unwoken_jobs),
      counter("wake_samples", "wake-ups timed", &S::wake_samples),
      counter("wake_ns", "wake-up time (ns)", &S::wake_ns, CounterUnit::Nanoseconds),
      counter("wake_max_ns", "longest wake-up (ns)", &S::wake_max_ns, CounterUnit::Nanoseconds)};
}
static_assert(counters_complete<FillPoolStats>(), "FillPoolStats: counters_of is stale");

/// See the file comment.
///
/// Ownership: owns its threads; made by create() and shared (std::shared_ptr) by its submitters.
/// The destructor lets the threads copy what is queued, then joins them; no job may be waited
/// for then, and no Hold may outlive the pool. Threading: every member function is safe from any
/// thread, concurrently; a given job is submitted, waited for and cancelled by one thread at a
/// time.
class FillPool {
 public:
  /// Starts config.threads threads, pinned as asked. Errors: InvalidConfig, ThreadStartFailed.
  static Expected<std::shared_ptr<FillPool>, FillPoolError> create(const FillPoolConfig& config);
  /// Copies what is queued, stops and joins the threads.
  ~FillPool();
  FillPool(const FillPool&) = delete;
  FillPool& operator=(const FillPool&) = delete;

  /// Queues `job` (bytes > 0, not queued now) behind every job of its lane queued before it.
  /// Wakes sleeping threads (as many as the job has slices) unless `wake` is false: then only
  /// threads already looking for work may take its slices, and wait() fills the rest (for a job
  /// the submitter fills faster than a wake-up takes; see wake_latency()).
  void submit(FillJob& job, bool wake = true);
  /// Queues several jobs in order, with one wake-up call.
  void submit(std::span<FillJob* const> jobs, bool wake = true);
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
  /// threads are copying — looking for a moment (FillPoolConfig::spin, or held_spin while the pool
  /// is held), then sleeping.
  void wait(FillJob& job);
  /// As wait() for at most `timeout` (helping included); true when done(job).
  bool wait_for(FillJob& job, Duration timeout);
  /// Drops `job`'s unclaimed slices and waits for those being copied: afterwards no thread
  /// touches the job, its source or its destination, and done(job) is true. A job that is done
  /// already: nothing.
  void cancel(FillJob& job);

  /// A lane for one submitter's jobs (FillJob::lane): successive calls give successive lanes,
  /// wrapping after the pool's lane count (16), so up to 16 submitters never share one.
  [[nodiscard]] unsigned new_lane() noexcept {
    return next_lane_.fetch_add(1, std::memory_order_relaxed) % kLanes;
  }

  /// Keeps idle threads looking for work (FillPoolConfig::held_spin instead of spin) while it
  /// lives. Move-only; releasing it (destruction) ends its effect. Threading: any thread; several
  /// may be alive at once (one per upload in progress, say).
  class Hold {
   public:
    /// A hold on no pool (no effect).
    Hold() = default;
    /// Takes `other`'s hold; `other` then holds nothing.
    Hold(Hold&& other) noexcept : pool_(std::exchange(other.pool_, nullptr)) {}
    /// Releases this hold, then takes `other`'s.
    Hold& operator=(Hold&& other) noexcept {
      if (this != &other) {
        release();
        pool_ = std::exchange(other.pool_, nullptr);
      }
      return *this;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    /// Releases the hold.
    ~Hold() { release(); }

   private:
    friend class FillPool;
    explicit Hold(FillPool* pool) noexcept : pool_(pool) {
      pool_->holds_.fetch_add(1, std::memory_order_relaxed);
    }
    void release() noexcept {
      if (pool_ != nullptr) pool_->holds_.fetch_sub(1, std::memory_order_relaxed);
      pool_ = nullptr;
    }
    FillPool* pool_ = nullptr;
  };
  /// See Hold. The pool must outlive it.
  [[nodiscard]] Hold hold() noexcept { return Hold(this); }

  /// Holds alive now (a snapshot): the uploads in progress that share the pool's threads.
  [[nodiscard]] unsigned holds() const noexcept {
    const int n = holds_.load(std::memory_order_relaxed);
    return n > 0 ? static_cast<unsigned>(n) : 0u;
  }
  /// Threads of the pool.
  [[nodiscard]] unsigned threads() const noexcept { return static_cast<unsigned>(threads_.size()); }
  /// Threads not asleep now (looking for work or copying): those a job submitted now gets
  /// without waking anyone. A snapshot.
  [[nodiscard]] unsigned awake() const noexcept {
    const unsigned sleeping = sleepers_.load(std::memory_order_relaxed);
    return sleeping >= threads() ? 0 : threads() - sleeping;
  }
  /// How long a sleeping thread has taken, on average, from submit's wake-up call until it ran
  /// again (zero before the first wake-up was timed). What waking threads for a job costs.
  [[nodiscard]] Duration wake_latency() const noexcept {
    return Duration(static_cast<Duration::rep>(wake_avg_ns_.load(std::memory_order_relaxed)));
  }
  /// The CPUs each thread was given (empty: not pinned), by thread.
  [[nodiscard]] const std::vector<std::vector<int>>& placement() const noexcept {
    return placement_;
  }
  /// The configuration it was created with (topology: null).
  [[nodiscard]] const FillPoolConfig& config() const noexcept { return config_; }
  /// A snapshot of the counters.
  [[nodiscard]] FillPoolStats stats() const;

  /// Lanes (FillJob::lane is taken modulo this).
  static constexpr unsigned kLanes = 16;

 private:
  using Slice = detail::FillSlice;
  using S = FillPoolStats;
  // One thread's copy counters (a cache line of its own: only that thread adds to them).
  using Counters =
      detail::CacheLinePadded<AtomicCounters<S, &S::slices, &S::bytes, &S::memcpy_bytes,
                                             &S::memcpy_ns, &S::streaming_bytes, &S::streaming_ns>>;
  using Lane = detail::FillLane;
  explicit FillPool(const FillPoolConfig& config);
  void run(unsigned index) noexcept;
  bool claim_locked(FillJob* only, Slice& out);
  void unlink_locked(FillJob& job);
  void copy_slice(const Slice& s, Counters& counters) noexcept;
  void finish(FillJob& job, uint64_t slices) noexcept;
  void block_until_done(FillJob& job);
  bool look_for_work() noexcept;
  Duration spin_limit() const noexcept;  // held_spin while held, else spin
  void sleep() noexcept;
  void note_wake(uint64_t ns) noexcept;
  void stop_threads() noexcept;

  FillPoolConfig config_;
  std::vector<std::vector<int>> placement_;

  // The queue: lanes of jobs with unclaimed slices. Guarded by mu_.
  SpinLock mu_;
  std::array<Lane, kLanes> lanes_{};
  uint32_t busy_lanes_ = 0;             // bit i: lane i has a job
  unsigned turn_ = 0;                   // the lane served next when it has work
  std::atomic<uint64_t> unclaimed_{0};  // slices queued and not claimed (written under mu_)
  std::atomic<unsigned> next_lane_{0};

  // Sleeping: a thread sleeps on epoch_ (std::atomic::wait: a futex, no mutex to re-take when
  // woken); submit bumps it and notifies.
  std::atomic<uint32_t> epoch_{0};
  std::atomic<unsigned> sleepers_{0};
  std::atomic<int64_t> wake_stamp_ns_{0};  // when the latest wake-up call was made
  std::atomic<uint64_t> wake_avg_ns_{0};
  std::atomic<int> holds_{0};
  std::atomic<bool> stopping_{false};

  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::atomic<int> blocked_waiters_{0};

  std::vector<std::unique_ptr<Counters>> counters_;  // one per thread
  Counters helper_counters_;                         // submitters' slices
  AtomicCounters<S, &S::jobs, &S::sleeps, &S::wakeups, &S::cancelled_slices, &S::unwoken_jobs,
                 &S::wake_samples, &S::wake_ns, &S::wake_max_ns>
      pool_counters_;
  std::atomic<unsigned> pinned_{0};
  std::vector<std::thread> threads_;
};

}  // namespace staging
