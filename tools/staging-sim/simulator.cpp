#include "simulator.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim_context.hpp"
#include "units.hpp"

namespace staging::sim {

// ---------------------------------------------------------------------------------------------
// SimContext

SimContext::SimContext(const SimConfig& c, const Workload& w, RunResult& r,
                       testing::DelayModel model, std::vector<StallWindow> stalls)
    : config(c),
      workload(w),
      result(r),
      queue(clock, model, std::move(stalls), c.bandwidth, c.fault == Fault::EarlyCompletion),
      checker(InvariantChecker::Mode::Record, c.effective_cap()),
      steps_left_(add_sat(kStepsPerRun, w.uploads.size() > UINT64_MAX / kStepsPerUpload
                                            ? UINT64_MAX
                                            : w.uploads.size() * kStepsPerUpload)) {}

uint64_t SimContext::resolve_size(const Upload& u, uint64_t free_contiguous, uint64_t capacity) {
  switch (u.relative) {
    case RelativeSize::None:
      return u.size;
    case RelativeSize::FreeMinusOne:
      return free_contiguous > 1 ? free_contiguous - 1 : 1;
    case RelativeSize::Free:
      return free_contiguous > 0 ? free_contiguous : 1;
    case RelativeSize::FreePlusOne:
      return free_contiguous + 1;
    case RelativeSize::Capacity:
      return capacity;
    case RelativeSize::CapacityPlusOne:
      return capacity + 1;
    case RelativeSize::TwiceCapacity:
      return 2 * capacity;
  }
  return u.size;
}

void SimContext::sync_truth() {
  const TimelineValue truth = queue.truth_completed();
  checker.on_completed(truth);
  for (std::string& message : bytes.verify_through(truth, resolve)) {
    checker.report(Invariant::I1_NoOverlap, std::move(message));
  }
}

void SimContext::region_created(uint32_t region, uint64_t bytes_) {
  checker.on_region_created(region, bytes_);
  held_changed(static_cast<int64_t>(bytes_));
}

void SimContext::region_destroyed(uint32_t region) {
  if (tearing_down) {
    bytes.verify_region(region, resolve);  // final read of what completed
    checker.forget_region(region);
    return;
  }
  sync_truth();
  for (std::string& message : bytes.verify_region(region, resolve)) {
    checker.report(Invariant::I1_NoOverlap, std::move(message));
  }
  checker.on_region_destroyed(region);
}

std::optional<Duration> SimContext::retry_time() {
  const std::optional<Duration> next = queue.next_event();
  if (!next || config.poll_interval <= Duration{0}) return next;
  return std::min(*next, now() + config.poll_interval);
}

std::optional<Duration> SimContext::next_change() {
  std::optional<Duration> change = queue.next_event();
  if (const std::optional<Duration> trim = next_trim ? next_trim() : std::nullopt) {
    change = change ? std::min(*change, *trim) : *trim;
  }
  return change;
}

uint64_t SimContext::idle_periods(Duration period) {
  const std::optional<Duration> change = next_change();
  if (!change || period <= Duration{0} || *change <= now()) return 0;
  return static_cast<uint64_t>((*change - now() - Duration{1}) / period);
}

bool SimContext::step() {
  if (steps_left_ == 0) {
    out_of_steps = true;
    return false;
  }
  --steps_left_;
  return true;
}

void SimContext::held_changed(int64_t delta) {
  held_ = static_cast<uint64_t>(static_cast<int64_t>(held_) + delta);
  result.peak_held = std::max(result.peak_held, held_);
  sample();
}

void SimContext::sample() {
  if (!config.record_timeline) return;
  const Duration t = now();
  if (!result.samples.empty() && result.samples.back().time == t) {
    result.samples.back().held = held_;
    result.samples.back().in_flight = in_flight_;
    return;
  }
  result.samples.push_back(Sample{t, held_, in_flight_});
}

void SimContext::placed(const Reservation& r, uint32_t track, uint64_t charged,
                        ExhaustionPolicy policy, std::byte* memory, uint64_t region_bytes) {
  sync_truth();  // verify what completed before these bytes are written
  checker.on_reserve(r);
  ++result.reservations;
  upload_bytes = add_sat(upload_bytes, r.size);
  result.bytes_reserved = add_sat(result.bytes_reserved, r.size);
  batch_bytes = add_sat(batch_bytes, r.size);
  upload_token = r.token;
  if (memory != nullptr && r.offset <= region_bytes && r.size <= region_bytes - r.offset) {
    bytes.add(r.id, r.token, r.region, r.offset, r.size, memory);
  }
  Live live{0, charged};
  if (config.record_timeline) {
    live.span = result.spans.size();
    result.spans.push_back(Span{.placed = r,
                                .track = track,
                                .charged = charged,
                                .asked = asked,
                                .kind = upload != nullptr ? upload->kind : 0,
                                .frame = upload != nullptr ? upload->frame : -1,
                                .policy = policy,
                                .begin = now(),
                                .end = std::nullopt});
  }
  live_[r.id] = live;
  in_flight_ += charged;
  result.peak_in_flight = std::max(result.peak_in_flight, in_flight_);
  sample();
}

void SimContext::reclaimed(uint64_t id) {
  const auto it = live_.find(id);
  if (it == live_.end()) return;
  const Live live = it->second;
  live_.erase(it);
  in_flight_ -= std::min(in_flight_, live.charged);
  if (config.record_timeline) result.spans[live.span].end = now();
  sample();
}

void SimContext::mark(const Mark& m) {
  if (config.record_timeline) result.marks.push_back(m);
}

void SimContext::direct(uint64_t bytes_, BlockCause cause) {
  if (flush_batch) flush_batch();
  const TimelineValue value = queue.submit(bytes_);
  record_submission(value, false);
  upload_token = value;
  ++result.direct;
  upload_bytes = add_sat(upload_bytes, bytes_);
  result.direct_bytes = add_sat(result.direct_bytes, bytes_);
  result.direct_causes.add(cause);
  if (upload != nullptr) ++result.kinds[upload->kind].direct;
  mark(Mark{.time = now(),
            .kind = MarkKind::Direct,
            .cause = cause,
            .bytes = bytes_,
            .kind_index = upload != nullptr ? upload->kind : 0});
}

TimelineValue SimContext::submit(bool early) {
  const TimelineValue value = queue.submit(batch_bytes);
  batch_bytes = 0;
  record_submission(value, early);
  return value;
}

void SimContext::record_submission(TimelineValue value, bool early) {
  ++result.submissions;
  if (early) ++result.early_flushes;
  if (batch_frame >= 0 && !recent_.empty() && recent_.back().frame == batch_frame) {
    recent_.back().last = value;
  }
}

void SimContext::pace(int64_t frame) {
  const uint32_t n = config.frames_in_flight;
  if (n == 0) return;
  while (recent_.size() > n) {  // frames f - n .. f - 1 may stay queued while f records
    const TimelineValue v = recent_.front().last;
    recent_.pop_front();
    if (v == 0) continue;  // that frame went entirely by another route
    const Duration start = now();
    while (queue.truth_completed() < v && queue.can_complete(v)) {
      queue.wait_truth(v, Duration::max());  // to the completion (or the next stall's edge)
    }
    const Duration waited = now() - start;
    if (waited > Duration{0}) {
      ++result.pacing_waits;
      result.pacing_total += waited;
      result.pacing_longest = std::max(result.pacing_longest, waited);
      mark(Mark{.time = start, .duration = waited, .kind = MarkKind::Pacing, .token = v});
    }
  }
  recent_.push_back(RecentFrame{frame, 0});
}

// ---------------------------------------------------------------------------------------------
// The driver

namespace {

testing::DelayModel reseed(testing::DelayModel model, uint64_t seed) {
  if (model.kind == testing::DelayModel::Kind::SeededRandom) model.seed = seed;
  return model;
}

// Split streams an upload through the ring in chunks: a few per pass. Bound the passes, so that
// a run's time does not grow with its sizes.
std::optional<std::string> split_bound_error(const SimConfig& config, const Workload& workload) {
  constexpr uint64_t kMaxSplitPasses = 256;
  if (config.strategy == Strategy::Byte && config.policy == ExhaustionPolicy::Split) {
    for (std::size_t i = 0; i < workload.uploads.size(); ++i) {
      if (workload.uploads[i].size / kMaxSplitPasses >= config.capacity) {
        return fmt::format(
            "upload {} ({} bytes) would stream through the {} ring in more than {} passes under "
            "split, the simulator's bound: raise --capacity",
            i, workload.uploads[i].size, format_bytes(config.capacity), kMaxSplitPasses);
      }
    }
  }
  return std::nullopt;
}

// The result before the run: what was simulated, with every count at zero.
RunResult initial_result(const SimConfig& config, const Workload& workload,
                         const DelaySpec& delay) {
  RunResult result;
  result.config = config;
  result.workload = workload.name;
  result.workload_description = workload.description;
  result.delay = delay.text;
  result.capacity = config.capacity;
  result.cap = config.effective_cap();
  for (const std::string& k : workload.kinds)
    result.kinds.push_back(KindStats{k, 0, 0, 0});
  if (result.kinds.empty()) result.kinds.push_back(KindStats{"upload", 0, 0, 0});
  return result;
}

// Per upload: arrival, the token of its last placed byte (0: all routed around), and when the
// caller was done with it.
struct Timing {
  Duration arrival;
  TimelineValue token;
  Duration done;
};

// The caller's side of a run: feeds the uploads to the strategy at their times, polling as an
// engine does, then drains the queue.
class Driver {
 public:
  Driver(SimContext& ctx, StrategyRunner& strategy, RunResult& result,
         const std::vector<Upload>& uploads, Duration tick)
      : ctx_(ctx), strategy_(strategy), result_(result), uploads_(uploads), tick_(tick) {
    timings_.reserve(uploads.size());
  }

