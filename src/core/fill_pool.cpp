// FillPool: lanes of jobs with unclaimed slices under a SpinLock, and the open window (one job's
// slices claimed by compare-and-swap while one lane has work); threads that look for work for a
// moment (longer while a submitter holds the pool) before they sleep on a futex; submitters that
// fill their own jobs while they wait.
#include "staging/core/fill_pool.hpp"

#include <algorithm>
#include <bit>
#include <system_error>

#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/fill_engine.hpp"

namespace staging {
namespace {

using SteadyTime = std::chrono::steady_clock;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMinAutoSlice = uint64_t{32} << 10;
// The largest slice an automatic split makes: a thread preempted in the middle of a slice holds
// back its job by at most this much copying.
constexpr uint64_t kMaxAutoSlice = uint64_t{256} << 10;

uint64_t round_up_page(uint64_t n) {
  return std::max(kPage, (n + kPage - 1) / kPage * kPage);
}

uint64_t nanoseconds(SteadyTime::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyTime::now().time_since_epoch())
      .count();
}

// Looks until `ready()` or `limit()` has passed since the start, spinning on `ready()` with a
// pause between looks and yielding the CPU every so often: with no other thread to run a yield
// returns at once; on a host with more runnable threads than CPUs, a thread that only looks gives
// way instead of using up its share (and being preempted later inside a slice others wait for).
template <class Ready, class Limit>
bool spin_until(Ready ready, Limit limit) {
  if (ready()) return true;
  const auto start = SteadyTime::now();
  for (unsigned i = 1;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 0) {
      if (SteadyTime::now() - start >= limit()) return ready();
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
}

// The open window's word (fill_engine.hpp, FillEngine::open_): a job's address, shifted right by
// 3 (a FillJob is at least 8-aligned), above kWindowBits bits of slices left.
constexpr unsigned kWindowBits = 16;
constexpr uint64_t kWindowMost = (uint64_t{1} << kWindowBits) - 1;  // also the mask of the count

// The slices left in a window word.
uint64_t window_left(uint64_t word) {
  return word & kWindowMost;
}

// The job a window word names, with no slices left (what a word of `job` is compared with).
uint64_t window_key(const detail::FillJob& job) {
  return (uint64_t{reinterpret_cast<std::uintptr_t>(&job)} >> 3) << kWindowBits;
}

// Whether `job`'s address fits a window word.
bool fits_window(const detail::FillJob& job) {
  const uint64_t address = reinterpret_cast<std::uintptr_t>(&job);
  return (address & 7) == 0 && (address >> (64 - kWindowBits + 3)) == 0;
}

// The job a window word names.
detail::FillJob* window_job(uint64_t word) {
  return reinterpret_cast<detail::FillJob*>(
      static_cast<std::uintptr_t>((word >> kWindowBits) << 3));
}

}  // namespace

FillPool::FillPool(std::unique_ptr<detail::FillEngine> engine) noexcept
    : engine_(std::move(engine)) {}

FillPool::~FillPool() = default;

Expected<std::shared_ptr<FillPool>, CreateError> FillPool::create(const FillPoolConfig& config) {
  return create_with(config, nullptr);
}

Expected<std::shared_ptr<FillPool>, CreateError> FillPool::create_with(
    const FillPoolConfig& config, const HostTopology* topology) {
  Expected<std::unique_ptr<detail::FillEngine>, CreateError> engine =
      detail::FillEngine::create(config, topology);
  if (!engine) return unexpected(engine.error());
  return std::shared_ptr<FillPool>(new FillPool(std::move(*engine)));
}

unsigned FillPool::threads() const noexcept {
  return engine_->threads();
}

const std::vector<std::vector<int>>& FillPool::placement() const noexcept {
  return engine_->placement();
}

const FillPoolConfig& FillPool::config() const noexcept {
  return engine_->config();
}

FillPoolStats FillPool::stats() const {
  return engine_->stats();
}

namespace detail {

FillEngine& engine_of(FillPool& pool) noexcept {
  return *pool.engine_;
}

Expected<std::shared_ptr<FillPool>, CreateError> create_fill_pool(const FillPoolConfig& config,
                                                                  const HostTopology& topology) {
  return FillPool::create_with(config, &topology);
}

FillEngine::FillEngine(const FillPoolConfig& config) : config_(config) {
  config_.held_spin = std::max(config_.held_spin, config_.spin);
}

Expected<std::unique_ptr<FillEngine>, CreateError> FillEngine::create(const FillPoolConfig& config,
                                                                      const HostTopology* given) {
  if (config.spin < Duration::zero() || config.held_spin < Duration::zero()) {
    return unexpected(CreateError::InvalidConfig);
  }
  std::unique_ptr<FillEngine> pool(new FillEngine(config));

  // The CPUs each thread may run on (empty: not pinned).
  pool->placement_.resize(config.threads);
  if (config.pinning != ThreadPinning::None && config.threads > 0) {
    const HostTopology topology = given != nullptr ? *given : HostTopology::read();
    const bool on_node = config.numa_node >= 0 && topology.node(config.numa_node) != nullptr;
    const std::vector<int> cpus = topology.cpus(on_node ? config.numa_node : -1);
    for (unsigned i = 0; i < config.threads && !cpus.empty(); ++i) {
      if (config.pinning == ThreadPinning::Core) {
        pool->placement_[i] = {cpus[i % cpus.size()]};
      } else if (on_node) {
        pool->placement_[i] = cpus;  // Node pinning on the whole host would restrict nothing
      }
    }
  }

  pool->counters_.reserve(config.threads);
  for (unsigned i = 0; i < config.threads; ++i)
    pool->counters_.push_back(std::make_unique<Counters>());
  try {
    pool->threads_.reserve(config.threads);
    for (unsigned i = 0; i < config.threads; ++i) {
      FillEngine* raw = pool.get();
      pool->threads_.emplace_back([raw, i]() { raw->run(i); });
    }
  } catch (const std::system_error&) {
    pool->stop_threads();
    return unexpected(CreateError::ThreadStartFailed);
  } catch (const std::bad_alloc&) {
    pool->stop_threads();
    return unexpected(CreateError::ThreadStartFailed);
  }
  return pool;
}

FillEngine::~FillEngine() {
  stop_threads();
}

void FillEngine::stop_threads() noexcept {
  stopping_.store(true, std::memory_order_seq_cst);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  epoch_.notify_all();
  bump_slots(/*all=*/true);
  for (auto& t : threads_)
    t.join();
  threads_.clear();
}

void FillEngine::submit(FillJob& job, bool wake) {
  FillJob* one = &job;
  submit(std::span<FillJob* const>(&one, 1), wake);
}

void FillEngine::submit(std::span<FillJob* const> jobs, bool wake) {
  if (jobs.empty()) return;
  const uint64_t parts = uint64_t{threads()} + 1;
  uint64_t slices = 0;
  for (FillJob* j : jobs) {
    STAGING_ASSERT(j->bytes > 0 && j->dst != nullptr && j->src != nullptr,
                   "FillEngine::submit: an empty job");
    STAGING_ASSERT(j->done_.load(std::memory_order_relaxed),
                   "FillEngine::submit: job still queued");
    j->slice_ = j->slice_bytes != 0 ? round_up_page(j->slice_bytes)
                                    : std::clamp(round_up_page((j->bytes + parts - 1) / parts),
                                                 kMinAutoSlice, kMaxAutoSlice);
    j->slices_ = (j->bytes + j->slice_ - 1) / j->slice_;
    j->resolved_ = resolve_fill_method(j->method);
    j->claimed_ = 0;
    j->finished_.store(0, std::memory_order_relaxed);
    j->busy_ns_.store(0, std::memory_order_relaxed);
    j->cancelled_.store(false, std::memory_order_relaxed);
    j->done_.store(false, std::memory_order_relaxed);
    slices += j->slices_;
  }
  {
    std::lock_guard lock(mu_);
    for (FillJob* j : jobs) {
      const unsigned l = j->lane % kLanes;
      Lane& lane = lanes_[l];
      j->lane_index_ = l;
      j->linked_ = true;
      j->next_ = nullptr;
      j->prev_ = lane.tail;
      (lane.tail != nullptr ? lane.tail->next_ : lane.head) = j;
      lane.tail = j;
      busy_lanes_ |= uint32_t{1} << l;
    }
    // seq_cst: a thread about to sleep raises sleepers_ and then reads this (see sleep()).
    unclaimed_.fetch_add(slices, std::memory_order_seq_cst);
    // Another lane has work now: the window's job goes back to its lane, so that the lanes are
    // served in turn again; else the oldest job may open a window.
    if ((busy_lanes_ & ~window_lane_bit_) != 0) return_window_locked();
    open_window_locked();
  }
  bump_slots(/*all=*/true);  // threads waiting at a lane's limit: this work may be elsewhere
  pool_counters_.add<&S::jobs>(jobs.size());
  if (!wake) {
    pool_counters_.add<&S::unwoken_jobs>(jobs.size());
    return;
  }
  const unsigned sleeping = sleepers_.load(std::memory_order_seq_cst);
  if (sleeping == 0) return;
  pool_counters_.add<&S::wakeups>(std::min<uint64_t>(sleeping, slices));
  wake_stamp_ns_.store(now_ns(), std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  // One system call for the submitter either way: it is the thread whose time matters here.
  if (slices == 1) {
    epoch_.notify_one();
  } else {
    epoch_.notify_all();
  }
}

void FillEngine::unlink_locked(FillJob& job) {
  Lane& lane = lanes_[job.lane_index_];
  (job.prev_ != nullptr ? job.prev_->next_ : lane.head) = job.next_;
  (job.next_ != nullptr ? job.next_->prev_ : lane.tail) = job.prev_;
  job.prev_ = job.next_ = nullptr;
  job.linked_ = false;
  if (lane.head == nullptr) busy_lanes_ &= ~(uint32_t{1} << job.lane_index_);
}

// Claims the next slice of `only` (when given), or of the oldest job of the next lane in turn
// that has one. Caller holds mu_.
bool FillEngine::claim_locked(FillJob* only, Slice& out, bool* capped) {
  FillJob* j = nullptr;
  if (only != nullptr) {
    if (!only->linked_) return false;
    j = only;
  } else {
    // The first lane with work at or after turn_ (rotating the mask so turn_ is bit 0) whose
    // thread limit lets one more in.
    for (uint32_t open = busy_lanes_; open != 0;) {
      const uint32_t rotated = std::rotr(open, static_cast<int>(turn_));
      const unsigned l = (turn_ + static_cast<unsigned>(std::countr_zero(rotated))) % kLanes;
      if (lane_open_locked(l)) {
        turn_ = (l + 1) % kLanes;
        j = lanes_[l].head;
        if (j->max_threads != 0) {
          const unsigned now = lane_threads_[l].fetch_add(1, std::memory_order_relaxed) + 1;
          lane_peak_[l] = std::max(lane_peak_[l], now);
          out.lane = l;
        }
        break;
      }
      open &= ~(uint32_t{1} << l);
    }
    if (j == nullptr) {
      if (capped != nullptr) *capped = busy_lanes_ != 0;
      return false;
    }
  }
  out.job = j;
  out.index = j->claimed_++;
  unclaimed_.fetch_sub(1, std::memory_order_relaxed);
  if (j->claimed_ == j->slices_) unlink_locked(*j);
  if (only == nullptr) open_window_locked();
  return true;
}

void FillEngine::open_window_locked() {
  // Only while one lane has work and the previous window is used up; for the oldest job of that
  // lane, when it has no thread limit.
  if (std::popcount(busy_lanes_) != 1 || window_left(open_.load(std::memory_order_relaxed)) != 0) {
    return;
  }
  FillJob& job = *lanes_[static_cast<unsigned>(std::countr_zero(busy_lanes_))].head;
  const uint64_t left = job.slices_ - job.claimed_;
  // Worth it for two slices or more, when the job's address fits the word.
  if (job.max_threads != 0 || left < 2 || left > kWindowMost || !fits_window(job)) return;
  job.claimed_ = job.slices_;  // the lock's claims end here; the window's begin
  window_lane_bit_ = uint32_t{1} << job.lane_index_;
  unlink_locked(job);
  open_.store(window_key(job) | left, std::memory_order_release);
}

void FillEngine::return_window_locked() {
  uint64_t word = open_.load(std::memory_order_acquire);
  while (window_left(word) != 0) {
    if (!open_.compare_exchange_weak(word, word & ~kWindowMost, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      continue;
    }
    // This thread now holds the window's last slices, the job's highest: the job stays alive,
    // and its claims under the lock resume where the window's ended.
    FillJob* job = window_job(word);
    job->claimed_ = job->slices_ - window_left(word);
    Lane& lane = lanes_[job->lane_index_];  // it was its lane's oldest: back at the head
    job->prev_ = nullptr;
    job->next_ = lane.head;
    (lane.head != nullptr ? lane.head->prev_ : lane.tail) = job;
    lane.head = job;
    job->linked_ = true;
    busy_lanes_ |= uint32_t{1} << job->lane_index_;
    break;
  }
  window_lane_bit_ = 0;
}

bool FillEngine::claim_open(FillJob* only, Slice& out) noexcept {
  uint64_t word = open_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t left = window_left(word);
    if (left == 0) return false;
    FillJob* job = window_job(word);
    if (only != nullptr && job != only) return false;
    if (open_.compare_exchange_weak(word, word - 1, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      // Slice slices_ - left is this thread's: the job stays alive until it is copied.
      out.job = job;
      out.index = job->slices_ - left;
      out.lane = Slice::kUncounted;
      unclaimed_.fetch_sub(1, std::memory_order_relaxed);
      if (left == 1 && unclaimed_.load(std::memory_order_relaxed) > 0) {
        std::lock_guard lock(mu_);
        open_window_locked();
      }
      return true;
    }
  }
}

uint64_t FillEngine::close_window(FillJob& job) noexcept {
  const uint64_t key = window_key(job);
  uint64_t word = open_.load(std::memory_order_acquire);
  while (window_left(word) != 0 && (word & ~kWindowMost) == key) {
    if (open_.compare_exchange_weak(word, key, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      unclaimed_.fetch_sub(window_left(word), std::memory_order_relaxed);
      return window_left(word);
    }
  }
  return 0;
}

bool FillEngine::lane_open_locked(unsigned l) const noexcept {
  const FillJob* head = lanes_[l].head;
  return head->max_threads == 0 ||
         lane_threads_[l].load(std::memory_order_relaxed) < head->max_threads;
}

// Waits until slot_epoch_ moves on from `seen` (read under mu_ before the claim that found every
// lane with work at its limit): a slot freed, work submitted, or the pool stopping. Looks for a
// moment (spin_limit), then sleeps on slot_epoch_. Returns early once no work is queued (the
// thread then idles as any other). A thread that raises slot_waiters_ and then reads the epoch,
// and a bump_slots() that raises the epoch and then reads slot_waiters_ (both seq_cst), cannot
// miss each other.
void FillEngine::wait_for_slot(uint32_t seen) noexcept {
  const auto moved = [&] {
    return slot_epoch_.load(std::memory_order_acquire) != seen ||
           unclaimed_.load(std::memory_order_relaxed) == 0;
  };
  if (spin_until(moved, [&] { return spin_limit(); })) return;
  slot_waiters_.fetch_add(1, std::memory_order_seq_cst);
  if (slot_epoch_.load(std::memory_order_seq_cst) == seen) {
    slot_epoch_.wait(seen, std::memory_order_seq_cst);
  }
  slot_waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void FillEngine::bump_slots(bool all) noexcept {
  slot_epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (slot_waiters_.load(std::memory_order_seq_cst) == 0) return;
  if (all) {
    slot_epoch_.notify_all();
  } else {
    slot_epoch_.notify_one();
  }
}

void FillEngine::copy_slice(const Slice& s, Counters& counters) noexcept {
  FillJob& j = *s.job;
  const uint64_t offset = s.index * j.slice_;
  const uint64_t n = std::min(j.slice_, j.bytes - offset);
  const auto t0 = SteadyTime::now();
  copy_to_staging(j.dst + offset, j.src + offset, static_cast<std::size_t>(n), j.resolved_);
  const uint64_t ns = nanoseconds(SteadyTime::now() - t0);
  j.busy_ns_.fetch_add(ns, std::memory_order_relaxed);
  if (s.lane != Slice::kUncounted) {
    lane_threads_[s.lane].fetch_sub(1, std::memory_order_release);
    bump_slots(/*all=*/false);  // one slot: one waiter may take it
  }
  counters.add<&S::slices>(1);
  counters.add<&S::bytes>(n);
  if (j.resolved_ == FillMethod::Streaming) {
    counters.add<&S::streaming_bytes>(n);
    counters.add<&S::streaming_ns>(ns);
  } else {
    counters.add<&S::memcpy_bytes>(n);
    counters.add<&S::memcpy_ns>(ns);
  }
  finish(j, 1);
}

// Counts `slices` of `job` as finished; the call that finishes the last one completes the job.
// The job may be destroyed by its submitter as soon as done_ is stored: nothing touches it after.
void FillEngine::finish(FillJob& job, uint64_t slices) noexcept {
  // Read before the count: once another thread has finished the last slice, `job` may be gone.
  const uint64_t total = job.slices_;
  if (job.finished_.fetch_add(slices, std::memory_order_acq_rel) + slices != total) return;
  if (job.on_done != nullptr && !job.cancelled_.load(std::memory_order_relaxed)) {
    job.on_done(job, job.context);
  }
  job.done_.store(true, std::memory_order_seq_cst);
  if (blocked_waiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard lock(done_mu_);
    done_cv_.notify_all();
  }
}

bool FillEngine::help_one(FillJob& job) {
  Slice s;
  // A job's slices move between its lane and the window only under the lock: under it, a job
  // that is neither in its lane nor in the window has none left to claim.
  for (;;) {
    if (claim_open(&job, s)) break;
    std::lock_guard lock(mu_);
    if (claim_locked(&job, s)) break;
    const uint64_t word = open_.load(std::memory_order_acquire);
    if ((word & ~kWindowMost) != window_key(job) || window_left(word) == 0) return false;
  }
  copy_slice(s, helper_counters_);
  return true;
}

void FillEngine::help(FillJob& job) {
  while (help_one(job)) {
  }
}

// Sleeps until done(job). The completing thread stores done_ then reads blocked_waiters_; this
// thread raises blocked_waiters_ then reads done_ (both seq_cst): one of them sees the other.
void FillEngine::block_until_done(FillJob& job) {
  if (done(job)) return;
  blocked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock lock(done_mu_);
    done_cv_.wait(lock, [&] { return job.done_.load(std::memory_order_seq_cst); });
  }
  blocked_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

Duration FillEngine::spin_limit() const noexcept {
  return holds_.load(std::memory_order_relaxed) > 0 ? config_.held_spin : config_.spin;
}

void FillEngine::wait(FillJob& job) {
  help(job);
  if (spin_until([&] { return done(job); }, [&] { return spin_limit(); })) return;
  block_until_done(job);
}

bool FillEngine::wait_for(FillJob& job, Duration timeout) {
  const auto deadline = SteadyTime::now() + timeout;
  while (SteadyTime::now() < deadline && help_one(job)) {
  }
  const auto left = deadline - SteadyTime::now();
  const Duration spin =
      std::min<Duration>(std::chrono::duration_cast<Duration>(left), spin_limit());
  if (spin_until([&] { return done(job); }, [&] { return spin; })) return true;
  if (SteadyTime::now() >= deadline) return done(job);
  blocked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  bool ok;
  {
    std::unique_lock lock(done_mu_);
    ok = done_cv_.wait_until(lock, deadline,
                             [&] { return job.done_.load(std::memory_order_seq_cst); });
  }
  blocked_waiters_.fetch_sub(1, std::memory_order_relaxed);
  return ok;
}

void FillEngine::cancel(FillJob& job) {
  if (done(job)) return;
  uint64_t dropped = 0;
  {
    // Under the lock: the window cannot go back to the lane (or the job into the window) between
    // the two drops.
    std::lock_guard lock(mu_);
    job.cancelled_.store(true, std::memory_order_relaxed);
    dropped = close_window(job);
    if (job.linked_) {
      const uint64_t queued = job.slices_ - job.claimed_;
      job.claimed_ = job.slices_;
      unclaimed_.fetch_sub(queued, std::memory_order_relaxed);
      unlink_locked(job);
      dropped += queued;
    }
  }
  pool_counters_.add<&S::cancelled_slices>(dropped);
  if (dropped > 0) finish(job, dropped);
  if (spin_until([&] { return done(job); }, [&] { return spin_limit(); })) return;
  block_until_done(job);
}

// Looks for queued slices for `spin`, or `held_spin` while a submitter holds the pool.
bool FillEngine::look_for_work() noexcept {
  return spin_until(
      [&] {
        return unclaimed_.load(std::memory_order_relaxed) > 0 ||
               stopping_.load(std::memory_order_relaxed);
      },
      [&] { return spin_limit(); });
}

// Sleeps until a submit that wakes threads (or the pool stops). A submitter raises unclaimed_
// and then reads sleepers_; this thread raises sleepers_ and then reads unclaimed_ (both seq_cst):
// either the submitter sees a sleeper and bumps the epoch, or this thread sees the work.
void FillEngine::sleep() noexcept {
  const uint32_t epoch = epoch_.load(std::memory_order_seq_cst);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (unclaimed_.load(std::memory_order_seq_cst) == 0 &&
      !stopping_.load(std::memory_order_seq_cst)) {
    pool_counters_.add<&S::sleeps>(1);
    epoch_.wait(epoch, std::memory_order_seq_cst);
    if (epoch_.load(std::memory_order_relaxed) != epoch) {
      const int64_t stamp = wake_stamp_ns_.load(std::memory_order_relaxed);
      const int64_t now = now_ns();
      if (stamp > 0 && now > stamp) note_wake(static_cast<uint64_t>(now - stamp));
    }
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

void FillEngine::note_wake(uint64_t ns) noexcept {
  pool_counters_.add<&S::wake_samples>(1);
  pool_counters_.add<&S::wake_ns>(ns);
  pool_counters_.raise_to<&S::wake_max_ns>(ns);
  // A running average (weight 1/8); concurrent updates may lose one sample, which is harmless.
  const uint64_t avg = wake_avg_ns_.load(std::memory_order_relaxed);
  wake_avg_ns_.store(avg == 0 ? ns : avg - avg / 8 + ns / 8, std::memory_order_relaxed);
}

void FillEngine::run(unsigned index) noexcept {
  const std::vector<int>& cpus = placement_[index];
  if (!cpus.empty() && pin_current_thread(cpus)) pinned_.fetch_add(1, std::memory_order_relaxed);
  Counters& counters = *counters_[index];
  for (;;) {
    Slice s;
    bool got = false;
    bool capped = false;
    uint32_t slots_seen = 0;
    if (unclaimed_.load(std::memory_order_relaxed) > 0) {
      got = claim_open(nullptr, s);
      if (!got) {
        std::lock_guard lock(mu_);
        // Read before the claim looks at the lanes' counts: a slot freed after it moves the epoch.
        slots_seen = slot_epoch_.load(std::memory_order_acquire);
        got = claim_locked(nullptr, s, &capped);
      }
    }
    if (got) {
      copy_slice(s, counters);
      continue;
    }
    if (capped) {
      // Work is queued, but every lane that has some is at its thread limit (also while
      // stopping: the threads under the limit finish it).
      wait_for_slot(slots_seen);
      continue;
    }
    if (stopping_.load(std::memory_order_relaxed)) {
      // Copy what is still queued (the destructor's promise), then leave.
      if (unclaimed_.load(std::memory_order_seq_cst) == 0) return;
      continue;
    }
    if (look_for_work()) continue;
    sleep();
  }
}

FillPoolStats FillEngine::stats() const {
  FillPoolStats s;
  s.threads = threads();
  s.pinned_threads = pinned_.load(std::memory_order_relaxed);
  for (const auto& c : counters_)
    c->add_into(s);
  helper_counters_.add_into(s);
  s.helped_slices = helper_counters_.load<&S::slices>();
  s.helped_bytes = helper_counters_.load<&S::bytes>();
  pool_counters_.store_into(s);
  return s;
}

}  // namespace detail
}  // namespace staging
