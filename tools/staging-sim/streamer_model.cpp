// The streamer beside the frame ring: see streamer_model.hpp.
#include "streamer_model.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "delay_spec.hpp"
#include "sim_context.hpp"
#include "simulator.hpp"
#include "staging/detail/core/stream_scheduler.hpp"
#include "staging/testing/fake_stream_backend.hpp"

namespace staging::sim {
namespace {

// The most pump steps, enqueues and clock moves one run may take (a run is bounded in work).
constexpr uint64_t kMaxSteps = 50'000'000;
// Uploads read the shared random source from one of this many offsets.
constexpr uint64_t kOffsets = 4093;

// The graphics half's configuration: the frame uploads through a byte ring of half the capacity.
SimConfig graphics_config(const SimConfig& config) {
  SimConfig graphics = config;
  graphics.strategy = Strategy::Byte;
  graphics.capacity = std::max<uint64_t>(1, config.capacity / 2);
  graphics.cap = 0;
  graphics.fallback_cap = std::min(config.fallback_cap, graphics.effective_cap());
  return graphics;
}

// The workload's frame uploads (a workload of their own); its streaming uploads go to `streamed`.
Workload split_frames(const Workload& workload, std::vector<Upload>& streamed) {
  Workload frames;
  frames.name = workload.name;
  frames.description = workload.description;
  frames.kinds = workload.kinds;
  frames.stalls = workload.stalls;
  frames.default_delay = workload.default_delay;
  for (const Upload& u : workload.uploads)
    (u.frame >= 0 ? frames.uploads : streamed).push_back(u);
  return frames;
}

// The streaming half: a StreamScheduler on a transfer queue of its own, in virtual time, fed by
// `producers` producers, each enqueuing its share of the streamed uploads in order.
class StreamingHalf {
 public:
  StreamingHalf(const SimConfig& config, const Workload& workload, std::vector<Upload> streamed,
                uint64_t ring, unsigned producers, StreamerFigures& f)
      : streamed_(std::move(streamed)),
        ring_(ring),
        f_(f),
        backend_(delay_model(config, workload)),
        clock_(backend_.clock()),
        ns_per_byte_(config.bandwidth > 0 ? 1e9 / static_cast<double>(config.bandwidth) : 0),
        waiting_(producers) {
    for (const Upload& u : streamed_)
      sizes_.push_back(std::max<uint64_t>(1, SimContext::resolve_size(u, ring, ring)));
    // One random source for every upload, each reading it from its own offset.
    const uint64_t largest =
        std::max<uint64_t>(1, sizes_.empty() ? 1 : *std::max_element(sizes_.begin(), sizes_.end()));
    source_.resize(static_cast<std::size_t>(largest + kOffsets));
    std::mt19937_64 rng(config.seed);
    for (auto& b : source_)
      b = static_cast<std::byte>(1 + rng() % 255);
    for (std::size_t i = 0; i < streamed_.size(); ++i)
      waiting_[i % producers].push_back(i);
    // A stalled GPU stalls both queues: the workload's stall windows hold the transfer queue too.
    stalls_ = workload.stalls;
    stalls_.insert(stalls_.end(), config.stalls.begin(), config.stalls.end());
  }

  // Makes the scheduler; an error message when it refuses the ring.
  std::optional<std::string> start() {
    StreamSchedulerConfig sc;
    sc.ring_bytes = ring_;
    StreamScheduler::Deps deps;
    deps.backend = &backend_;
    deps.allocator = &backend_;
    deps.clock = &clock_;
    auto made = StreamScheduler::create(sc, deps);
    if (!made) {
      return "streamer: the scheduler refuses a ring of " + std::to_string(ring_) + " bytes (" +
             std::string(to_string(made.error())) + ")";
    }
    scheduler_ = std::move(*made);
    return std::nullopt;
  }