  const std::vector<Timing>& timings() const { return timings_; }

  // Polls every poll_interval while the clock moves to `t` (an engine's per-frame tick). A tick
  // before the next change finds what the last poll found: those are skipped, so a gap of years
  // between two uploads costs nothing.
  void advance_polling(Duration t) {
    if (tick_ > Duration{0}) {
      if (next_poll_ <= ctx_.now()) next_poll_ = ctx_.now() + tick_;
      while (next_poll_ < t && ctx_.step()) {
        const Duration useful = std::min(ctx_.next_change().value_or(t), t);
        if (useful > next_poll_)
          next_poll_ += (useful - next_poll_ + tick_ - Duration{1}) / tick_ * tick_;
        if (next_poll_ >= t) break;
        ctx_.queue.advance_to(next_poll_);
        strategy_.poll();
        ctx_.sync_truth();
        next_poll_ += tick_;
      }
    }
    ctx_.queue.advance_to(t);
  }

  // Why the run cannot go on (the work bound, or the clock's limit); none while it can.
  std::optional<std::string> stopped(std::size_t i) const {
    const std::size_t n = uploads_.size();
    const std::string which = i < n ? fmt::format("upload {} ({} bytes at {})", i, uploads_[i].size,
                                                  format_duration(uploads_[i].time))
                                    : std::string("draining the queue");
    if (ctx_.out_of_steps) {
      return fmt::format(
          "{}: the run took more than {} steps (reservation attempts, retries, polls) for {} "
          "uploads, so the simulator stops. The caller retries every poll interval or wait "
          "timeout while the queue holds the bytes; a queue that holds them this long (slow "
          "--delay or --bandwidth, long stalls), a tiny --poll-interval or --wait-timeout, or "
          "an upload far larger than the ring under split makes too many",
          which, SimContext::kStepsPerRun + n * SimContext::kStepsPerUpload, n);
    }
    if (ctx_.queue.past_clock_limit()) {
      return fmt::format(
          "{}: the queue would complete it after {} of virtual time, the simulator's limit "
          "(copying {} bytes at --bandwidth {} B/s takes that long)",
          which, format_duration(kClockLimit), i < n ? uploads_[i].size : 0, ctx_.config.bandwidth);
    }
    return std::nullopt;
  }

