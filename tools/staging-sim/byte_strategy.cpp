// The byte-ring strategy: uploads become ByteRing reservations under the configured policy. The
// ring reports to an observer (the timeline, the cause counts, the checker) and creates its
// regions through a wrapper that tells the checker which memory exists.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "host_memory.hpp"
#include "sim_context.hpp"
#include "staging/core/byte_ring.hpp"
#include "staging/core/observer.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/event_reservation.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

// Real host memory per region (HostMemory), with every creation and destruction told to the
// checker — the checker's knowledge of what memory exists comes from here, not from the ring.
class CheckedRegionAllocator final : public RegionAllocator {
 public:
  explicit CheckedRegionAllocator(SimContext& ctx) : ctx_(&ctx) {}
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override {
    HostMemory memory(bytes);
    if (memory.data() == nullptr) return unexpected(AllocError::OutOfMemory);
    regions_.insert_or_assign(region, std::move(memory));
    ctx_->region_created(region, bytes);
    return {};
  }
  void destroy_region(uint32_t region) noexcept override {
    const auto it = regions_.find(region);
    if (it == regions_.end()) return;
    ctx_->region_destroyed(region);
    if (!it->second.guard_intact()) {
      ctx_->checker.report(Invariant::I4_InBounds,
                           "guard bytes after region " + std::to_string(region) +
                               " were overwritten: something wrote past the region's end");
    }
    const uint64_t bytes = it->second.size();
    regions_.erase(it);
    ctx_->held_changed(-static_cast<int64_t>(bytes));
  }
  [[nodiscard]] std::byte* data(uint32_t region) const {
    const auto it = regions_.find(region);
    return it == regions_.end() ? nullptr : it->second.data();
  }
  [[nodiscard]] uint64_t size(uint32_t region) const {
    const auto it = regions_.find(region);
    return it == regions_.end() ? 0 : it->second.size();
  }

 private:
  SimContext* ctx_;
  std::unordered_map<uint32_t, HostMemory> regions_;
};

// The ring's timeline, turned into counts by cause, marks, spans and checker calls.
class SimObserver final : public Observer {
 public:
  SimObserver(SimContext& ctx, CheckedRegionAllocator& allocator)
      : ctx_(&ctx), allocator_(&allocator) {}

  void on_event(const Event& e) override {
    switch (e.kind) {
      case EventKind::Reserve:
        return on_reserve(e);
      case EventKind::Retire:
        return on_retire(e);
      case EventKind::Wrap:
        return on_wrap(e);
      case EventKind::WaitBegin:
        last_needed_ = e.asked;
        return;
      case EventKind::WaitEnd:
        return on_wait_end(e);
      case EventKind::Split:
        return on_split(e);
      case EventKind::Grow:
        return on_grow(e);
      case EventKind::Trim:
        return on_trim(e);
      case EventKind::Fallback:
        return on_fallback(e);
      case EventKind::WouldBlock:
        return on_would_block(e);
      case EventKind::Timeout:
        return on_timeout(e);
      case EventKind::CapRefusal:
        return on_cap_refusal(e);
      default:
        return;  // cancels (a Retire follows) and a streamer's kinds
    }
  }

