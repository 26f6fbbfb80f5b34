// FillPool: a FIFO of jobs with unclaimed slices under one short lock; threads that look for work
// for a moment before sleeping; submitters that fill their own jobs while they wait.
#include "staging/core/fill_pool.hpp"

#include <algorithm>
#include <system_error>

#include "staging/core/assert.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace staging {
namespace {

using SteadyTime = std::chrono::steady_clock;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMinAutoSlice = uint64_t{32} << 10;

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

uint64_t round_up_page(uint64_t n) {
  return std::max(kPage, (n + kPage - 1) / kPage * kPage);
}

uint64_t nanoseconds(SteadyTime::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

// Looks until `ready()` or `limit` has passed, yielding the CPU between looks: with no other
// thread to run, a yield returns at once (the look stays fast); on a host with more runnable
// threads than CPUs, a thread that only looks gives way instead of using up its share, which
// would get it preempted later in the middle of a slice that others wait for.
template <class Ready>
bool spin_until(Ready ready, Duration limit) {
  if (ready()) return true;
  if (limit <= Duration::zero()) return false;
  const auto deadline = SteadyTime::now() + limit;
  for (unsigned i = 1;; ++i) {
    if (ready()) return true;
    if ((i & 7) == 0 && SteadyTime::now() >= deadline) return ready();
    if ((i & 1) == 0) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
}

}  // namespace

FillPool::FillPool(const FillPoolConfig& config) : config_(config) {
  config_.topology = nullptr;
}

Expected<std::shared_ptr<FillPool>, FillPoolError> FillPool::create(const FillPoolConfig& config) {
  if (config.spin < Duration::zero()) return unexpected(FillPoolError::InvalidConfig);
  std::shared_ptr<FillPool> pool(new FillPool(config));

  // The CPUs each thread may run on (empty: not pinned).
  std::vector<std::vector<int>> placement(config.threads);
  if (config.pinning != ThreadPinning::None && config.threads > 0) {
    const HostTopology topology =
        config.topology != nullptr ? *config.topology : HostTopology::read();
    const bool on_node = config.numa_node >= 0 && topology.node(config.numa_node) != nullptr;
    const std::vector<int> cpus = topology.cpus(on_node ? config.numa_node : -1);
    for (unsigned i = 0; i < config.threads && !cpus.empty(); ++i) {
      if (config.pinning == ThreadPinning::Core) {
        placement[i] = {cpus[i % cpus.size()]};
      } else if (on_node) {
        placement[i] = cpus;  // Node pinning on the whole host would restrict nothing
      }
    }
  }

  pool->counters_.reserve(config.threads);
  for (unsigned i = 0; i < config.threads; ++i)
    pool->counters_.push_back(std::make_unique<Counters>());
  try {
    pool->threads_.reserve(config.threads);
    for (unsigned i = 0; i < config.threads; ++i) {
      FillPool* raw = pool.get();
      pool->threads_.emplace_back(
          [raw, i, cpus = placement[i]]() mutable { raw->run(i, std::move(cpus)); });
    }
  } catch (const std::system_error&) {
    pool->stop_threads();
    return unexpected(FillPoolError::ThreadStartFailed);
  } catch (const std::bad_alloc&) {
    pool->stop_threads();
    return unexpected(FillPoolError::ThreadStartFailed);
  }
  return pool;
}

FillPool::~FillPool() {
  stop_threads();
}

void FillPool::stop_threads() noexcept {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    stopping_.store(true, std::memory_order_relaxed);
  }
  work_cv_.notify_all();
  for (auto& t : threads_)
    t.join();
  threads_.clear();
}

void FillPool::submit(FillJob& job) {
  FillJob* one = &job;
  submit(std::span<FillJob* const>(&one, 1));
}

void FillPool::submit(std::span<FillJob* const> jobs) {
  if (jobs.empty()) return;
  const uint64_t parts = uint64_t{threads()} + 1;
  uint64_t slices = 0;
  for (FillJob* j : jobs) {
    STAGING_ASSERT(j->bytes > 0 && j->dst != nullptr && j->src != nullptr,
                   "FillPool::submit: an empty job");
    STAGING_ASSERT(j->done_.load(std::memory_order_relaxed), "FillPool::submit: job still queued");
    j->slice_ = j->slice_bytes != 0
                    ? round_up_page(j->slice_bytes)
                    : std::max(kMinAutoSlice, round_up_page((j->bytes + parts - 1) / parts));
    j->slices_ = (j->bytes + j->slice_ - 1) / j->slice_;
    j->resolved_ = resolve_fill_method(j->method);
    j->claimed_ = 0;
    j->finished_.store(0, std::memory_order_relaxed);
    j->busy_ns_.store(0, std::memory_order_relaxed);
    j->cancelled_.store(false, std::memory_order_relaxed);
    j->done_.store(false, std::memory_order_relaxed);
    slices += j->slices_;
  }
  unsigned wake = 0;
  {
    std::lock_guard lock(mu_);
    for (FillJob* j : jobs) {
      j->linked_ = true;
      j->next_ = nullptr;
      j->prev_ = tail_;
      (tail_ != nullptr ? tail_->next_ : head_) = j;
      tail_ = j;
    }
    unclaimed_.fetch_add(slices, std::memory_order_relaxed);
    wake = static_cast<unsigned>(std::min<uint64_t>(sleepers_, slices));
  }
  jobs_.fetch_add(jobs.size(), std::memory_order_relaxed);
  if (wake == 0) return;
  wakeups_.fetch_add(wake, std::memory_order_relaxed);
  // One system call for the submitter either way: it is the thread whose time matters here.
  if (wake == 1) {
    work_cv_.notify_one();
  } else {
    work_cv_.notify_all();
  }
}

void FillPool::unlink_locked(FillJob& job) {
  (job.prev_ != nullptr ? job.prev_->next_ : head_) = job.next_;
  (job.next_ != nullptr ? job.next_->prev_ : tail_) = job.prev_;
  job.prev_ = job.next_ = nullptr;
  job.linked_ = false;
}

// Claims the next slice of `only` (when given) or of the oldest queued job. Caller holds mu_.
bool FillPool::claim_locked(FillJob* only, Slice& out) {
  FillJob* j = only != nullptr ? (only->linked_ ? only : nullptr) : head_;
  if (j == nullptr) return false;
  out.job = j;
  out.index = j->claimed_++;
  unclaimed_.fetch_sub(1, std::memory_order_relaxed);
  if (j->claimed_ == j->slices_) unlink_locked(*j);
  return true;
}

void FillPool::copy_slice(const Slice& s, Counters& counters) noexcept {
  FillJob& j = *s.job;
  const uint64_t offset = s.index * j.slice_;
  const uint64_t n = std::min(j.slice_, j.bytes - offset);
  const auto t0 = SteadyTime::now();
  copy_to_staging(j.dst + offset, j.src + offset, static_cast<std::size_t>(n), j.resolved_);
  const uint64_t ns = nanoseconds(SteadyTime::now() - t0);
  j.busy_ns_.fetch_add(ns, std::memory_order_relaxed);
  counters.slices.fetch_add(1, std::memory_order_relaxed);
  counters.bytes.fetch_add(n, std::memory_order_relaxed);
  if (j.resolved_ == FillMethod::Streaming) {
    counters.streaming_bytes.fetch_add(n, std::memory_order_relaxed);
    counters.streaming_ns.fetch_add(ns, std::memory_order_relaxed);
  } else {
    counters.memcpy_bytes.fetch_add(n, std::memory_order_relaxed);
    counters.memcpy_ns.fetch_add(ns, std::memory_order_relaxed);
  }
  finish(j, 1);
}

// Counts `slices` of `job` as finished; the call that finishes the last one completes the job.
// The job may be destroyed by its submitter as soon as done_ is stored: nothing touches it after.
void FillPool::finish(FillJob& job, uint64_t slices) noexcept {
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

bool FillPool::help_one(FillJob& job) {
  Slice s;
  {
    std::lock_guard lock(mu_);
    if (!claim_locked(&job, s)) return false;
  }
  copy_slice(s, helper_counters_);
  return true;
}

void FillPool::help(FillJob& job) {
  while (help_one(job)) {
  }
}

// Sleeps until done(job). The completing thread stores done_ then reads blocked_waiters_; this
// thread raises blocked_waiters_ then reads done_ (both seq_cst): one of them sees the other.
void FillPool::block_until_done(FillJob& job) {
  if (done(job)) return;
  blocked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock lock(done_mu_);
    done_cv_.wait(lock, [&] { return job.done_.load(std::memory_order_seq_cst); });
  }
  blocked_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void FillPool::wait(FillJob& job) {
  help(job);
  if (spin_until([&] { return done(job); }, config_.spin)) return;
  block_until_done(job);
}

bool FillPool::wait_for(FillJob& job, Duration timeout) {
  const auto deadline = SteadyTime::now() + timeout;
  while (SteadyTime::now() < deadline && help_one(job)) {
  }
  const auto left = deadline - SteadyTime::now();
  if (spin_until([&] { return done(job); }, std::min<Duration>(left, config_.spin))) return true;
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

void FillPool::cancel(FillJob& job) {
  if (done(job)) return;
  uint64_t dropped = 0;
  {
    std::lock_guard lock(mu_);
    job.cancelled_.store(true, std::memory_order_relaxed);
    if (job.linked_) {
      dropped = job.slices_ - job.claimed_;
      job.claimed_ = job.slices_;
      unclaimed_.fetch_sub(dropped, std::memory_order_relaxed);
      unlink_locked(job);
    }
  }
  cancelled_slices_.fetch_add(dropped, std::memory_order_relaxed);
  if (dropped > 0) finish(job, dropped);
  if (spin_until([&] { return done(job); }, config_.spin)) return;
  block_until_done(job);
}

bool FillPool::look_for_work() noexcept {
  return spin_until(
      [&] {
        return unclaimed_.load(std::memory_order_relaxed) > 0 ||
               stopping_.load(std::memory_order_relaxed);
      },
      config_.spin);
}

void FillPool::run(unsigned index, std::vector<int> cpus) noexcept {
  if (!cpus.empty() && pin_current_thread(cpus)) pinned_.fetch_add(1, std::memory_order_relaxed);
  Counters& counters = *counters_[index];
  for (;;) {
    Slice s;
    bool got = false;
    if (unclaimed_.load(std::memory_order_relaxed) > 0) {
      std::lock_guard lock(mu_);
      got = claim_locked(nullptr, s);
    }
    if (got) {
      copy_slice(s, counters);
      continue;
    }
    if (look_for_work() && !stopping_.load(std::memory_order_relaxed)) continue;
    std::unique_lock lock(mu_);
    if (head_ == nullptr && !stop_) {
      ++sleepers_;
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      work_cv_.wait(lock, [&] { return stop_ || head_ != nullptr; });
      --sleepers_;
    }
    if (stop_ && head_ == nullptr) return;
  }
}

FillPoolStats FillPool::stats() const {
  FillPoolStats s;
  s.threads = threads();
  s.pinned_threads = pinned_.load(std::memory_order_relaxed);
  s.jobs = jobs_.load(std::memory_order_relaxed);
  const auto add = [&](const Counters& c) {
    s.slices += c.slices.load(std::memory_order_relaxed);
    s.bytes += c.bytes.load(std::memory_order_relaxed);
    s.memcpy_bytes += c.memcpy_bytes.load(std::memory_order_relaxed);
    s.memcpy_ns += c.memcpy_ns.load(std::memory_order_relaxed);
    s.streaming_bytes += c.streaming_bytes.load(std::memory_order_relaxed);
    s.streaming_ns += c.streaming_ns.load(std::memory_order_relaxed);
  };
  for (const auto& c : counters_)
    add(*c);
  add(helper_counters_);
  s.helped_slices = helper_counters_.slices.load(std::memory_order_relaxed);
  s.helped_bytes = helper_counters_.bytes.load(std::memory_order_relaxed);
  s.sleeps = sleeps_.load(std::memory_order_relaxed);
  s.wakeups = wakeups_.load(std::memory_order_relaxed);
  s.cancelled_slices = cancelled_slices_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace staging
