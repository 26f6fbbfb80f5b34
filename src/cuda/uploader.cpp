// The Uploader: a pinned ByteRing, pooled events on a timeline, fill threads, and the pipeline
// that streams an upload through them (see uploader.hpp for the model and contracts).
#include "staging/cuda/uploader.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

#include "landing_timer.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/clock.hpp"
#include "staging/detail/core/fill_engine.hpp"
#include "staging/detail/core/spin_lock.hpp"
#include "staging/detail/cuda/event_timeline.hpp"
#include "staging/detail/cuda/pinned_region_allocator.hpp"
#include "upload_planner.hpp"
#include "uploader_testing.hpp"

namespace staging::cuda {
namespace {

using detail::UploadOutcome;
using detail::UploadPlan;
using SteadyTime = std::chrono::steady_clock;

constexpr uint64_t kMinSplitChunk = uint64_t{256} << 10;

// The core's policies an Uploader honours: Grow and Fallback would pin memory in the upload path.
bool supported(ExhaustionPolicy policy) {
  return policy == ExhaustionPolicy::Defer || policy == ExhaustionPolicy::Wait ||
         policy == ExhaustionPolicy::Split;
}

UploadFailure error_of(UploadError kind, cudaError_t cuda = cudaSuccess) {
  UploadFailure e;
  e.kind = kind;
  e.cuda = cuda;
  return e;
}

bool wraps(const void* p, uint64_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) > UINTPTR_MAX - bytes;
}

// Takes `lock` before `deadline` passes, polling (the holder is either quick or waiting inside the
// ring for at most its own timeout). With `waiters` given, gives up as soon as it is above 0: a
// Defer caller never queues behind a holder that waits (see WaiterMark). A polled std::mutex
// rather than std::timed_mutex: the latter's clocklock is invisible to ThreadSanitizer builds of
// GCC 12.
// Spins (pause, then a yield) for the first 2 ms and only then sleeps between tries: the holder is
// usually a reservation about to find room (a copy about to complete), and every thread queued
// here is a producer with nothing else to do. A sleep costs ~60 µs of timer slack: with several
// in-place producers queued for the ring, the lock would sit free for that long at each hand-off,
// and the ring would hand out one span per sleep instead of one per completed copy.
bool lock_within(std::unique_lock<std::mutex>& lock, const Deadline& deadline,
                 const std::atomic<int>* waiters = nullptr) {
  for (unsigned round = 0; !lock.try_lock(); ++round) {
    if (waiters != nullptr && waiters->load(std::memory_order_relaxed) > 0) return false;
    if ((round & 15) != 15) {
      cpu_relax();
      continue;
    }
    if (deadline.passed()) return false;
    if (deadline.elapsed() < std::chrono::milliseconds(2)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  return true;
}

// Counts a thread that holds the ring lock while it may wait under it: for a free event
// (EventTimeline::open) or for room (reserve_waiting()).
class WaiterMark {
 public:
  WaiterMark(std::atomic<int>& count, bool active) : count_(active ? &count : nullptr) {
    if (count_ != nullptr) count_->fetch_add(1, std::memory_order_relaxed);
  }
  ~WaiterMark() {
    if (count_ != nullptr) count_->fetch_sub(1, std::memory_order_relaxed);
  }
  WaiterMark(const WaiterMark&) = delete;
  WaiterMark& operator=(const WaiterMark&) = delete;

 private:
  std::atomic<int>* count_;
};

// A piece's FillJob::on_done: counts it in UploaderStats::pool_fills once all of it is filled.
void count_fill(staging::detail::FillJob& /*job*/, void* counter) {
  static_cast<std::atomic<uint64_t>*>(counter)->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

struct Uploader::Impl {
  UploaderConfig config;
  std::unique_ptr<DeviceApi> owned_api;
  DeviceApi* api = nullptr;
  std::unique_ptr<PinnedRegionAllocator> allocator;
  std::unique_ptr<EventTimeline> timeline;
  std::optional<ByteRing> ring;  // guarded by ring_mu
  std::byte* ring_base = nullptr;
  std::shared_ptr<FillPool> pool;
  staging::detail::FillEngine* engine = nullptr;  // pool's engine: where the pieces are filled
  unsigned lane = 0;  // this Uploader's lane in the pool (no head-of-line blocking when shared)
  bool lane_held = false;  // `lane` was taken from the engine (given back on destruction)
  std::unique_ptr<detail::UploadPlanner> planner;
  std::unique_ptr<detail::LandingTimer> timer;  // times sampled uploads until their copies land
  std::atomic<bool> timing{false};  // the planner judges by landed times (until the timer gives up)

  std::mutex ring_mu;
  std::atomic<int> ring_waiters{0};
  std::atomic<cudaError_t> sticky{cudaSuccess};
  std::atomic<int> open_spans{0};

  struct Counters {
    std::atomic<uint64_t> uploads{0}, bytes_uploaded{0}, commits{0}, bytes_committed{0}, cancels{0},
        copies{0}, inline_fills{0}, pool_fills{0}, errors{0}, direct_uploads{0}, direct_bytes{0},
        memcpy_uploads{0}, streaming_uploads{0}, probe_uploads{0}, timed_uploads{0};
  } counters;

  ~Impl();

  // --- health -----------------------------------------------------------------------------

  cudaError_t failure() const {
    const cudaError_t s = sticky.load(std::memory_order_acquire);
    return s != cudaSuccess ? s : (timeline ? timeline->error() : cudaSuccess);
  }
  void note_cuda_error(cudaError_t err) {
    if (!is_sticky(err)) return;
    cudaError_t expected = cudaSuccess;
    sticky.compare_exchange_strong(expected, err, std::memory_order_acq_rel);
  }
  UploadFailure cuda_error(cudaError_t err) {
    note_cuda_error(err);
    return error_of(UploadError::Cuda, err);
  }
  UploadFailure counted(UploadFailure e) {
    counters.errors.fetch_add(1, std::memory_order_relaxed);
    return e;
  }
  // Refuses a stream that is capturing a graph; reports a failing query.
  std::optional<UploadFailure> check_stream(cudaStream_t stream) {
    bool capturing = false;
    const cudaError_t err = api->stream_is_capturing(stream, &capturing);
    if (err != cudaSuccess) return cuda_error(err);
    if (capturing) return error_of(UploadError::InvalidArgument);
    return std::nullopt;
  }

  // Refuses a destination range that leaves the device allocation holding its first byte (see
  // UploaderConfig::check_destinations).
  std::optional<UploadFailure> check_destination(const void* dst, uint64_t bytes) {
    if (!config.check_destinations) return std::nullopt;
    void* base = nullptr;
    std::size_t size = 0;
    const cudaError_t err = api->address_range(dst, &base, &size);
    if (err == cudaErrorNotSupported) return std::nullopt;  // the driver cannot say
    if (err == cudaErrorInvalidValue) return error_of(UploadError::OutOfBounds);
    if (err != cudaSuccess) return cuda_error(err);
    const auto first = reinterpret_cast<std::uintptr_t>(base);
    const auto at = reinterpret_cast<std::uintptr_t>(dst);
    if (at < first || at - first > size || bytes > size - (at - first)) {
      return error_of(UploadError::OutOfBounds);
    }
    return std::nullopt;
  }

  // --- ring reservations ----------------------------------------------------------------------

  // The answer of reserve_ring: a reservation, an error, or (try_only) neither: "not now".
  struct RingAnswer {
    std::optional<Reservation> reservation;
    std::optional<UploadFailure> error;
  };

  UploadFailure map_reserve_error(const ReserveError& re) {
    // The ring's own vocabulary, but for the two an Uploader words differently: a request the
    // ring cannot place at all was the caller's argument, and a region that could not be made
    // failed in CUDA.
    UploadError kind = re.kind;
    cudaError_t cuda = cudaSuccess;
    if (kind == UploadError::ZeroSize || kind == UploadError::Overflow) {
      kind = UploadError::InvalidArgument;
    } else if (kind == UploadError::AllocationFailed) {
      kind = UploadError::Cuda;
      cuda = allocator->last_error();
    }
    // A wait that ended early because the timeline failed is the failure, not a timeout.
    if (const cudaError_t f = failure(); f != cudaSuccess) {
      kind = UploadError::Failed;
      cuda = f;
    }
    UploadFailure e = error_of(kind, cuda);
    e.reserve = re;
    return e;
  }

  // Takes the ring lock for a reservation of `size`, held by another caller now: a Wait or Split
  // caller (may_wait) before `deadline` (else Timeout), a Defer caller unless the holder waits
  // under it (else WouldBlock: the ring is full anyway; a holder that does not wait is quick).
  std::optional<UploadFailure> lock_ring(std::unique_lock<std::mutex>& lock, uint64_t size,
                                         bool may_wait, const Deadline& deadline) {
    const bool locked =
        may_wait ? lock_within(lock, deadline)
                 : lock_within(lock, Deadline(SteadyClock::instance(), Deadline::kLongest),
                               &ring_waiters);
    if (locked) return std::nullopt;
    ReserveError re;
    re.kind = may_wait ? UploadError::Timeout : UploadError::WouldBlock;
    re.needed = size;
    return map_reserve_error(re);
  }

  // Reserves `size` bytes under `policy`, with a fresh timeline point as the token.
  // try_only: never waits (not for the lock, not for room, not for an event); answers "not now"
  // (neither reservation nor error) when nothing can be placed at once.
  RingAnswer reserve_ring(uint64_t size, ExhaustionPolicy policy, Duration timeout,
                          uint64_t alignment, uint64_t owner, bool try_only) {
    // One deadline for every wait: for the lock, for a free event, then for room.
    const Deadline deadline(SteadyClock::instance(), timeout);
    std::unique_lock<std::mutex> lock(ring_mu, std::defer_lock);
    const bool may_wait = !try_only && policy != ExhaustionPolicy::Defer;
    if (!lock.try_lock()) {
      if (try_only) return {};
      if (auto e = lock_ring(lock, size, may_wait, deadline)) return {std::nullopt, *e};
    }
    ring->retire(timeline->completed());
    if (try_only) {
      // Place only what fits now; the minimum Split would place, plus worst-case padding.
      const uint64_t least = std::min(size, ring->config().split_min_chunk) + alignment - 1;
      if (ring->largest_free() < least) return {};
    }
    // Counted before the first wait under the lock: a Defer caller answers WouldBlock meanwhile.
    WaiterMark mark(ring_waiters, may_wait);
    auto point = timeline->open(may_wait ? deadline.remaining() : Duration::zero());
    if (!point) {
      const cudaError_t err = point.error();
      if (err != cudaErrorNotReady) {
        note_cuda_error(err);
        return {std::nullopt, error_of(UploadError::Failed, err)};
      }
      if (try_only) return {};
      // Every pooled event is pending: the ring is as good as full.
      ReserveError re;
      re.kind = may_wait ? UploadError::Timeout : UploadError::WouldBlock;
      re.needed = size;
      re.oldest_pending = ring->oldest_pending();
      return {std::nullopt, map_reserve_error(re)};
    }
    ReserveRequest request;
    request.size = size;
    request.alignment = alignment;
    request.token = *point;
    request.owner = owner;
    request.policy = policy;
    request.timeout = try_only ? Duration::zero() : deadline.remaining();
    auto r = reserve_waiting(*ring, *timeline, request);
    if (!r) {
      timeline->release(*point);
      if (try_only) return {};
      return {std::nullopt, map_reserve_error(r.error())};
    }
    STAGING_ASSERT(r->region == 0 && r->token == *point, "cuda ring: unexpected region or token");
    return {*r, std::nullopt};
  }

  // --- the upload pipeline -------------------------------------------------------------------

  // One device copy's worth of a reservation: filled (by the pool or inline), then issued.
  struct Piece {
    uint64_t offset = 0;  // into the source and the destination
    std::byte* staging = nullptr;
    TimelineValue point = 0;
    bool last_of_reservation = false;
    bool inline_filled = false;
    staging::detail::FillJob job;  // job.bytes: the piece's size
  };

  // One upload: an optional direct part (its first bytes copied straight from the source), then
  // the ring part in pieces, each filled by the pool with the calling thread's help and copied as
  // soon as it and every piece before it are filled. upload_planner.hpp says how the plan is made.
  class Pipeline {
   public:
    Pipeline(Impl& m, std::byte* dst, const std::byte* src, uint64_t bytes, cudaStream_t stream,
             ExhaustionPolicy policy, Duration timeout, uint64_t owner)
        : m_(m),
          dst_(dst),
          src_(src),
          bytes_(bytes),
          stream_(stream),
          policy_(policy),
          timeout_(timeout),
          owner_(owner) {}
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;
    // An upload that started the landing timer and did not finish it (an error, or anything that
    // left run() early) frees it for the next one.
    ~Pipeline() {
      if (timed_) m_.timer->abandon();
    }

    Expected<TimelineValue, UploadFailure> run() {
      const auto start = SteadyTime::now();
      // The pool's idle threads keep looking for this upload's next pieces (no wake-up per
      // reservation while the upload waits for ring room).
      const staging::detail::FillEngine::Hold hold = m_.engine->hold();
      // A timed upload of before whose copies have landed now: its sample for the fill method.
      if (auto landed = m_.timer->collect()) {
        m_.planner->record_landed(landed->plan, landed->bytes, landed->landed);
        m_.counters.timed_uploads.fetch_add(1, std::memory_order_relaxed);
      }
      if (!m_.timer->available() && m_.timing.exchange(false, std::memory_order_relaxed)) {
        m_.planner->set_timed(false);  // its timing calls kept failing: judge by the calls
      }
      detail::PoolState pool;
      pool.awake = m_.engine->awake();
      pool.wake_latency = m_.engine->wake_latency();
      pool.uploads = std::max(1u, m_.engine->holds());
      if (policy_ == ExhaustionPolicy::Split) {
        plan_ = m_.planner->plan(
            bytes_, [&] { return m_.api->stream_query(stream_) == cudaSuccess; }, pool);
      } else {
        // One reservation for the whole source.
        plan_ = m_.planner->plan_without_direct(bytes_, pool);
      }
      reserved_ = plan_.direct_bytes;
      timed_ = plan_.time_landing && m_.timer->start(stream_);
      if (plan_.time_landing && !timed_) m_.planner->missed_landing(plan_, bytes_);
      if (plan_.direct_bytes > 0) {
        if (auto e = start_direct()) return abort(*e);
      }
      while (issued_ < bytes_) {
        note_direct_done();
        // 1. Issue every filled piece at the front, in source order.
        while (!pending_.empty() && filled(pending_.front())) {
          if (auto e = issue_front()) return abort(*e);
        }
        if (issued_ == bytes_) break;
        // 2. Reserve more ring while there is source left: without waiting while pieces are
        //    still to be issued (their copies are what frees the ring), else waiting per policy.
        if (reserved_ < bytes_) {
          RingAnswer a = reserve_next(/*try_only=*/!pending_.empty());
          if (a.reservation) {
            add_pieces(*a.reservation);
            continue;
          }
          if (a.error) return abort(*a.error);
        }
        // 3. Fill on this thread: a slice of the oldest pieces that still have unclaimed ones.
        if (help()) continue;
        // 4. The pool's threads hold every slice left: wait for the front piece's.
        wait_front();
      }
      if (auto e = settle_direct()) return abort(*e);
      UploadOutcome o;
      o.bytes = bytes_;
      o.call = std::chrono::duration_cast<Duration>(SteadyTime::now() - start);
      o.fill_bytes = fill_bytes_;
      o.fill_busy_ns = fill_busy_ns_;
      o.direct_bytes = plan_.direct_bytes;
      o.direct_took = direct_took_;
      m_.planner->record(plan_, o);
      if (timed_) {
        m_.timer->finish(stream_, plan_, bytes_, o.call);
        timed_ = false;
      }
      m_.count_plan(plan_, bytes_);
      return last_recorded_;
    }

   private:
    bool filled(Piece& p) { return p.inline_filled || m_.engine->done(p.job); }

    RingAnswer reserve_next(bool try_only) {
      if (policy_ != ExhaustionPolicy::Split) {
        return m_.reserve_ring(bytes_ - reserved_, policy_, timeout_, m_.config.alignment, owner_,
                               false);
      }
      // Several whole pieces per reservation (one event each), at most a chunk.
      const uint64_t piece = plan_.piece_bytes;
      const uint64_t per = std::max<uint64_t>(1, m_.config.chunk_bytes / piece) * piece;
      return m_.reserve_ring(std::min(per, bytes_ - reserved_), ExhaustionPolicy::Split, timeout_,
                             m_.config.alignment, owner_, try_only);
    }

    // The direct part: the pool starts filling the ring part (as far as the ring has room now),
    // then this thread copies the first plan_.direct_bytes straight from the source.
    std::optional<UploadFailure> start_direct() {
      auto point = m_.timeline->open(Duration::zero());
      if (!point) {
        if (point.error() != cudaErrorNotReady) {
          m_.note_cuda_error(point.error());
          return error_of(UploadError::Failed, point.error());
        }
        // Every pooled event is pending: no direct part, the ring takes the whole source.
        reserved_ = 0;
        plan_.direct_bytes = 0;
        plan_.piece_bytes = m_.planner->ring_piece(bytes_, plan_.method, plan_.helpers);
        return std::nullopt;
      }
      direct_point_ = *point;
      direct_state_ = DirectState::Opened;
      // Open until recorded below (a few milliseconds at most): completed() waits for it.
      while (reserved_ < bytes_) {
        RingAnswer a = reserve_next(/*try_only=*/true);
        if (a.error) return a.error;
        if (!a.reservation) break;
        add_pieces(*a.reservation);
      }
      direct_start_ = SteadyTime::now();
      const cudaError_t err = m_.api->copy_pageable_to_device_async(
          dst_, src_, static_cast<std::size_t>(plan_.direct_bytes), stream_);
      if (err != cudaSuccess) return m_.cuda_error(err);
      direct_state_ = DirectState::Issued;
      m_.counters.copies.fetch_add(1, std::memory_order_relaxed);
      const cudaError_t rec = m_.timeline->record(direct_point_, stream_);
      if (rec != cudaSuccess) {
        // The copy is queued but its point can never complete: the Uploader fails (safe).
        m_.sticky.store(rec, std::memory_order_release);
        return error_of(UploadError::Cuda, rec);
      }
      direct_state_ = DirectState::Recorded;
      last_recorded_ = direct_point_;
      issued_ = plan_.direct_bytes;
      return std::nullopt;
    }

    // The driver may read a pageable source after cudaMemcpyAsync returned: upload() returns only
    // once the direct copy has completed (it was queued first on an idle stream, so this normally
    // costs nothing). If it does not complete within drain_timeout the Uploader fails, since the
    // copy may still read the caller's memory.
    std::optional<UploadFailure> settle_direct() {
      if (direct_state_ == DirectState::Issued) return settle_direct_failed();  // never recorded
      if (direct_state_ != DirectState::Recorded) return std::nullopt;
      const auto start = SteadyTime::now();
      while (!note_direct_done()) {
        if (m_.failure() != cudaSuccess) return settle_direct_failed();
        const auto waited = SteadyTime::now() - start;
        if (waited >= m_.config.drain_timeout) {
          cudaError_t expected = cudaSuccess;
          m_.sticky.compare_exchange_strong(expected, cudaErrorTimeout);
          return error_of(UploadError::Failed, m_.failure());
        }
        if (waited < std::chrono::microseconds(50)) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
      }
      return std::nullopt;
    }

    // The timeline has stopped (or the direct copy's point was never recorded) with the direct
    // copy issued: only the stream can still tell when the copy has run. Waits (up to
    // drain_timeout) until the stream is idle — or answers a sticky error: a broken context runs
    // nothing more — so that the caller's source is not read after upload() returns.
    UploadFailure settle_direct_failed() {
      const Deadline deadline(SteadyClock::instance(), m_.config.drain_timeout);
      for (;;) {
        const cudaError_t q = m_.api->stream_query(stream_);
        if (q == cudaSuccess || is_sticky(q)) break;  // idle, or a context that runs nothing more
        if (deadline.passed()) break;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      direct_state_ = DirectState::Settled;
      const cudaError_t f = m_.failure();
      return error_of(UploadError::Failed, f != cudaSuccess ? f : cudaErrorUnknown);
    }

    // True once the direct copy has completed (or there is none to wait for); the first time it
    // is seen, its duration (call to completion) is kept as the direct rate's sample.
    bool note_direct_done() {
      if (direct_state_ != DirectState::Recorded) return true;
      if (!m_.timeline->reached(direct_point_)) return false;
      direct_took_ = std::chrono::duration_cast<Duration>(SteadyTime::now() - direct_start_);
      direct_state_ = DirectState::Settled;
      return true;
    }

    void add_pieces(const Reservation& r) {
      batch_.clear();
      for (uint64_t k = 0; k < r.size;) {
        const uint64_t n = std::min(plan_.piece_bytes, r.size - k);
        Piece& p = pending_.emplace_back();
        p.offset = reserved_ + k;
        p.staging = m_.ring_base + r.offset + k;
        p.point = r.token;
        p.last_of_reservation = k + n == r.size;
        p.job.dst = p.staging;
        p.job.src = src_ + p.offset;
        p.job.bytes = n;
        p.job.method = plan_.method;
        p.job.slice_bytes = m_.config.fill_slice_bytes;
        p.job.lane = m_.lane;
        // The upload's first piece is filled before any of its copies runs: nothing of it
        // competes with the copy engine for memory yet, so every pool thread may take part and
        // its copy starts sooner. The thread limit applies from the second piece on.
        p.job.max_threads = p.offset == plan_.direct_bytes ? 0 : plan_.max_threads;
        if (n <= m_.config.inline_fill_bytes) {
          copy_to_staging(p.staging, p.job.src, static_cast<std::size_t>(n), plan_.method);
          p.inline_filled = true;
          m_.counters.inline_fills.fetch_add(1, std::memory_order_relaxed);
        } else {
          p.job.on_done = &count_fill;  // a cancelled piece is not counted
          p.job.context = &m_.counters.pool_fills;
          batch_.push_back(&p.job);
        }
        k += n;
      }
      m_.engine->submit(batch_, plan_.wake);
      reserved_ += r.size;
    }

    // Copies one unclaimed slice of the oldest pending pieces (the first few) on this thread.
    bool help() {
      int looked = 0;
      for (Piece& p : pending_) {
        if (p.inline_filled) continue;
        if (m_.engine->help_one(p.job)) return true;
        if (++looked == 4) break;
      }
      return false;
    }

    // Waits for the front piece's slices held by the pool's threads; while source is left to
    // reserve, only briefly, so that ring room freed meanwhile is taken and handed to the pool.
    void wait_front() {
      staging::detail::FillJob& job = pending_.front().job;
      if (reserved_ == bytes_) {
        m_.engine->wait(job);
        return;
      }
      const auto until = SteadyTime::now() + std::chrono::microseconds(20);
      while (!m_.engine->done(job) && SteadyTime::now() < until) {
        std::this_thread::yield();
      }
    }

    std::optional<UploadFailure> issue_front() {
      Piece& p = pending_.front();
      const cudaError_t err = m_.api->copy_to_device_async(
          dst_ + p.offset, p.staging, static_cast<std::size_t>(p.job.bytes), stream_);
      if (err != cudaSuccess) return m_.cuda_error(err);
      m_.counters.copies.fetch_add(1, std::memory_order_relaxed);
      issued_ += p.job.bytes;
      if (!p.inline_filled) {
        fill_bytes_ += p.job.bytes;
        fill_busy_ns_ += p.job.busy_ns();
      }
      const TimelineValue point = p.point;
      const bool last = p.last_of_reservation;
      pending_.pop_front();  // `p` is gone from here on
      if (!last) {
        partially_issued_ = point;
        return std::nullopt;
      }
      partially_issued_ = 0;
      const cudaError_t rec = m_.timeline->record(point, stream_);
      if (rec != cudaSuccess) {
        // The copy is queued but its point can never complete: the ring stays held (safe).
        m_.sticky.store(rec, std::memory_order_release);
        return error_of(UploadError::Cuda, rec);
      }
      last_recorded_ = point;
      return std::nullopt;
    }

    // Stops the fills still running, settles every point not yet recorded (recorded if some of its
    // copies were issued, released if none were), waits for a direct copy that may still read the
    // source, and reports `e` with the progress made.
    Expected<TimelineValue, UploadFailure> abort(UploadFailure e) {
      for (Piece& p : pending_) {
        if (!p.inline_filled) m_.engine->cancel(p.job);
      }
      if (direct_state_ == DirectState::Opened) {
        m_.timeline->release(direct_point_);  // no copy was issued for it
        direct_state_ = DirectState::Settled;
      }
      TimelineValue settled = 0;
      if (partially_issued_ != 0) {
        // Copies of this reservation are queued: its point completes after them.
        if (m_.timeline->record(partially_issued_, stream_) == cudaSuccess) {
          last_recorded_ = partially_issued_;
        } else {
          m_.sticky.store(m_.timeline->error(), std::memory_order_release);
        }
        settled = partially_issued_;
      }
      for (const Piece& p : pending_) {
        if (p.point != settled) {
          m_.timeline->release(p.point);
          settled = p.point;
        }
      }
      pending_.clear();
      settle_direct();  // whatever it answers, `e` is the error to report
      e.bytes_issued = issued_;
      e.issued_point = last_recorded_;
      return unexpected(m_.counted(std::move(e)));
    }

    Impl& m_;
    std::byte* dst_;
    const std::byte* src_;
    uint64_t bytes_;
    cudaStream_t stream_;
    ExhaustionPolicy policy_;
    Duration timeout_;
    uint64_t owner_;
    UploadPlan plan_;
    bool timed_ = false;         // this upload holds the landing timer
    std::deque<Piece> pending_;  // reserved, not yet issued, in source order
    std::vector<staging::detail::FillJob*> batch_;
    uint64_t reserved_ = 0;  // source bytes covered by reservations (and the direct part)
    uint64_t issued_ = 0;    // source bytes whose copies are enqueued
    TimelineValue last_recorded_ = 0;
    TimelineValue partially_issued_ = 0;  // a reservation some (not all) of whose pieces issued
    uint64_t fill_bytes_ = 0;             // pool-filled bytes issued, and their copying time
    uint64_t fill_busy_ns_ = 0;
    // None: no direct part; Opened: its point is open, no copy issued; Issued: copied, its point's
    // record failed; Recorded: copied and recorded; Settled: released, or waited for.
    enum class DirectState : uint8_t { None, Opened, Issued, Recorded, Settled };
    TimelineValue direct_point_ = 0;
    DirectState direct_state_ = DirectState::None;
    SteadyTime::time_point direct_start_{};
    Duration direct_took_{0};  // from the direct copy's call until it was seen complete
  };

  void count_plan(const UploadPlan& plan, uint64_t bytes) {
    if (plan.direct_bytes > 0) {
      counters.direct_uploads.fetch_add(1, std::memory_order_relaxed);
      counters.direct_bytes.fetch_add(plan.direct_bytes, std::memory_order_relaxed);
    }
    if (plan.direct_bytes < bytes) {
      auto& n = plan.method == FillMethod::Streaming ? counters.streaming_uploads
                                                     : counters.memcpy_uploads;
      n.fetch_add(1, std::memory_order_relaxed);
      if (plan.probe) counters.probe_uploads.fetch_add(1, std::memory_order_relaxed);
    }
  }

  Expected<TimelineValue, UploadFailure> upload(void* device_dst, const void* host_src,
                                                uint64_t bytes, cudaStream_t stream,
                                                const UploadOptions& options) {
    if (const cudaError_t f = failure(); f != cudaSuccess) {
      return unexpected(counted(error_of(UploadError::Failed, f)));
    }
    if (bytes == 0) return TimelineValue{0};
    const ExhaustionPolicy policy = options.policy.value_or(config.policy);
    if (device_dst == nullptr || host_src == nullptr || wraps(device_dst, bytes) ||
        wraps(host_src, bytes) || !supported(policy)) {
      return unexpected(counted(error_of(UploadError::InvalidArgument)));
    }
    if (auto e = check_stream(stream)) return unexpected(counted(*e));
    if (auto e = check_destination(device_dst, bytes)) return unexpected(counted(*e));
    Pipeline pipeline(*this, static_cast<std::byte*>(device_dst),
                      static_cast<const std::byte*>(host_src), bytes, stream, policy,
                      options.timeout.value_or(config.wait_timeout), options.owner);
    auto result = pipeline.run();
    if (result) {
      counters.uploads.fetch_add(1, std::memory_order_relaxed);
      counters.bytes_uploaded.fetch_add(bytes, std::memory_order_relaxed);
    }
    return result;
  }

  // --- in-place spans --------------------------------------------------------------------------

  Expected<StagingSpan, UploadFailure> reserve(uint64_t bytes, const UploadOptions& options) {
    if (const cudaError_t f = failure(); f != cudaSuccess) {
      return unexpected(counted(error_of(UploadError::Failed, f)));
    }
    // A span smaller than asked only when asked for: the config's Split means Wait here.
    const ExhaustionPolicy policy = options.policy.value_or(
        config.policy == ExhaustionPolicy::Split ? ExhaustionPolicy::Wait : config.policy);
    if (bytes == 0 || !supported(policy)) {
      return unexpected(counted(error_of(UploadError::InvalidArgument)));
    }
    const uint64_t alignment = options.alignment != 0 ? options.alignment : config.alignment;
    RingAnswer a = reserve_ring(bytes, policy, options.timeout.value_or(config.wait_timeout),
                                alignment, options.owner, false);
    if (!a.reservation) return unexpected(counted(*a.error));
    StagingSpan span;
    span.owner_ = this;
    span.data_ = ring_base + a.reservation->offset;
    span.size_ = a.reservation->size;
    span.point_ = a.reservation->token;
    open_spans.fetch_add(1, std::memory_order_relaxed);
    return span;
  }

  // Closes `span`. cancelled: no copy was issued, so its point is released (its bytes are reused
  // in FIFO order); otherwise its point has been recorded.
  void close(StagingSpan& span, bool cancelled) noexcept {
    if (cancelled) {
      timeline->release(span.point_);
      counters.cancels.fetch_add(1, std::memory_order_relaxed);
    }
    span.owner_ = nullptr;
    span.data_ = nullptr;
    span.size_ = 0;
    open_spans.fetch_sub(1, std::memory_order_relaxed);
  }

  Expected<TimelineValue, UploadFailure> commit(StagingSpan& span, void* device_dst,
                                                cudaStream_t stream,
                                                std::optional<uint64_t> bytes) {
    if (span.owner_ != this) return unexpected(counted(error_of(UploadError::InvalidArgument)));
    const uint64_t used = bytes.value_or(span.size_);
    std::optional<UploadFailure> refused;
    if (const cudaError_t f = failure(); f != cudaSuccess) {
      refused = error_of(UploadError::Failed, f);
    } else if (used == 0 || used > span.size_ || device_dst == nullptr || wraps(device_dst, used)) {
      refused = error_of(UploadError::InvalidArgument);
    } else {
      refused = check_stream(stream);
      if (!refused) refused = check_destination(device_dst, used);
    }
    if (refused) {
      close(span, /*cancelled=*/true);
      return unexpected(counted(*refused));
    }
    const TimelineValue point = span.point_;
    const cudaError_t err =
        api->copy_to_device_async(device_dst, span.data_, static_cast<std::size_t>(used), stream);
    if (err != cudaSuccess) {
      timeline->release(point);  // nothing reads the span: its bytes are free again
      close(span, /*cancelled=*/false);
      return unexpected(counted(cuda_error(err)));
    }
    counters.copies.fetch_add(1, std::memory_order_relaxed);
    const cudaError_t rec = timeline->record(point, stream);
    close(span, /*cancelled=*/false);
    if (rec != cudaSuccess) {
      // The copy is queued but its point can never complete: the ring stays held (safe).
      sticky.store(rec, std::memory_order_release);
      return unexpected(counted(error_of(UploadError::Cuda, rec)));
    }
    counters.commits.fetch_add(1, std::memory_order_relaxed);
    counters.bytes_committed.fetch_add(used, std::memory_order_relaxed);
    return point;
  }
};

Uploader::Impl::~Impl() {
  STAGING_ASSERT(open_spans.load() == 0, "Uploader destroyed while a StagingSpan is open");
  if (lane_held) engine->release_lane(lane);  // idle: none of its jobs is queued
  engine = nullptr;
  pool.reset();  // idle: no call is in progress
  if (!timeline) return;
  const TimelineValue newest = timeline->last_opened();
  const bool drained =
      failure() == cudaSuccess && timeline->wait(newest, config.drain_timeout) >= newest;
  if (!drained && allocator) {
    // A copy may still read the ring: never unpin it under the copy (leaked deliberately).
    allocator->abandon();
  }
  ring.reset();  // destroys region 0 through the allocator (a no-op once abandoned)
}

// --- Uploader ----------------------------------------------------------------------------------

namespace {

// Every field of `c` within its documented range.
bool valid(const UploaderConfig& c) {
  return c.ring_bytes != 0 && c.events != 0 && c.alignment != 0 && c.alignment <= c.ring_bytes &&
         c.wait_timeout >= Duration::zero() && c.drain_timeout >= Duration::zero() &&
         c.copy_overhead >= Duration::zero() && c.link_gbps > 0;
}

// The Uploader's own fill pool (no UploaderConfig::fill_pool given): fill_threads threads (0: the
// host's CPUs less two, 1 to 12; written back into `c`), pinned near the device's NUMA node.
auto own_fill_pool(UploaderConfig& c, DeviceApi& api) {
  FillPoolConfig pc;
  if (c.fill_threads == 0) {
    const auto cpus = static_cast<unsigned>(HostTopology::read().cpus(-1).size());
    c.fill_threads = std::clamp(cpus > 2 ? cpus - 2 : 1u, 1u, 12u);
  }
  pc.threads = c.fill_threads;
  pc.pinning = c.fill_pinning;
  int node = -1;
  if (c.fill_pinning != ThreadPinning::None && api.host_numa_node(&node) != cudaSuccess) {
    node = -1;
  }
  pc.numa_node = node;
  return FillPool::create(pc);
}

detail::PlannerConfig planner_config(const UploaderConfig& c, unsigned fill_threads) {
  detail::PlannerConfig planner;
  planner.ring_bytes = c.ring_bytes;
  planner.chunk_bytes = c.chunk_bytes;
  planner.min_piece_bytes = c.min_piece_bytes;
  planner.alignment = c.alignment;
  planner.fill_threads = fill_threads;
  planner.fill = c.fill;
  planner.direct = c.direct;
  planner.link_gbps = c.link_gbps;
  planner.copy_overhead = c.copy_overhead;
  return planner;
}

}  // namespace

Expected<Uploader, CreateError> Uploader::create(const UploaderConfig& config) {
  return create_with(config, nullptr);
}

Expected<Uploader, CreateError> detail::create_uploader(const UploaderConfig& config,
                                                        DeviceApi& api) {
  return Uploader::create_with(config, &api);
}

Expected<Uploader, CreateError> Uploader::create_with(const UploaderConfig& config,
                                                      DeviceApi* api) {
  UploaderConfig c = config;
  if (!valid(c)) return unexpected(CreateError::InvalidConfig);
  if (!supported(c.policy)) return unexpected(CreateError::UnsupportedPolicy);
  c.chunk_bytes = std::clamp(c.chunk_bytes, c.alignment, c.ring_bytes);
  c.min_piece_bytes = std::clamp<uint64_t>(c.min_piece_bytes, 1, c.chunk_bytes);

  auto impl = std::make_unique<Impl>();
  if (api == nullptr) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      return unexpected(CreateError::NoDevice);
    }
    if (c.device < 0 && cudaGetDevice(&c.device) != cudaSuccess) {
      return unexpected(CreateError::NoDevice);
    }
    if (c.device >= count) return unexpected(CreateError::NoDevice);
    impl->owned_api = make_runtime_api(c.device);
    api = impl->owned_api.get();
  }
  impl->api = api;
  impl->config = c;
  impl->allocator = std::make_unique<PinnedRegionAllocator>(
      *api, c.ring_bytes, c.write_combined ? cudaHostAllocWriteCombined : 0u, c.pinned_budget);

  auto timeline = EventTimeline::create(*api, c.events);
  if (!timeline) return unexpected(CreateError::ObjectCreationFailed);
  impl->timeline = std::move(*timeline);

  ByteRingConfig rc;
  rc.capacity = c.ring_bytes;
  rc.cap = c.ring_bytes;
  rc.policy = c.policy;
  rc.wait_timeout = c.wait_timeout;
  rc.split_min_chunk = std::min(c.chunk_bytes, std::max(kMinSplitChunk, c.alignment));
  rc.check_invariants = c.check_invariants;
  auto ring = ByteRing::create(rc, *impl->allocator, c.observer);
  if (!ring) return unexpected(ring.error());  // the sizes were checked: pinning region 0 failed
  impl->ring.emplace(std::move(*ring));
  impl->ring_base = impl->allocator->base(0);
  STAGING_ASSERT(impl->ring_base != nullptr, "cuda ring: region 0 has no memory");

  if (c.fill_pool) {
    impl->pool = c.fill_pool;
  } else {
    auto pool = own_fill_pool(c, *api);
    if (!pool) return unexpected(pool.error());
    impl->pool = std::move(*pool);
    impl->config.fill_threads = c.fill_threads;
  }
  impl->engine = &staging::detail::engine_of(*impl->pool);
  impl->lane = impl->engine->new_lane();
  impl->lane_held = true;
  impl->timer = std::make_unique<detail::LandingTimer>(*api);
  detail::PlannerConfig pc = planner_config(c, impl->pool->threads());
  pc.timed = impl->timer->available();
  impl->timing.store(pc.timed, std::memory_order_relaxed);
  impl->planner = std::make_unique<detail::UploadPlanner>(pc);
  return Uploader(std::move(impl));
}

Uploader::Uploader(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Uploader::Uploader(Uploader&&) noexcept = default;
Uploader& Uploader::operator=(Uploader&&) noexcept = default;
Uploader::~Uploader() = default;

Expected<TimelineValue, UploadFailure> Uploader::upload(void* device_dst, const void* host_src,
                                                        uint64_t bytes, cudaStream_t stream,
                                                        const UploadOptions& options) {
  return impl_->upload(device_dst, host_src, bytes, stream, options);
}

Expected<StagingSpan, UploadFailure> Uploader::reserve(uint64_t bytes,
                                                       const UploadOptions& options) {
  return impl_->reserve(bytes, options);
}

Expected<TimelineValue, UploadFailure> Uploader::commit(StagingSpan&& span, void* device_dst,
                                                        cudaStream_t stream,
                                                        std::optional<uint64_t> bytes) {
  return impl_->commit(span, device_dst, stream, bytes);
}

void Uploader::cancel(StagingSpan&& span) noexcept {
  if (span.owner_ == impl_.get()) impl_->close(span, /*cancelled=*/true);
}

void Uploader::cancel_open(StagingSpan& span) noexcept {
  static_cast<Impl*>(span.owner_)->close(span, /*cancelled=*/true);
}

TimelineValue Uploader::completed() {
  return impl_->timeline->completed();
}

Expected<bool, WaitError> Uploader::reached(TimelineValue point) {
  if (impl_->failure() != cudaSuccess) return unexpected(WaitError::Failed);
  const bool done = impl_->timeline->completed() >= point;
  if (impl_->failure() != cudaSuccess) return unexpected(WaitError::Failed);
  return done;
}

Expected<void, WaitError> Uploader::wait(TimelineValue point, Duration timeout) {
  if (impl_->failure() != cudaSuccess) return unexpected(WaitError::Failed);
  if (impl_->timeline->wait(point, timeout) >= point) return {};
  return unexpected(impl_->failure() != cudaSuccess ? WaitError::Failed : WaitError::Timeout);
}

Expected<void, UploadFailure> Uploader::stream_wait(cudaStream_t stream, TimelineValue point) {
  if (const cudaError_t f = impl_->failure(); f != cudaSuccess) {
    return unexpected(impl_->counted(error_of(UploadError::Failed, f)));
  }
  if (point == 0) return {};
  const cudaError_t err = impl_->timeline->stream_wait(stream, point);
  if (err != cudaSuccess) return unexpected(impl_->counted(impl_->cuda_error(err)));
  return {};
}

bool Uploader::failed() const noexcept {
  return impl_->failure() != cudaSuccess;
}
cudaError_t Uploader::error() const noexcept {
  return impl_->failure();
}
const UploaderConfig& Uploader::config() const noexcept {
  return impl_->config;
}

UploaderStats Uploader::stats() const {
  const Impl& m = *impl_;
  UploaderStats s;
  s.uploads = m.counters.uploads.load(std::memory_order_relaxed);
  s.bytes_uploaded = m.counters.bytes_uploaded.load(std::memory_order_relaxed);
  s.commits = m.counters.commits.load(std::memory_order_relaxed);
  s.bytes_committed = m.counters.bytes_committed.load(std::memory_order_relaxed);
  s.cancels = m.counters.cancels.load(std::memory_order_relaxed);
  s.copies = m.counters.copies.load(std::memory_order_relaxed);
  s.inline_fills = m.counters.inline_fills.load(std::memory_order_relaxed);
  s.pool_fills = m.counters.pool_fills.load(std::memory_order_relaxed);
  s.errors = m.counters.errors.load(std::memory_order_relaxed);
  s.direct_uploads = m.counters.direct_uploads.load(std::memory_order_relaxed);
  s.direct_bytes = m.counters.direct_bytes.load(std::memory_order_relaxed);
  s.memcpy_uploads = m.counters.memcpy_uploads.load(std::memory_order_relaxed);
  s.streaming_uploads = m.counters.streaming_uploads.load(std::memory_order_relaxed);
  s.probe_uploads = m.counters.probe_uploads.load(std::memory_order_relaxed);
  s.timed_uploads = m.counters.timed_uploads.load(std::memory_order_relaxed);
  const detail::PlannerEstimates e = m.planner->estimates();
  s.fill_gbps_per_thread_memcpy = e.memcpy_gbps_per_thread;
  s.fill_gbps_per_thread_streaming = e.streaming_gbps_per_thread;
  s.direct_gbps = e.direct_gbps;
  if (m.config.pinned_budget) {
    s.budget_held = m.config.pinned_budget->held();
    s.budget_cap = m.config.pinned_budget->cap();
  }
  s.pool = m.pool->stats();
  s.pinned_bytes = m.allocator->held();
  s.pinned_peak = m.allocator->peak();
  s.pinned_cap = m.allocator->cap();
  {
    std::lock_guard lock(impl_->ring_mu);
    s.ring = m.ring->stats();
  }
  const EventTimelineStats t = m.timeline->stats();
  s.completed = t.completed;
  s.last_point = m.timeline->last_opened();
  s.events = t.events;
  s.peak_pending_points = t.peak_pending;
  return s;
}

detail::UploadPlanner& detail::UploaderTestAccess::planner(Uploader& uploader) {
  return *uploader.impl_->planner;
}

// --- StagingSpan -----------------------------------------------------------------------------

StagingSpan::StagingSpan(StagingSpan&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      point_(std::exchange(other.point_, 0)) {}

StagingSpan& StagingSpan::operator=(StagingSpan&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) Uploader::cancel_open(*this);
    owner_ = std::exchange(other.owner_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    point_ = std::exchange(other.point_, 0);
  }
  return *this;
}

StagingSpan::~StagingSpan() {
  if (owner_ != nullptr) Uploader::cancel_open(*this);
}

}  // namespace staging::cuda