  // Upload i at its time: a new frame is paced, the strategy places it, the result counts it.
  // The reason the run stops, if it does.
  std::optional<std::string> feed(std::size_t i) {
    const Upload& u = uploads_[i];
    advance_polling(u.time);
    if (u.frame >= 0 && (!last_frame_ || *last_frame_ != u.frame)) {
      if (strategy_.batch_open()) strategy_.flush(false);
      ctx_.pace(u.frame);
      last_frame_ = u.frame;
      ++result_.frames;
    }
    if (u.frame < 0) ++result_.streaming_uploads;
    strategy_.poll();
    ctx_.sync_truth();
    if (strategy_.batch_open() && (u.frame < 0 || u.frame != ctx_.batch_frame)) {
      strategy_.flush(false);
    }
    ctx_.batch_frame = u.frame;
    ctx_.upload = &u;
    ctx_.upload_token = 0;
    ctx_.upload_bytes = 0;
    strategy_.make(u, i);
    if (auto why = stopped(i)) return why;
    count(u);
    ctx_.upload = nullptr;
    const bool run_ends =
        u.frame < 0 || i + 1 == uploads_.size() || uploads_[i + 1].frame != u.frame;
    if (run_ends && strategy_.batch_open()) strategy_.flush(false);
    return std::nullopt;
  }

