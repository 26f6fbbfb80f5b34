// UploadPlanner: how one upload() is carried out, from rates it measures as uploads run.
//
// For each upload it decides
//  - the piece size: the ring part is filled and copied in pieces so that filling piece k + 1
//    overlaps copying piece k. A small piece starts the first copy early; every copy costs a fixed
//    overhead on the copy engine (`copy_overhead`). For an upload of B bytes filled at F bytes/s,
//    the time lost to both is about p / F + (B / p) * overhead, least at p = sqrt(B * overhead *
//    F); clamped to [min_piece_bytes, chunk_bytes] and made even over the upload.
//  - the fill method (UploaderConfig::fill == Auto): per upload size class (powers of two), the one
//    whose uploads have taken less time per byte so far. Each class tries both methods on its first
//    uploads (three times each), then re-tries the other one now and then (every 16th upload of
//    the class, backing off to every 256th while it keeps losing), so a host whose crossover
//    differs from the prior's finds its own. The prior's method keeps the class unless the other
//    is measured faster by 5 %: noisy samples do not flip a class to the method that loses. A
//    method's figure starts as the median of its first three samples (one slow start, a page
//    fault or a busy moment, does not decide the class), then follows an exponential average.
//    An upload's time is from its call until its last copy landed (record_landed(), measured by a
//    LandingTimer on the uploads the plan marks `time_landing`: every probe, and every 8th upload
//    of a class besides) where the device can time events (PlannerConfig::timed); the call's own
//    duration only where it cannot. The call ends when the last copy is queued: a method that
//    fills quickly but leaves the ring slow for the copy engine to read would win by it.
//  - whether to wake the pool's sleeping threads: not for an upload the calling thread fills
//    faster alone than the measured wake-up takes (the pool's threads that are awake still help);
//    the pieces are then sized for the threads that will actually fill. Every 64th upload in a
//    row that would wake nobody wakes them anyway, so the wake-up is measured again (one measured
//    on a host busy for a moment does not keep the threads asleep for good).
//  - how many pool threads fill at once: for an upload of at least one chunk, no more than fill
//    the ring at 1.3 x the link rate (`link_gbps` over the method's measured speed per thread,
//    less the caller), from its second piece on (the first is filled before any of its copies
//    runs: every thread takes part, and the first copy starts sooner; on an H100 host 16 MiB went
//    from 0.76-0.77 to 0.81 of the link and 64 MiB from 0.82-0.84 to 0.86-0.87). More only compete
//    with the copy engine for memory bandwidth: on the H200 host a 64 MiB upload reached 0.82-0.86
//    of the link with 4 threads and 0.76-0.78 with 8 to 15, whose fill alone runs at 2-3 x the
//    link; 16 MiB went from 0.73 to 0.78 and 24 MiB from 0.75 to 0.81 with the limit. No direct
//    part is planned for a limited upload. Smaller uploads are mostly the first piece's fill, which
//    every thread shortens (4 MiB lost 0.03-0.07 with the limit).
//  - the direct part: with few fill threads the ring fills more slowly than the CUDA driver's own
//    pageable copy runs. Then the upload's first `direct_bytes` are copied straight from the source
//    (cudaMemcpyAsync; the stream must be idle) while the pool fills the ring for the rest, which
//    is copied after it on the stream. Direct part x of B bytes, driver rate D, fill rate F (the
//    pool's threads; the caller is busy with the direct copy), link rate C: the ring's copies wait
//    for the direct copy, so both sides end together when
//        x / D + (B - x) / C = (B - x) / F   =>   x = B (1/F - 1/C) / (1/D - 1/C + 1/F),
//    A direct part is planned only when that beats the ring alone (the caller filling too) by 10 %:
//    in practice with one or two fill threads.
//
// Rates measured from the uploads (exponentially weighted): each method's fill speed per thread
// (bytes copied / time the threads spent copying), the direct copy's rate per size class, and
// each method's time per byte per size class. Internal to the cuda layer; GPU-free and tested
// without a device. Threading: every member is safe from any thread (one mutex).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>

#include "staging/core/fill_pool.hpp"
#include "staging/core/timeline.hpp"

