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
#include "staging/core/stream_scheduler.hpp"
#include "staging/testing/fake_stream_backend.hpp"

namespace staging::sim {
namespace {

// A streaming upload in flight: its ticket, where it goes and where its bytes came from.
struct Live {
  Duration arrival{0};
  StreamTicket ticket;
  std::unique_ptr<testing::FakeStreamTarget> target;
  uint64_t source_offset = 0;
  bool submitted = false;
};

// The most pump steps, enqueues and clock moves one run may take (a run is bounded in work).
constexpr uint64_t kMaxSteps = 50'000'000;

}  // namespace

Expected<StreamerRun, std::string> simulate_streamer(const SimConfig& config,
                                                     const Workload& workload, unsigned producers) {
  if (producers == 0) return unexpected(std::string("streamer: at least one producer"));
  StreamerRun run;

  // The graphics half: the frame uploads through a byte ring of half the capacity.
  SimConfig graphics = config;
  graphics.strategy = Strategy::Byte;
  graphics.capacity = std::max<uint64_t>(1, config.capacity / 2);
  graphics.cap = 0;
  graphics.fallback_cap = std::min(config.fallback_cap, graphics.effective_cap());
  Workload frames;
  frames.name = workload.name;
  frames.description = workload.description;
  frames.kinds = workload.kinds;
  frames.stalls = workload.stalls;
  frames.default_delay = workload.default_delay;
  std::vector<Upload> streamed;
  for (const Upload& u : workload.uploads)
    (u.frame >= 0 ? frames.uploads : streamed).push_back(u);
  auto g = simulate(graphics, frames);
  if (!g) return unexpected("streamer, the graphics queue: " + g.error());
  run.graphics = std::move(*g);

  // The streaming half: a StreamScheduler on a transfer queue of its own, in virtual time.
  const uint64_t ring = std::max<uint64_t>(1, config.capacity - graphics.capacity);
  const DelaySpec delay = config.delay             ? *config.delay
                          : workload.default_delay ? *workload.default_delay
                                                   : *parse_delay("random:1ms:6ms", 0, nullptr);
  testing::DelayModel model = delay.model;
  if (model.kind == testing::DelayModel::Kind::SeededRandom) model.seed = config.seed + 1;
  testing::FakeStreamBackend backend(model);
  testing::FakeClock& clock = backend.clock();
  StreamSchedulerConfig sc;
  sc.ring_bytes = ring;
  StreamScheduler::Deps deps;
  deps.backend = &backend;
  deps.allocator = &backend;
  deps.clock = &clock;
  auto made = StreamScheduler::create(sc, deps);
  if (!made) {
    return unexpected("streamer: the scheduler refuses a ring of " + std::to_string(ring) +
                      " bytes (" + std::string(to_string(made.error())) + ")");
  }
  StreamScheduler& scheduler = **made;

  StreamerFigures& f = run.streaming;
  std::vector<uint64_t> sizes;
  uint64_t largest = 1;
  for (const Upload& u : streamed) {
    const uint64_t size = std::max<uint64_t>(1, SimContext::resolve_size(u, ring, ring));
    sizes.push_back(size);
    largest = std::max(largest, size);
  }
  // One random source for every upload, each reading it from its own offset.
  constexpr uint64_t kOffsets = 4093;
  std::vector<std::byte> source(static_cast<std::size_t>(largest + kOffsets));
  std::mt19937_64 rng(config.seed);
  for (auto& b : source)
    b = static_cast<std::byte>(1 + rng() % 255);

  std::vector<std::deque<std::size_t>> waiting(producers);
  for (std::size_t i = 0; i < streamed.size(); ++i)
    waiting[i % producers].push_back(i);
  std::vector<Live> live;
  std::vector<Duration> latencies;
  Duration engine_free{0};  // the copy engine's next free moment (bandwidth model)
  uint64_t submitted_bytes = 0;
  const double ns_per_byte = config.bandwidth > 0 ? 1e9 / static_cast<double>(config.bandwidth) : 0;

  // A stalled GPU stalls both queues: the workload's stall windows hold the transfer queue too.
  std::vector<StallWindow> stalls = workload.stalls;
  stalls.insert(stalls.end(), config.stalls.begin(), config.stalls.end());
  bool stalled = false;

  for (uint64_t step = 0;; ++step) {
    if (step == kMaxSteps) return unexpected(std::string("streamer: the run's work bound"));
    const Duration now = clock.now();
    const bool stall_now = std::any_of(stalls.begin(), stalls.end(), [&](const StallWindow& w) {
      return w.at <= now && now - w.at < w.length;
    });
    if (stall_now != stalled) {
      stalled = stall_now;
      if (stalled) {
        backend.stall();
      } else {
        backend.release();
      }
    }
    (void)backend.completed();
    bool progressed = false;
    // The producers: each enqueues its arrived uploads in order until the queue refuses.
    for (auto& mine : waiting) {
      while (!mine.empty() && streamed[mine.front()].time <= now) {
        const std::size_t i = mine.front();
        Live l;
        l.arrival = streamed[i].time;
        l.source_offset = i % kOffsets;
        l.target = std::make_unique<testing::FakeStreamTarget>();
        l.target->buffer.assign(static_cast<std::size_t>(sizes[i]), std::byte{0});
        StreamRequest request;
        request.pieces =
            PieceCursor::buffer(sizes[i], 0, std::max<uint64_t>(1, streamed[i].granularity))
                .value();
        request.source = source.data() + l.source_offset;
        request.alignment = streamed[i].alignment;
        request.context = l.target.get();
        auto ticket = scheduler.enqueue(request, Duration{0});
        if (!ticket && ticket.error() == EnqueueError::QueueFull) break;  // tries again later
        mine.pop_front();
        progressed = true;
        if (!ticket) {
          ++f.failed;
          continue;
        }
        f.producer_wait_total += now - l.arrival;
        ++f.uploads;
        f.bytes += sizes[i];
        if (sizes[i] > ring) ++f.larger_than_ring;
        l.ticket = *ticket;
        live.push_back(std::move(l));
      }
    }
    // The pump, when the copy engine is free.
    if (now >= engine_free) {
      const PumpResult r = scheduler.pump_once(Duration{0});
      if (r == PumpResult::Submitted) {
        const uint64_t total = scheduler.stats().submitted_bytes;
        engine_free = now + Duration{static_cast<int64_t>(
                                static_cast<double>(total - submitted_bytes) * ns_per_byte)};
        submitted_bytes = total;
        progressed = true;
      }
    }
    // The uploads: submitted, complete (every byte compared), failed.
    for (auto it = live.begin(); it != live.end();) {
      const StreamStatus s = scheduler.status(it->ticket);
      if (!it->submitted && (s == StreamStatus::Submitted || s == StreamStatus::Complete)) {
        it->submitted = true;
        f.submitted_max = std::max(f.submitted_max, now - it->arrival);
      }
      if (s == StreamStatus::Complete) {
        const Duration took = now - it->arrival;
        latencies.push_back(took);
        f.complete_max = std::max(f.complete_max, took);
        f.end = std::max(f.end, now);
        const auto& got = it->target->buffer;
        if (std::memcmp(got.data(), source.data() + it->source_offset, got.size()) != 0) {
          ++f.byte_mismatches;
        }
        it = live.erase(it);
        continue;
      }
      if (s == StreamStatus::Failed || s == StreamStatus::Cancelled) {
        ++f.failed;
        it = live.erase(it);
        continue;
      }
      ++it;
    }
    if (progressed) continue;
    // Nothing more now: move to the next event (an arrival, a completion, the engine free).
    std::optional<Duration> next;
    const auto consider = [&](Duration t) {
      if (t > now && (!next || t < *next)) next = t;
    };
    for (const auto& mine : waiting) {
      if (!mine.empty()) consider(streamed[mine.front()].time);
    }
    if (const auto c = backend.next_completion()) consider(*c);
    for (const StallWindow& w : stalls) {
      consider(w.at);
      if (w.length < Duration::max() - w.at) consider(w.at + w.length);
    }
    if (!live.empty() || scheduler.stats().queued_bytes > 0) consider(engine_free);
    if (!next) break;
    // Busy while some streaming upload has arrived and is not complete.
    bool arrived = !live.empty();
    for (const auto& mine : waiting)
      arrived = arrived || (!mine.empty() && streamed[mine.front()].time <= now);
    if (arrived) f.busy += *next - now;
    clock.advance_to(*next);
  }
  for (const auto& mine : waiting)
    f.failed += mine.size();
  f.failed += live.size();
  const StreamStats stats = scheduler.stats();
  f.pieces = stats.pieces;
  f.batches = stats.batches;
  f.queue_refusals = stats.queue_refusals;
  f.ring_full = stats.ring_full;
  f.peak_held_bytes = scheduler.ring_stats().peak_held_bytes;
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    f.complete_p99 = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
  }
  if (!backend.guards_intact()) ++f.byte_mismatches;
  return run;
}

}  // namespace staging::sim