  // Runs until nothing more can happen; an error message past the run's work bound.
  std::optional<std::string> run() {
    for (uint64_t step = 0;; ++step) {
      if (step == kMaxSteps) return std::string("streamer: the run's work bound");
      const Duration now = clock_.now();
      follow_stalls(now);
      (void)backend_.completed();
      bool progressed = enqueue_arrived(now);
      progressed = pump(now) || progressed;
      collect(now);
      if (progressed) continue;
      // Nothing more now: move to the next event (an arrival, a completion, the engine free).
      const std::optional<Duration> next = next_event(now);
      if (!next) break;
      // Busy while some streaming upload has arrived and is not complete.
      bool arrived = !live_.empty();
      for (const auto& mine : waiting_)
        arrived = arrived || (!mine.empty() && streamed_[mine.front()].time <= now);
      if (arrived) f_.busy += *next - now;
      clock_.advance_to(*next);
    }
    finish();
    return std::nullopt;
  }

 private:
  // A streaming upload in flight: its ticket, where it goes and where its bytes came from.
  struct Live {
    Duration arrival{0};
    StreamTicket ticket;
    std::unique_ptr<testing::FakeStreamTarget> target;
    uint64_t source_offset = 0;
    bool submitted = false;
  };

  static testing::DelayModel delay_model(const SimConfig& config, const Workload& workload) {
    const DelaySpec delay = config.delay             ? *config.delay
                            : workload.default_delay ? *workload.default_delay
                                                     : *parse_delay("random:1ms:6ms", 0, nullptr);
    testing::DelayModel model = delay.model;
    if (model.kind == testing::DelayModel::Kind::SeededRandom) model.seed = config.seed + 1;
    return model;
  }

  // Stalls or releases the transfer queue as the clock enters or leaves a stall window.
  void follow_stalls(Duration now) {
    const bool stall_now = std::any_of(stalls_.begin(), stalls_.end(), [&](const StallWindow& w) {
      return w.at <= now && now - w.at < w.length;
    });
    if (stall_now != stalled_) {
      stalled_ = stall_now;
      if (stalled_) {
        backend_.stall();
      } else {
        backend_.release();
      }
    }
  }

  // The producers: each enqueues its arrived uploads in order until the queue refuses. Whether
  // any was taken.
  bool enqueue_arrived(Duration now) {
    bool progressed = false;
    for (auto& mine : waiting_) {
      while (!mine.empty() && streamed_[mine.front()].time <= now) {
        const std::size_t i = mine.front();
        Live l;
        l.arrival = streamed_[i].time;
        l.source_offset = i % kOffsets;
        l.target = std::make_unique<testing::FakeStreamTarget>();
        l.target->buffer.assign(static_cast<std::size_t>(sizes_[i]), std::byte{0});
        StreamRequest request;
        request.pieces =
            PieceCursor::buffer(sizes_[i], 0, std::max<uint64_t>(1, streamed_[i].granularity))
                .value();
        request.source = source_.data() + l.source_offset;
        request.alignment = streamed_[i].alignment;
        request.context = l.target.get();
        auto ticket = scheduler_->enqueue(request, Duration{0});
        if (!ticket && ticket.error() == EnqueueError::QueueFull) break;  // tries again later
        mine.pop_front();
        progressed = true;
        if (!ticket) {
          ++f_.failed;
          continue;
        }
        f_.producer_wait_total += now - l.arrival;
        ++f_.uploads;
        f_.bytes += sizes_[i];
        if (sizes_[i] > ring_) ++f_.larger_than_ring;
        l.ticket = *ticket;
        live_.push_back(std::move(l));
      }
    }
    return progressed;
  }

  // The pump, when the copy engine is free. Whether it submitted.
  bool pump(Duration now) {
    if (now < engine_free_) return false;
    const PumpResult r = scheduler_->pump_once(Duration{0});
    if (r != PumpResult::Submitted) return false;
    const uint64_t total = scheduler_->stats().submitted_bytes;
    engine_free_ = now + Duration{static_cast<int64_t>(
                             static_cast<double>(total - submitted_bytes_) * ns_per_byte_)};
    submitted_bytes_ = total;
    return true;
  }