namespace staging::cuda::detail {

/// The planner's fixed inputs (UploaderConfig values after validation).
struct PlannerConfig {
  uint64_t ring_bytes = 0;
  uint64_t chunk_bytes = 0;      ///< largest piece
  uint64_t min_piece_bytes = 0;  ///< smallest piece (unless the ring part is smaller)
  uint64_t alignment = 1;        ///< pieces are multiples of this (and of 4 KiB)
  unsigned fill_threads = 1;     ///< the pool's threads (the caller fills too)
  FillMethod fill = FillMethod::Auto;
  bool direct = true;     ///< a direct part may be planned
  double link_gbps = 50;  ///< the copy engine's rate from pinned memory
  /// Uploads can be timed until their copies land (record_landed()): the fill method is judged
  /// by those times only. False: by the call's duration (record()).
  bool timed = false;
  Duration copy_overhead{2700};  ///< fixed cost of one copy on the copy engine
};

/// The fill pool as an upload finds it (the fill engine's awake() and wake_latency()).
struct PoolState {
  unsigned awake = ~0u;      ///< threads not asleep now (>= fill_threads: all of them)
  Duration wake_latency{0};  ///< what waking the others costs (zero: not measured yet)
  /// Uploads in progress on the pool, this one included: a pool shared by several Uploaders (one
  /// per device) splits its threads between them, and each plans with its share.
  unsigned uploads = 1;
};

/// What plan() decided for one upload.
struct UploadPlan {
  uint64_t direct_bytes = 0;  ///< leading bytes copied straight from the source
  uint64_t piece_bytes = 0;   ///< size of the ring part's pieces (the last may be smaller)
  FillMethod method = FillMethod::Memcpy;  ///< resolved (never Auto)
  bool probe = false;  ///< the method was chosen to measure it, not because it won
  /// Time this upload until its last copy lands and hand it to record_landed() (timed planners,
  /// Auto fill only).
  bool time_landing = false;
  bool wake = true;      ///< wake the pool's sleeping threads for this upload's pieces
  unsigned helpers = 0;  ///< pool threads counted on to fill (the caller fills too)
  /// The most pool threads on this upload's pieces at once, from its second piece on (the first
  /// ring piece takes every thread); FillJob::max_threads, 0: no limit.
  unsigned max_threads = 0;
};

/// What an upload measured, for record().
struct UploadOutcome {
  uint64_t bytes = 0;         ///< the whole upload
  Duration call{0};           ///< upload() from start to return
  uint64_t fill_bytes = 0;    ///< bytes the pool (and the caller) filled in slices
  uint64_t fill_busy_ns = 0;  ///< their copying time, summed over threads
  uint64_t direct_bytes = 0;  ///< the direct part
  Duration direct_took{0};    ///< from its cudaMemcpyAsync call until it was seen complete
};

/// The current estimates, for stats.
struct PlannerEstimates {
  double memcpy_gbps_per_thread = 0;     ///< fill speed of one thread, Memcpy
  double streaming_gbps_per_thread = 0;  ///< fill speed of one thread, Streaming
  double direct_gbps = 0;                ///< direct copy rate, averaged over size classes seen
};

/// Values that replace the planner's own decisions (tests of the pipeline's paths).
struct PlanOverride {
  std::optional<uint64_t> direct_bytes;  ///< the direct part (still only on an idle stream)
  std::optional<uint64_t> piece_bytes;   ///< the piece size (> 0)
  std::optional<FillMethod> method;      ///< the fill method
  /// Whether to wake the pool's sleeping threads (true: every pool thread helps, whatever the
  /// measured wake-up costs, up to the thread limit of an upload of at least one chunk)
  std::optional<bool> wake;
};

/// See the file comment.
class UploadPlanner {
 public:
  explicit UploadPlanner(const PlannerConfig& config);