  // Drain: every submission completes (unless the queue is stalled for good). The caller polls
  // every tick while it waits; ticks before the next change are skipped. The reason the run
  // stops, if it does.
  std::optional<std::string> drain() {
    if (strategy_.batch_open()) strategy_.flush(false);
    const TimelineValue last = ctx_.queue.submitted();
    const Duration drain_tick = tick_ > Duration{0} ? tick_ : std::chrono::seconds(1);
    while (ctx_.queue.truth_completed() < last) {
      if (!ctx_.queue.can_complete(last)) {
        result_.drained = false;
        break;
      }
      if (!ctx_.step()) return stopped(uploads_.size());
      ctx_.queue.advance_to(ctx_.now() +
                            drain_tick * static_cast<int64_t>(ctx_.idle_periods(drain_tick)));
      ctx_.queue.wait_truth(last, drain_tick);
      strategy_.poll();
      ctx_.sync_truth();
    }
    strategy_.poll();
    ctx_.sync_truth();
    return std::nullopt;
  }

 private:
  // Counts upload u, just placed, in the result, with the delay the caller felt.
  void count(const Upload& u) {
    ++result_.uploads;
    result_.upload_bytes = add_sat(result_.upload_bytes, ctx_.upload_bytes);
    KindStats& k = result_.kinds[std::min<std::size_t>(u.kind, result_.kinds.size() - 1)];
    ++k.uploads;
    k.bytes = add_sat(k.bytes, ctx_.upload_bytes);
    const Duration delay_felt = ctx_.now() > u.time ? ctx_.now() - u.time : Duration{0};
    result_.delay_total = add_sat(result_.delay_total, delay_felt);
    result_.delay_max = std::max(result_.delay_max, delay_felt);
    if (delay_felt > Duration{0}) ++result_.delayed_uploads;
    timings_.push_back(Timing{u.time, ctx_.upload_token, ctx_.now()});
  }