 private:
  void on_reserve(const Event& e) {
    const Reservation r = detail::reservation_of(e);
    if (auto g = grown_.find(r.region); g != grown_.end()) ++g->second.live;
    ctx_->placed(r, r.region, e.charged, e.policy, allocator_->data(r.region),
                 allocator_->size(r.region));
  }
  void on_retire(const Event& e) {
    if (auto g = grown_.find(e.region); g != grown_.end() && --g->second.live == 0) {
      g->second.idle_since = e.time;
    }
    ctx_->sync_truth();
    if (e.cancelled) ctx_->checker.on_cancel(e.id);
    ctx_->checker.on_reclaim(e.id);
    ctx_->reclaimed(e.id);
  }
  void on_wrap(const Event& e) {
    RunResult& r = ctx_->result;
    ++r.wraps;
    r.bytes_skipped += e.skipped;
    add(MarkKind::Wrap, e.time, BlockCause::InFlight, e.skipped, e.id, 0, e.region);
  }
  void on_wait_end(const Event& e) {
    RunResult& r = ctx_->result;
    ++r.waits;
    r.wait_causes.add(e.cause);
    r.wait_total += e.waited;
    r.wait_longest = std::max(r.wait_longest, e.waited);
    Mark m = make(MarkKind::Wait, e.time - e.waited, e.cause, last_needed_, 0, e.token, 0);
    m.duration = e.waited;
    m.flag = e.timed_out;
    ctx_->mark(m);
  }
  void on_split(const Event& e) {
    ctx_->result.split_causes.add(e.cause);
    add(MarkKind::Split, e.time, e.cause, e.bytes, e.id, 0, 0);
  }
  void on_grow(const Event& e) {
    grown_[e.region] = Grown{0, e.time};
    ++ctx_->result.grows;
    ctx_->result.grow_causes.add(e.cause);
    add(MarkKind::Grow, e.time, e.cause, e.bytes, 0, 0, e.region);
  }
  void on_trim(const Event& e) {
    grown_.erase(e.region);
    ++ctx_->result.trims;
    add(MarkKind::Trim, e.time, e.cause, e.bytes, 0, 0, e.region);
  }
  void on_fallback(const Event& e) {
    RunResult& r = ctx_->result;
    ++r.fallbacks;
    r.fallback_bytes += e.bytes;
    r.fallback_causes.add(e.cause);
    add(MarkKind::Fallback, e.time, e.cause, e.bytes, e.id, 0, e.region);
  }
  void on_would_block(const Event& e) {
    ctx_->result.would_block_causes.add(e.cause);
    add(MarkKind::WouldBlock, e.time, e.cause, e.asked, 0, 0, 0);
  }
  void on_timeout(const Event& e) {
    ++ctx_->result.timeouts;
    ctx_->result.timeout_causes.add(e.cause);
    add(MarkKind::Timeout, e.time, e.cause, last_needed_, 0, e.token, 0);
  }
  void on_cap_refusal(const Event& e) {
    if (e.permanent) ++ctx_->result.cap_refusals;
    Mark m = make(MarkKind::CapRefusal, e.time, BlockCause::Cap, e.asked, 0, 0, 0);
    m.flag = e.permanent;
    ctx_->mark(m);
  }

 public:
  // When the ring next trims an idle grown region (it does so at a poll once the region has been
  // idle for trim_after), or none.
  [[nodiscard]] std::optional<Duration> next_trim() const {
    std::optional<Duration> first;
    for (const auto& [region, g] : grown_) {
      if (g.live > 0) continue;
      const Duration at = add_sat(g.idle_since, ctx_->config.trim_after);
      first = first ? std::min(*first, at) : at;
    }
    return first;
  }

 private:
  Mark make(MarkKind kind, Duration t, BlockCause cause, uint64_t bytes, uint64_t id,
            TimelineValue token, uint32_t region) const {
    return Mark{.time = t,
                .kind = kind,
                .cause = cause,
                .bytes = bytes,
                .id = id,
                .token = token,
                .region = region,
                .kind_index = ctx_->upload != nullptr ? ctx_->upload->kind : 0};
  }
  void add(MarkKind kind, Duration t, BlockCause cause, uint64_t bytes, uint64_t id,
           TimelineValue token, uint32_t region) {
    ctx_->mark(make(kind, t, cause, bytes, id, token, region));
  }
  SimContext* ctx_;
  CheckedRegionAllocator* allocator_;
  uint64_t last_needed_ = 0;
  struct Grown {
    uint64_t live;        // reservations in it
    Duration idle_since;  // when `live` last dropped to 0
  };
  std::map<uint32_t, Grown> grown_;
};

class ByteStrategy final : public StrategyRunner {
 public:
  explicit ByteStrategy(SimContext& ctx) : ctx_(&ctx), allocator_(ctx), observer_(ctx, allocator_) {
    ctx.resolve = [this](uint32_t region) { return allocator_.data(region); };
    ctx.next_trim = [this] { return observer_.next_trim(); };
  }
  ~ByteStrategy() override { ring_.reset(); }
  ByteStrategy(const ByteStrategy&) = delete;
  ByteStrategy& operator=(const ByteStrategy&) = delete;

  bool create(std::string* error) {
    const SimConfig& c = ctx_->config;
    ByteRingConfig rc;
    rc.capacity = c.capacity;
    rc.cap = c.effective_cap();
    rc.policy = c.policy;
    rc.wait_timeout = c.wait_timeout;
    rc.grow_step = c.grow_step;
    rc.trim_after = c.trim_after;
    rc.fallback_cap = c.fallback_cap;
    rc.split_min_chunk = c.split_min_chunk;
    rc.check_invariants = false;  // the simulator's own checker (Record mode) sees everything
    staging::detail::ByteRingDeps deps;
    deps.allocator = &allocator_;
    deps.clock = &ctx_->clock;
    deps.observer = &observer_;
    auto made = staging::detail::create_byte_ring(rc, deps);
    if (!made) {
      *error = "ByteRing::create failed: " + std::string(to_string(made.error()));
      return false;
    }
    ring_.emplace(std::move(*made));
    return true;
  }