  // The uploads: submitted, complete (every byte compared), failed.
  void collect(Duration now) {
    for (auto it = live_.begin(); it != live_.end();) {
      const StreamStatus s = scheduler_->status(it->ticket);
      if (!it->submitted && (s == StreamStatus::Submitted || s == StreamStatus::Complete)) {
        it->submitted = true;
        f_.submitted_max = std::max(f_.submitted_max, now - it->arrival);
      }
      if (s == StreamStatus::Complete) {
        const Duration took = now - it->arrival;
        latencies_.push_back(took);
        f_.complete_max = std::max(f_.complete_max, took);
        f_.end = std::max(f_.end, now);
        const auto& got = it->target->buffer;
        if (std::memcmp(got.data(), source_.data() + it->source_offset, got.size()) != 0) {
          ++f_.byte_mismatches;
        }
        it = live_.erase(it);
        continue;
      }
      if (s == StreamStatus::Failed || s == StreamStatus::Cancelled) {
        ++f_.failed;
        it = live_.erase(it);
        continue;
      }
      ++it;
    }
  }

  // The next moment something changes after `now`: an arrival, a completion, a stall window's
  // edge, the engine free. None when nothing will.
  std::optional<Duration> next_event(Duration now) const {
    std::optional<Duration> next;
    const auto consider = [&](Duration t) {
      if (t > now && (!next || t < *next)) next = t;
    };
    for (const auto& mine : waiting_) {
      if (!mine.empty()) consider(streamed_[mine.front()].time);
    }
    if (const auto c = backend_.next_completion()) consider(*c);
    for (const StallWindow& w : stalls_) {
      consider(w.at);
      if (w.length < Duration::max() - w.at) consider(w.at + w.length);
    }
    if (!live_.empty() || scheduler_->stats().queued_bytes > 0) consider(engine_free_);
    return next;
  }

  // The figures at the end: what never completed failed; the scheduler's counts; the p99.
  void finish() {
    for (const auto& mine : waiting_)
      f_.failed += mine.size();
    f_.failed += live_.size();
    const StreamStats stats = scheduler_->stats();
    f_.pieces = stats.pieces;
    f_.batches = stats.batches;
    f_.queue_refusals = stats.queue_refusals;
    f_.ring_full = stats.ring_full;
    f_.peak_held_bytes = scheduler_->ring_stats().peak_held_bytes;
    if (!latencies_.empty()) {
      std::sort(latencies_.begin(), latencies_.end());
      f_.complete_p99 = latencies_[std::min(latencies_.size() - 1, latencies_.size() * 99 / 100)];
    }
    if (!backend_.guards_intact()) ++f_.byte_mismatches;
  }

  const std::vector<Upload> streamed_;
  const uint64_t ring_;
  StreamerFigures& f_;
  testing::FakeStreamBackend backend_;
  testing::FakeClock& clock_;
  const double ns_per_byte_;
  std::vector<std::deque<std::size_t>> waiting_;  // per producer, the uploads it has yet to enqueue
  std::vector<uint64_t> sizes_;
  std::vector<std::byte> source_;
  std::vector<StallWindow> stalls_;
  std::unique_ptr<StreamScheduler> scheduler_;  // after backend_: destroyed before it
  std::vector<Live> live_;
  std::vector<Duration> latencies_;
  Duration engine_free_{0};  // the copy engine's next free moment (bandwidth model)
  uint64_t submitted_bytes_ = 0;
  bool stalled_ = false;
};

}  // namespace

Expected<StreamerRun, std::string> simulate_streamer(const SimConfig& config,
                                                     const Workload& workload, unsigned producers) {
  if (producers == 0) return unexpected(std::string("streamer: at least one producer"));
  StreamerRun run;

  // The graphics half: the frame uploads through a byte ring of half the capacity.
  const SimConfig graphics = graphics_config(config);
  std::vector<Upload> streamed;
  const Workload frames = split_frames(workload, streamed);
  auto g = simulate(graphics, frames);
  if (!g) return unexpected("streamer, the graphics queue: " + g.error());
  run.graphics = std::move(*g);

  // The streaming half, on a ring of the rest of the capacity.
  const uint64_t ring = std::max<uint64_t>(1, config.capacity - graphics.capacity);
  StreamingHalf streaming(config, workload, std::move(streamed), ring, producers, run.streaming);
  if (auto error = streaming.start()) return unexpected(std::move(*error));
  if (auto error = streaming.run()) return unexpected(std::move(*error));
  return run;
}

}  // namespace staging::sim