  SimContext& ctx_;
  StrategyRunner& strategy_;
  RunResult& result_;
  const std::vector<Upload>& uploads_;
  const Duration tick_;
  Duration next_poll_ = tick_;
  std::optional<int64_t> last_frame_;
  std::vector<Timing> timings_;
};

// Latency (arrival -> GPU done) and busy time (the union of those intervals).
void add_latency(RunResult& result, const std::vector<Timing>& timings) {
  Duration busy_from{0}, busy_to{0};
  bool busy_open = false;
  for (const Timing& t : timings) {
    Duration done = t.done;
    if (t.token != 0) {
      const Submission& s = result.queue_log[static_cast<std::size_t>(t.token - 1)];
      done = std::max(done, s.completes && *s.completes <= result.end ? *s.completes : result.end);
    }
    const Duration latency = done - t.arrival;
    result.latency_total = add_sat(result.latency_total, latency);
    result.latency_max = std::max(result.latency_max, latency);
    if (busy_open && t.arrival <= busy_to) {
      busy_to = std::max(busy_to, done);
    } else {
      if (busy_open) result.busy += busy_to - busy_from;  // a union of intervals: at most `end`
      busy_from = t.arrival;
      busy_to = done;
      busy_open = true;
    }
  }
  if (busy_open) result.busy += busy_to - busy_from;  // a union of intervals: at most `end`
}

}  // namespace

double RunResult::throughput_mib_s() const noexcept {
  const double seconds = static_cast<double>(busy.count()) / 1e9;
  if (seconds <= 0) return 0;
  return static_cast<double>(upload_bytes) / (1024.0 * 1024.0) / seconds;
}

Expected<RunResult, std::string> simulate(const SimConfig& config, const Workload& workload,
                                          const ProgressFn& progress) {
  if (auto error = config_error(config)) return unexpected(std::move(*error));
  if (auto error = split_bound_error(config, workload)) return unexpected(std::move(*error));
  // A trace without a delay model of its own gets a busy frame's GPU latency.
  const DelaySpec delay = config.delay             ? *config.delay
                          : workload.default_delay ? *workload.default_delay
                                                   : *parse_delay("random:1ms:6ms", 0, nullptr);
  std::vector<StallWindow> stalls = workload.stalls;
  stalls.insert(stalls.end(), config.stalls.begin(), config.stalls.end());

  RunResult result = initial_result(config, workload, delay);
  SimContext ctx(config, workload, result, reseed(delay.model, config.seed), std::move(stalls));
  result.stalls = ctx.queue.stalls();
  std::string error;
  std::unique_ptr<StrategyRunner> strategy = config.strategy == Strategy::Byte
                                                 ? make_byte_strategy(ctx, &error)
                                                 : make_slot_strategy(ctx, &error);
  if (!strategy) return unexpected(std::move(error));
  ctx.flush_batch = [&strategy] { strategy->submit_pending(); };

  const std::vector<Upload>& uploads = workload.uploads;
  const std::size_t n = uploads.size();
  const std::size_t progress_step = std::max<std::size_t>(1, n / 200);
  if (n > 0) result.first_arrival = uploads.front().time;
  Driver driver(ctx, *strategy, result, uploads, config.poll_interval);
  for (std::size_t i = 0; i < n; ++i) {
    if (auto why = driver.feed(i)) return unexpected(std::move(*why));
    if (progress && (i % progress_step == 0 || i + 1 == n)) progress(i + 1, n);
  }
  if (n > 0) result.last_arrival = uploads.back().time;
  if (auto why = driver.drain()) return unexpected(std::move(*why));
  result.end = std::max(ctx.now(), result.last_arrival);
  strategy->finish();
  result.queue_log = ctx.queue.submissions();
  add_latency(result, driver.timings());

  ctx.tearing_down = true;
  ctx.flush_batch = nullptr;
  strategy.reset();  // releases every region (the checker forgets them)
  result.checks = ctx.checker.checks();
  result.stamps_checked = ctx.bytes.checked();
  result.stamps_corrupted = ctx.bytes.corrupted();
  result.violations = ctx.checker.violations();
  for (const Violation& v : result.violations) {
    ++result.violations_by_invariant[static_cast<std::size_t>(v.invariant)];
  }
  return result;
}

}  // namespace staging::sim
