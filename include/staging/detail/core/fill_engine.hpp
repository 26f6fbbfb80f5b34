// FillEngine: a FillPool's lanes, threads and jobs — what an uploader or a streamer submits its
// fill jobs to (detail::engine_of(pool)). Users never name it: they make a FillPool and hand it
// over. See fill_pool.hpp's file comment for how the engine serves lanes, spins and sleeps.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "staging/core/errors.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/atomic_counters.hpp"
#include "staging/detail/core/fill_lanes.hpp"
#include "staging/detail/core/host_topology.hpp"
#include "staging/detail/core/spin_lock.hpp"

namespace staging::detail {

/// One piece of staging memory to fill: `bytes` from `src` to `dst`. Submitted to a FillEngine.
///
/// Ownership: the submitter's. It must stay alive and unmoved from FillEngine::submit until done()
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
  /// The lane the job queues in (FillEngine::new_lane(); any value, taken modulo the lane count).
  /// Jobs of one lane are served in submission order; lanes with work are served in turn.
  unsigned lane = 0;
  /// The most pool threads that copy slices of this job's lane at once while this job is the
  /// lane's oldest with unclaimed slices (0: no limit). The submitter helping (help(), wait()) is
  /// not counted. For a fill that should not outrun what consumes it: past the rate the consumer
  /// reads at, more threads only take memory bandwidth from it (a copy engine reading the same
  /// memory). The limit counts every pool thread copying a slice of the lane that was claimed
  /// under a limit (an earlier job's too). Threads over it take other lanes' work, else look for
  /// a moment (FillPoolConfig::spin, held_spin while held) and then sleep until a slot frees or
  /// work is submitted. submit() still wakes as many sleeping threads as the job has slices.
  unsigned max_threads = 0;
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
  friend class FillEngine;
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

/// A FillPool's engine: its lanes, threads and jobs (see fill_pool.hpp's file comment).
///
/// Ownership: owned by its FillPool (detail::engine_of() reaches it). The destructor lets the
/// threads copy what is queued, then joins them; no job may be waited for then, and no Hold may
/// outlive the engine. Threading: every member function is safe from any
/// thread, concurrently; a given job is submitted, waited for and cancelled by one thread at a
/// time.
class FillEngine {
 public:
  /// Starts config.threads threads, pinned as asked. Errors: InvalidConfig, ThreadStartFailed.
  static Expected<std::unique_ptr<FillEngine>, CreateError> create(
      const FillPoolConfig& config, const HostTopology* topology = nullptr);
  /// Copies what is queued, stops and joins the threads.
  ~FillEngine();
  FillEngine(const FillEngine&) = delete;
  FillEngine& operator=(const FillEngine&) = delete;

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
  /// Copies one unclaimed slice of `job` (from its lane or from the open window) on the calling
  /// thread; false when none is left (the job may still be in progress on other threads).
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

  /// A lane for one submitter's jobs (FillJob::lane): the lane the fewest submitters hold now
  /// (the lowest on a tie), so up to 16 submitters alive at once never share one, however many
  /// came and went before. A submitter gives its lane back with release_lane() when it is done.
  [[nodiscard]] unsigned new_lane() noexcept {
    std::lock_guard lock(mu_);
    const auto fewest = std::min_element(lane_users_.begin(), lane_users_.end());
    ++*fewest;
    return static_cast<unsigned>(fewest - lane_users_.begin());
  }
  /// Gives back a lane new_lane() returned (once per call of new_lane()).
  void release_lane(unsigned lane) noexcept {
    std::lock_guard lock(mu_);
    unsigned& users = lane_users_[lane % kLanes];
    STAGING_ASSERT(users > 0, "FillEngine::release_lane() of a lane nobody holds");
    if (users > 0) --users;
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
    friend class FillEngine;
    explicit Hold(FillEngine* pool) noexcept : pool_(pool) {
      pool_->holds_.fetch_add(1, std::memory_order_relaxed);
    }
    void release() noexcept {
      if (pool_ != nullptr) pool_->holds_.fetch_sub(1, std::memory_order_relaxed);
      pool_ = nullptr;
    }
    FillEngine* pool_ = nullptr;
  };
  /// See Hold. The pool must outlive it.
  [[nodiscard]] Hold hold() noexcept { return Hold(this); }

