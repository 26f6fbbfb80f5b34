#include "upload_planner.hpp"

#include <algorithm>
#include <cmath>

namespace staging::cuda::detail {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMinDirect = uint64_t{256}
                                << 10;     // smaller direct copies cost more than they save
constexpr double kDefaultDirectGbps = 10;  // pageable cudaMemcpy, before any is measured
constexpr double kSpeedWeight = 0.2;       // weight of a new sample in the averages
constexpr double kTimeWeight = 0.3;
constexpr unsigned kExploreSamples = 3;  // MethodClass::first's size
// The other method takes a measured class from the prior's only when this much faster.
constexpr double kSwitchMargin = 0.95;
// Sleeping threads are woken only when the caller alone would take this many wake-ups' time.
constexpr double kWakeWorth = 1.5;
// After this many uploads in a row that woke nobody, one wakes the threads anyway: the wake-up
// is measured only when one happens, and a slow one (a host busy for a moment) would otherwise
// keep the threads asleep for good.
constexpr unsigned kWakeRecheck = 64;
// An upload of at least this many chunks fills with no more threads than keep ahead of the link
// by kFillMargin (measured on the H200 host: from 8 MiB, one default chunk, the limit helps; at
// 4 MiB it costs more in the first piece's fill than it saves).
constexpr uint64_t kLimitFromChunks = 1;
constexpr double kFillMargin = 1.3;
constexpr unsigned kProbeFirst = 16;
constexpr unsigned kProbeMost = 256;
// A timed planner times every probe and, besides, every this many uploads of a class (the winner's
// figure stays current; each timed upload costs two event records).
constexpr unsigned kTimedEvery = 8;

unsigned index_of(FillMethod m) {
  return m == FillMethod::Streaming ? 1 : 0;
}

double blend(double old, double sample, double weight) {
  return old <= 0 ? sample : old + weight * (sample - old);
}

uint64_t round_up(uint64_t n, uint64_t grain) {
  return (n + grain - 1) / grain * grain;
}

}  // namespace

UploadPlanner::UploadPlanner(const PlannerConfig& config) : config_(config) {
  config_.alignment = std::max<uint64_t>(1, config_.alignment);
  config_.chunk_bytes = std::max<uint64_t>(1, config_.chunk_bytes);
  config_.min_piece_bytes = std::clamp<uint64_t>(config_.min_piece_bytes, 1, config_.chunk_bytes);
}

unsigned UploadPlanner::size_class(uint64_t bytes) noexcept {
  unsigned c = 0;
  while (c + 1 < kClasses && (bytes >> (c + 1)) != 0)
    ++c;
  return c;
}

double UploadPlanner::fill_speed(FillMethod method) const {
  return speed_[index_of(method)];
}

FillMethod UploadPlanner::choose_method(uint64_t bytes, bool& probe) {
  probe = false;
  if (config_.fill != FillMethod::Auto) return resolve_fill_method(config_.fill);
  if (resolve_fill_method(FillMethod::Streaming) != FillMethod::Streaming)
    return FillMethod::Memcpy;
  // The prior, before a class has been measured: an upload that cycles through the ring finds it
  // in the CPU's cache (plain stores win); a smaller one writes memory the cache does not hold.
  const FillMethod prior =
      bytes < 2 * config_.ring_bytes ? FillMethod::Streaming : FillMethod::Memcpy;
  Class& c = classes_[size_class(bytes)];
  const MethodClass& m = c.method[0];
  const MethodClass& s = c.method[1];
  if (m.samples < kExploreSamples || s.samples < kExploreSamples) {
    probe = true;
    if (m.samples == s.samples) return prior;
    return m.samples < s.samples ? FillMethod::Memcpy : FillMethod::Streaming;
  }
  const FillMethod other = prior == FillMethod::Memcpy ? FillMethod::Streaming : FillMethod::Memcpy;
  const double prior_time = c.method[index_of(prior)].ns_per_byte;
  const double other_time = c.method[index_of(other)].ns_per_byte;
  const FillMethod best = other_time < kSwitchMargin * prior_time ? other : prior;
  if (++c.since_probe >= c.probe_interval) {
    c.since_probe = 0;
    probe = true;
    return best == FillMethod::Memcpy ? FillMethod::Streaming : FillMethod::Memcpy;
  }
  return best;
}

bool UploadPlanner::wants_landing(uint64_t bytes, bool probe) {
  if (!config_.timed || config_.fill != FillMethod::Auto ||
      resolve_fill_method(FillMethod::Streaming) != FillMethod::Streaming) {
    return false;
  }
  if (probe) return true;
  Class& c = classes_[size_class(bytes)];
  if (++c.since_timed < kTimedEvery) return false;
  c.since_timed = 0;
  return true;
}