  void poll() override { ring_->retire(ctx_->queue.completed()); }
  [[nodiscard]] bool batch_open() const override { return open_; }

  void flush(bool early) override {
    if (!open_) return;
    open_ = false;
    ctx_->submit(early);
  }

  void submit_pending() override { flush(true); }

  void make(const Upload& u, std::size_t /*index*/) override {
    const uint64_t alignment = std::max<uint64_t>(u.alignment, 1);
    uint64_t remaining = SimContext::resolve_size(u, ring_->largest_free(), ring_->capacity());
    while (remaining > 0) {
      if (!ctx_->step()) return;  // the run's work bound: the simulator stops with an error
      // A reservation that may not fit region 0 may wait: the ring must never wait on the open
      // batch, which nobody would submit — so submit it first.
      if (open_ && (remaining > ring_->largest_free() ||
                    alignment - 1 > ring_->largest_free() - remaining)) {
        flush(true);
      }
      ReserveRequest req;
      req.size = remaining;
      req.alignment = alignment;
      req.token = ctx_->queue.next_value();
      req.owner = u.kind;
      req.granularity = std::max<uint64_t>(u.granularity, 1);
      ctx_->asked = remaining;
      auto placed = reserve_waiting(*ring_, ctx_->queue, req);
      if (placed) {
        open_ = true;
        remaining -= placed->size;
        continue;
      }
      const ReserveError& e = placed.error();
      switch (e.kind) {
        case UploadError::WouldBlock: {
          // Come back at the next tick or when the queue next completes something, whichever is
          // first (the bytes may then be free).
          flush(true);
          const std::optional<Duration> next = ctx_->retry_time();
          if (!next) {
            ctx_->direct(remaining, e.cause);
            remaining = 0;
            break;
          }
          ctx_->queue.advance_to(*next);
          poll();
          ctx_->sync_truth();
          break;
        }
        case UploadError::Timeout:
          flush(true);
          if (!e.oldest_pending || !ctx_->queue.can_complete(*e.oldest_pending)) {
            ctx_->direct(remaining, e.cause);
            remaining = 0;
          } else if (e.waited <= Duration{0}) {  // a zero wait_timeout: retry as after WouldBlock
            ctx_->queue.advance_to(ctx_->retry_time().value_or(ctx_->now()));
            poll();
            ctx_->sync_truth();
          }
          break;
        default:  // TooLarge, AllocationFailed, ZeroSize, Overflow
          ctx_->direct(remaining, e.cause);
          remaining = 0;
          break;
      }
    }
  }

  // The ring's stats, and the same counters as the simulator saw them in the ring's events: any
  // difference is a bookkeeping bug (the run exits 3).
  void finish() override {
    const ByteRingStats& ring = ring_->stats();
    RunResult& r = ctx_->result;
    r.byte_stats = ring;
    ByteRingStats seen = ring;  // the counters the events do not show are taken as they are
    seen.reservations = r.reservations;
    seen.bytes_reserved = r.bytes_reserved;
    seen.wraps = r.wraps;
    seen.bytes_skipped = r.bytes_skipped;
    seen.waits = r.waits;
    seen.wait_total = r.wait_total;
    seen.splits = r.split_causes.total();
    seen.grows = r.grows;
    seen.trims = r.trims;
    seen.fallbacks = r.fallbacks;
    seen.fallback_bytes = r.fallback_bytes;
    seen.timeouts = r.timeouts;
    seen.cap_refusals = r.cap_refusals;
    seen.would_blocks = r.would_block_causes.total();
    seen.peak_held_bytes = r.peak_held;
    for (std::size_t c = 0; c < 3; ++c) {
      seen.would_blocks_by_cause[c] = r.would_block_causes.by_cause[c];
      seen.waits_by_cause[c] = r.wait_causes.by_cause[c];
      seen.splits_by_cause[c] = r.split_causes.by_cause[c];
      seen.fallbacks_by_cause[c] = r.fallback_causes.by_cause[c];
    }
    for (const CounterDifference& d : counter_differences(seen, ring)) {
      r.stat_mismatches.push_back(fmt::format("{}: observed {}, ring stats {}", d.path, d.a, d.b));
    }
  }

 private:
  SimContext* ctx_;
  CheckedRegionAllocator allocator_;
  SimObserver observer_;
  std::optional<ByteRing> ring_;
  bool open_ = false;
};

}  // namespace

std::unique_ptr<StrategyRunner> make_byte_strategy(SimContext& ctx, std::string* error) {
  auto s = std::make_unique<ByteStrategy>(ctx);
  if (!s->create(error)) return nullptr;
  return s;
}

}  // namespace staging::sim