  /// Plans an upload of `bytes` (> 0) with the pool as `pool` says. `stream_idle` is asked (at
  /// most once) only when a direct part would be planned; it says whether the stream has no work
  /// queued.
  template <class StreamIdle>
  UploadPlan plan(uint64_t bytes, StreamIdle&& stream_idle, const PoolState& pool = {}) {
    UploadPlan p = plan_without_direct(bytes, pool);
    const auto forced = override_copy();
    // A thread limit means the fill already outruns the link: no direct part then.
    const uint64_t direct = forced.direct_bytes  ? std::min(*forced.direct_bytes, bytes)
                            : p.max_threads != 0 ? 0
                                                 : direct_share(bytes, p.method, p.helpers);
    if (direct > 0 && stream_idle()) {
      p.direct_bytes = direct;
      p.piece_bytes = direct < bytes ? ring_piece(bytes - direct, p.method, p.helpers) : 0;
    }
    return p;
  }
  /// The plan without a direct part (Wait and Defer reservations, or a busy stream).
  UploadPlan plan_without_direct(uint64_t bytes, const PoolState& pool = {});
  /// The piece size for a ring part of `bytes` filled with `method` by `helpers` pool threads and
  /// the caller.
  [[nodiscard]] uint64_t ring_piece(uint64_t bytes, FillMethod method, unsigned helpers) const;
  /// Feeds what an upload planned by plan() measured.
  void record(const UploadPlan& plan, const UploadOutcome& outcome);
  /// Feeds how long an upload of `bytes` planned by plan() took from its call until its last copy
  /// landed (a timed planner's samples of its fill method; ignored by an untimed one).
  void record_landed(const UploadPlan& plan, uint64_t bytes, Duration landed);
  /// An upload of `bytes` whose plan asked for timing could not be timed (the timer was busy with
  /// an earlier upload): the class's next upload takes its turn (a probe stays a probe).
  void missed_landing(const UploadPlan& plan, uint64_t bytes);
  /// From now on judge the fill method by landed times (true) or by the calls' durations. A
  /// change forgets every class's figures (they were of the other measure): each explores again.
  void set_timed(bool timed);
  /// The current estimates.
  [[nodiscard]] PlannerEstimates estimates() const;
  /// Replaces the planner's decisions from now on (tests).
  void set_override(const PlanOverride& forced);

  /// The size class of `bytes`: floor(log2), clamped to the table.
  [[nodiscard]] static unsigned size_class(uint64_t bytes) noexcept;
  /// Number of size classes (2^0 .. 2^(kClasses - 1) bytes and above).
  static constexpr unsigned kClasses = 48;

 private:
  struct MethodClass {
    double ns_per_byte = 0;  // 0: no sample yet
    unsigned samples = 0;
    std::array<double, 3> first{};  // the first samples: their median starts the average
  };
  struct Class {
    std::array<MethodClass, 2> method;  // [0] Memcpy, [1] Streaming
    unsigned since_probe = 0;
    unsigned since_timed = 0;
    unsigned probe_interval = 16;
    double direct_gbps = 0;  // 0: none measured
  };
  PlanOverride override_copy() const;
  FillMethod choose_method(uint64_t bytes, bool& probe);
  // Whether to time an upload of `bytes` to its landing (counts since_timed).
  bool wants_landing(uint64_t bytes, bool probe);
  // Feeds one sample of `plan.method`'s time for `bytes` to its size class.
  void note_time(const UploadPlan& plan, uint64_t bytes, Duration took);
  uint64_t piece_for(uint64_t ring_bytes_of_upload, FillMethod method, unsigned helpers) const;
  uint64_t direct_share(uint64_t bytes, FillMethod method, unsigned helpers);
  double fill_speed(FillMethod method) const;  // bytes per ns, one thread
  // Whether to wake the pool's sleeping threads for an upload of `bytes` (counts unwoken_).
  bool worth_waking(uint64_t bytes, FillMethod method, const PoolState& pool);
  // The pool threads that, with the caller, fill at the link rate with a margin (>= 1).
  unsigned threads_for_link(FillMethod method) const;

  PlannerConfig config_;
  mutable std::mutex mu_;
  std::array<Class, kClasses> classes_{};
  std::array<double, 2> speed_{6.0, 6.0};  // bytes per ns (GB/s) per thread, [Memcpy, Streaming]
  PlanOverride forced_;
  unsigned unwoken_ = 0;  // uploads in a row that woke no sleeping thread
};

}  // namespace staging::cuda::detail