uint64_t UploadPlanner::ring_piece(uint64_t bytes, FillMethod method, unsigned helpers) const {
  std::lock_guard lock(mu_);
  if (forced_.piece_bytes) return std::min(*forced_.piece_bytes, bytes);
  return piece_for(bytes, method, helpers);
}

void UploadPlanner::set_override(const PlanOverride& forced) {
  std::lock_guard lock(mu_);
  forced_ = forced;
}

PlanOverride UploadPlanner::override_copy() const {
  std::lock_guard lock(mu_);
  return forced_;
}

uint64_t UploadPlanner::piece_for(uint64_t ring_part, FillMethod method, unsigned helpers) const {
  const uint64_t grain = round_up(kPage, config_.alignment);
  if (ring_part <= config_.min_piece_bytes) return ring_part;
  const double fill = fill_speed(method) * (helpers + 1);  // bytes per ns
  const double overhead = static_cast<double>(config_.copy_overhead.count());
  const double best = std::sqrt(static_cast<double>(ring_part) * overhead * fill);
  const double clamped = std::clamp(best, static_cast<double>(config_.min_piece_bytes),
                                    static_cast<double>(config_.chunk_bytes));
  // Even pieces: n of them, each a multiple of the grain, none above the chunk.
  const uint64_t n = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::llround(static_cast<double>(ring_part) / clamped)));
  const uint64_t piece = round_up((ring_part + n - 1) / n, grain);
  return std::min({piece, config_.chunk_bytes, ring_part});
}

uint64_t UploadPlanner::direct_share(uint64_t bytes, FillMethod method, unsigned helpers) {
  if (!config_.direct) return 0;
  std::lock_guard lock(mu_);
  const double f = fill_speed(method) * helpers;  // the caller copies directly
  const double c = config_.link_gbps;
  if (f >= c * 0.95) return 0;
  double d = classes_[size_class(bytes / 2)].direct_gbps;
  if (d <= 0) d = classes_[size_class(bytes)].direct_gbps;
  if (d <= 0) d = kDefaultDirectGbps;
  uint64_t x = bytes;
  if (f > 0) {
    const double share = std::clamp((1 / f - 1 / c) / (1 / d - 1 / c + 1 / f), 0.0, 1.0);
    // Seconds per byte of the upload: the ring alone (the caller fills too) vs with the part.
    const double ring_alone = 1 / std::min(fill_speed(method) * (helpers + 1), c);
    const double hybrid = (1 - share) / f;
    if (hybrid > 0.9 * ring_alone) return 0;
    x = static_cast<uint64_t>(static_cast<double>(bytes) * share);
    x = x / (uint64_t{64} << 10) * (uint64_t{64} << 10);
  } else if (1 / d > 0.9 * (1 / std::min(fill_speed(method), c))) {
    return 0;  // no pool threads, and the caller's own fill is as fast as the driver's copy
  }
  if (x < kMinDirect) return 0;
  if (bytes - x < config_.min_piece_bytes) return bytes;
  return x;
}

unsigned UploadPlanner::threads_for_link(FillMethod method) const {
  const double fillers = std::ceil(kFillMargin * config_.link_gbps / fill_speed(method));
  return static_cast<unsigned>(std::clamp(fillers, 2.0, 1024.0)) - 1;
}

bool UploadPlanner::worth_waking(uint64_t bytes, FillMethod method, const PoolState& pool) {
  if (pool.awake >= config_.fill_threads || pool.wake_latency <= Duration::zero()) return true;
  // Woken threads start helping a wake-up after the call: not worth it for an upload the caller
  // (with the threads that are awake) fills in little more than that.
  const double alone_ns =
      static_cast<double>(bytes) / (fill_speed(method) * (pool.awake + 1));  // bytes per ns
  if (alone_ns < kWakeWorth * static_cast<double>(pool.wake_latency.count()) &&
      ++unwoken_ < kWakeRecheck) {
    return false;
  }
  unwoken_ = 0;
  return true;
}