  /// Holds alive now (a snapshot): the uploads in progress that share the pool's threads.
  [[nodiscard]] unsigned holds() const noexcept {
    const int n = holds_.load(std::memory_order_relaxed);
    return n > 0 ? static_cast<unsigned>(n) : 0u;
  }
  /// Pool threads copying a slice of `lane` (taken modulo kLanes) that counts against a
  /// FillJob::max_threads limit now (a snapshot).
  [[nodiscard]] unsigned lane_threads(unsigned lane) const noexcept {
    return lane_threads_[lane % kLanes].load(std::memory_order_relaxed);
  }
  /// The most pool threads ever copying counted slices of `lane` at once (taken modulo kLanes):
  /// never above the limit of the jobs that were its oldest meanwhile.
  [[nodiscard]] unsigned lane_peak(unsigned lane) const {
    std::lock_guard lock(mu_);
    return lane_peak_[lane % kLanes];
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
  using Slice = FillSlice;
  using S = FillPoolStats;
  // One thread's copy counters (a cache line of its own: only that thread adds to them).
  using Counters =
      CacheLinePadded<AtomicCounters<S, &S::slices, &S::bytes, &S::memcpy_bytes, &S::memcpy_ns,
                                     &S::streaming_bytes, &S::streaming_ns>>;
  using Lane = FillLane;
  explicit FillEngine(const FillPoolConfig& config);
  void run(unsigned index) noexcept;
  // `capped` (when given) is set when no slice was claimed although lanes have work: each is at
  // its thread limit.
  bool claim_locked(FillJob* only, Slice& out, bool* capped = nullptr);
  // Whether a pool thread may take a slice of lane `l` now (its oldest job's max_threads).
  bool lane_open_locked(unsigned l) const noexcept;
  // A pool thread found work, but every lane that has some at its limit: waits for a slot.
  void wait_for_slot(uint32_t seen) noexcept;
  // Moves slot_epoch_ on and wakes the threads waiting at a limit (all, or one for one freed slot).
  void bump_slots(bool all) noexcept;
  void unlink_locked(FillJob& job);
  // The open window (see open_): opens one for the oldest job of the only lane with work (its
  // unclaimed slices, unlinked from the lane) when that is allowed; claims one of its slices (of
  // `only` when given) without the lock.
  void open_window_locked();
  // Puts what is left of the window back in its job's lane (at the head: it was the oldest).
  void return_window_locked();
  bool claim_open(FillJob* only, Slice& out) noexcept;
  // Drops what is left of `job`'s window, if it has one; the slices dropped.
  uint64_t close_window(FillJob& job) noexcept;
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

  // The open window: the unclaimed slices of one job, claimed by a compare-and-swap on this word
  // instead of under mu_, so that a dozen threads starting on a job do not queue for the lock
  // one slice at a time (each hand-off of a contended lock moves its cache line to every waiter).
  // The word packs the job's address (>> 3) above the slices still unclaimed in it (the low 16
  // bits; fill_pool.cpp's window_* helpers); 0 slices: no window. A thread that wins the swap from
  // n > 0 owns slice `slices_ - n` of that job: the job cannot complete, so it stays alive, until
  // that slice is copied. Opened under mu_ (by submit, by a pool thread's claim under the lock, and
  // by the thread that takes a window's last slice while slices are queued) for the oldest job of
  // the only lane with work, when that job has no thread limit and two slices or more; the job then
  // leaves its lane. Emptied by claims and cancel(); returned to its lane (what is left of it) when
  // a submit gives another lane work, so that lanes are still served in turn. Its slices stay
  // counted in unclaimed_ until claimed.
  alignas(64) std::atomic<uint64_t> open_{0};
  uint32_t window_lane_bit_ = 0;  // the window's job's lane (bit), 0: none (guarded by mu_)
  // The queue: lanes of jobs with unclaimed slices. Guarded by mu_.
  alignas(64) mutable SpinLock mu_;
  std::array<Lane, kLanes> lanes_{};
  uint32_t busy_lanes_ = 0;                    // bit i: lane i has a job
  unsigned turn_ = 0;                          // the lane served next when it has work
  std::atomic<uint64_t> unclaimed_{0};         // slices queued and not claimed (raised under mu_)
  std::array<unsigned, kLanes> lane_users_{};  // submitters holding each lane (guarded by mu_)
  // Pool threads copying a counted slice of each lane (FillJob::max_threads): raised under mu_,
  // lowered when the copy ends. slot_epoch_ moves on at each such end, each submit and at stop:
  // what a thread waiting at a limit watches (slot_waiters_ of them asleep on it).
  std::array<std::atomic<unsigned>, kLanes> lane_threads_{};
  std::atomic<uint32_t> slot_epoch_{0};
  std::atomic<unsigned> slot_waiters_{0};
  std::array<unsigned, kLanes> lane_peak_{};  // guarded by mu_

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

}  // namespace staging::detail