UploadPlan UploadPlanner::plan_without_direct(uint64_t bytes, const PoolState& pool) {
  std::lock_guard lock(mu_);
  UploadPlan p;
  if (forced_.method) {
    p.method = resolve_fill_method(*forced_.method);
  } else {
    p.method = choose_method(bytes, p.probe);
    p.time_landing = wants_landing(bytes, p.probe);
  }
  p.helpers = config_.fill_threads;
  if (pool.uploads > 1 && p.helpers > 0) {
    // The threads serve every upload in progress in turn (lanes): this one gets its share.
    p.helpers = std::max(1u, (p.helpers + pool.uploads - 1) / pool.uploads);
  }
  p.wake = forced_.wake ? *forced_.wake : worth_waking(bytes, p.method, pool);
  if (!p.wake) p.helpers = std::min(p.helpers, pool.awake);  // only the threads awake help
  if (bytes >= kLimitFromChunks * config_.chunk_bytes) {
    const unsigned enough = threads_for_link(p.method);
    if (enough < p.helpers) {
      p.helpers = enough;
      p.max_threads = enough;
    }
  }
  p.piece_bytes = forced_.piece_bytes ? std::min(*forced_.piece_bytes, bytes)
                                      : piece_for(bytes, p.method, p.helpers);
  return p;
}

void UploadPlanner::record(const UploadPlan& plan, const UploadOutcome& o) {
  std::lock_guard lock(mu_);
  const unsigned mi = index_of(plan.method);
  if (o.fill_bytes >= (uint64_t{64} << 10) && o.fill_busy_ns > 0) {
    speed_[mi] =
        blend(speed_[mi], static_cast<double>(o.fill_bytes) / static_cast<double>(o.fill_busy_ns),
              kSpeedWeight);
  }
  if (o.direct_bytes >= kMinDirect && o.direct_took.count() > 0) {
    double& d = classes_[size_class(o.direct_bytes)].direct_gbps;
    d = blend(d, static_cast<double>(o.direct_bytes) / static_cast<double>(o.direct_took.count()),
              kTimeWeight);
  }
  if (!config_.timed) note_time(plan, o.bytes, o.call);
}

void UploadPlanner::record_landed(const UploadPlan& plan, uint64_t bytes, Duration landed) {
  std::lock_guard lock(mu_);
  if (config_.timed) note_time(plan, bytes, landed);
}

void UploadPlanner::missed_landing(const UploadPlan& plan, uint64_t bytes) {
  std::lock_guard lock(mu_);
  Class& c = classes_[size_class(bytes)];
  if (!plan.probe) {
    c.since_timed = kTimedEvery - 1;
  } else if (c.method[0].samples >= kExploreSamples && c.method[1].samples >= kExploreSamples) {
    c.since_probe = c.probe_interval - 1;  // (while exploring, every upload probes anyway)
  }
}

void UploadPlanner::set_timed(bool timed) {
  std::lock_guard lock(mu_);
  if (config_.timed == timed) return;
  config_.timed = timed;
  // The figures so far are of the other measure: every class explores again.
  for (Class& c : classes_) {
    c.method = {};
    c.since_probe = 0;
    c.since_timed = 0;
    c.probe_interval = kProbeFirst;
  }
}

void UploadPlanner::note_time(const UploadPlan& plan, uint64_t bytes, Duration took) {
  if (config_.fill != FillMethod::Auto || bytes == 0 || took.count() <= 0) return;
  const unsigned mi = index_of(plan.method);
  Class& c = classes_[size_class(bytes)];
  MethodClass& mine = c.method[mi];
  const double sample = static_cast<double>(took.count()) / static_cast<double>(bytes);
  if (mine.samples < mine.first.size()) {
    // Exploring: the latest sample until there are three, then their median.
    mine.first[mine.samples] = sample;
    mine.ns_per_byte = sample;
    if (mine.samples + 1 == mine.first.size()) {
      std::array<double, 3> sorted = mine.first;
      std::sort(sorted.begin(), sorted.end());
      mine.ns_per_byte = sorted[1];
    }
  } else {
    mine.ns_per_byte = blend(mine.ns_per_byte, sample, kTimeWeight);
  }
  ++mine.samples;
  const MethodClass& other = c.method[1 - mi];
  if (plan.probe && mine.samples > kExploreSamples && other.samples >= kExploreSamples) {
    // A probe of the method that was losing: back off while it keeps losing.
    c.probe_interval = mine.ns_per_byte > other.ns_per_byte
                           ? std::min(kProbeMost, c.probe_interval * 2)
                           : kProbeFirst;
  }
}

PlannerEstimates UploadPlanner::estimates() const {
  std::lock_guard lock(mu_);
  PlannerEstimates e;
  e.memcpy_gbps_per_thread = speed_[0];
  e.streaming_gbps_per_thread = speed_[1];
  double sum = 0;
  unsigned n = 0;
  for (const Class& c : classes_) {
    if (c.direct_gbps > 0) {
      sum += c.direct_gbps;
      ++n;
    }
  }
  e.direct_gbps = n != 0 ? sum / n : 0;
  return e;
}

}  // namespace staging::cuda::detail
