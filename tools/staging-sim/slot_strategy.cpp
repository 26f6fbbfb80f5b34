// The slot-ring strategy (StagingRing): a run of uploads of one frame takes one slot
// (begin with the run's total, worst-case alignment padding included), places each upload with
// the lease's bump cursor, and finishes at the submission's timeline value; the ring is handed the
// queue's completed value (StagingRing::retire), which makes the slot Ready once it is reached. A
// refused frame follows the policy: fallback (the slot ring's "fall back to queue writes": the run
// goes by another route), wait (wait on the queue for the oldest frame in flight, then begin
// again) or defer (come back at the next completion).
#include <algorithm>
#include <bit>
#include <deque>
#include <map>
#include <optional>

#include "host_memory.hpp"
#include "sim_context.hpp"
#include "staging/detail/core/staging_ring.hpp"

namespace staging::sim {
namespace {

// A slot buffer: host memory with an id the checker knows it by (a slot's buffer is replaced
// when it grows, so the id, not the slot index, names the memory).
class SimBuffer {
 public:
  SimBuffer(uint32_t id, HostMemory memory, SimContext* ctx,
            std::map<uint32_t, SimBuffer*>* registry)
      : id_(id), memory_(std::move(memory)), ctx_(ctx), registry_(registry) {
    (*registry_)[id_] = this;
  }
  SimBuffer(SimBuffer&& o) noexcept
      : id_(o.id_), memory_(std::move(o.memory_)), ctx_(o.ctx_), registry_(o.registry_) {
    o.ctx_ = nullptr;
    if (ctx_ != nullptr) (*registry_)[id_] = this;
  }
  SimBuffer& operator=(SimBuffer&&) = delete;
  SimBuffer(const SimBuffer&) = delete;
  SimBuffer& operator=(const SimBuffer&) = delete;
  ~SimBuffer() {
    if (ctx_ == nullptr) return;
    ctx_->region_destroyed(id_);
    if (!memory_.guard_intact()) {
      ctx_->checker.report(Invariant::I4_InBounds,
                           "guard bytes after slot buffer " + std::to_string(id_) +
                               " were overwritten: something wrote past the buffer's end");
    }
    registry_->erase(id_);
    ctx_->held_changed(-static_cast<int64_t>(memory_.size()));
  }
  [[nodiscard]] uint64_t capacity() const noexcept { return memory_.size(); }
  [[nodiscard]] uint32_t id() const noexcept { return id_; }
  [[nodiscard]] std::byte* data() noexcept { return memory_.data(); }

 private:
  uint32_t id_;
  HostMemory memory_;
  SimContext* ctx_;
  std::map<uint32_t, SimBuffer*>* registry_;
};

// Creates slot buffers within the cap (a budget: creations above it fail, as a backend's would
// under a memory budget) and tells the checker.
class SimSlotAllocator final : public StagingAllocator<SimBuffer> {
 public:
  SimSlotAllocator(SimContext& ctx, uint64_t budget) : ctx_(&ctx), budget_(budget) {}
  Expected<SimBuffer, AllocError> create(uint64_t capacity) override {
    uint64_t live = 0;
    for (const auto& [id, buffer] : registry_)
      live += buffer->capacity();
    if (capacity > budget_ || live > budget_ - capacity) return unexpected(AllocError::OutOfMemory);
    HostMemory memory(capacity);
    if (memory.data() == nullptr) return unexpected(AllocError::OutOfMemory);
    const uint32_t id = next_id_++;
    ctx_->region_created(id, capacity);
    return SimBuffer(id, std::move(memory), ctx_, &registry_);
  }
  [[nodiscard]] std::byte* data(uint32_t id) {
    const auto it = registry_.find(id);
    return it == registry_.end() ? nullptr : it->second->data();
  }

 private:
  SimContext* ctx_;
  uint64_t budget_;
  uint32_t next_id_ = 1;
  std::map<uint32_t, SimBuffer*> registry_;
};

using Ring = StagingRing<SimBuffer>;

class SlotStrategy final : public StrategyRunner {
 public:
  explicit SlotStrategy(SimContext& ctx) : ctx_(&ctx), allocator_(ctx, ctx.config.effective_cap()) {
    ctx.resolve = [this](uint32_t region) { return allocator_.data(region); };
  }
  ~SlotStrategy() override {
    lease_.reset();
    gpu_.clear();
    ring_.reset();  // slots still in flight are abandoned; the ring releases every buffer
  }
  SlotStrategy(const SlotStrategy&) = delete;
  SlotStrategy& operator=(const SlotStrategy&) = delete;

  bool create(std::string* error) {
    const SimConfig& c = ctx_->config;
    StagingRingConfig rc;
    rc.slots = static_cast<std::size_t>(c.frames_in_flight) + 1;
    const uint64_t per_slot = c.capacity / rc.slots;
    if (per_slot == 0) {
      *error = "the capacity is too small for " + std::to_string(rc.slots) + " slots";
      return false;
    }
    rc.max_slot_bytes = std::bit_floor(per_slot);
    rc.min_slot_bytes = std::min<uint64_t>(MIN_SLOT_BYTES, rc.max_slot_bytes);
    auto made = Ring::create(allocator_, rc);
    if (!made) {
      *error = "StagingRing::create failed: " + std::string(to_string(made.error()));
      return false;
    }
    ring_.emplace(std::move(*made));
    slot_ids_.resize(rc.slots);
    ctx_->result.slots = rc.slots;
    ctx_->result.max_slot_bytes = rc.max_slot_bytes;
    return true;
  }

  void poll() override {
    const TimelineValue done = ctx_->queue.completed();  // the ring's view
    ring_->retire(done);
    while (!gpu_.empty() && gpu_.front().value <= done) {
      Frame& f = gpu_.front();
      for (uint64_t id : f.ids)
        ctx_->reclaimed(id);
      gpu_.pop_front();
    }
  }

  [[nodiscard]] bool batch_open() const override { return lease_.has_value() || direct_; }

  void flush(bool early) override {
    direct_ = false;
    if (!lease_) return;
    const std::size_t slot = lease_->slot();
    const TimelineValue v = ctx_->submit(early);
    const auto finished = ring_->finish(std::move(*lease_), v);
    lease_.reset();
    STAGING_ASSERT(finished.has_value(), "finishing the simulator's own lease failed");
    slot_ids_[slot] = lease_ids_;
    gpu_.push_back(Frame{v, std::move(lease_ids_)});
    lease_ids_.clear();
  }

  void submit_pending() override {
    if (lease_) flush(true);
  }

  void make(const Upload& u, std::size_t index) override {
    if (!lease_ && !direct_) begin_run(index);
    const uint64_t size =
        SimContext::resolve_size(u, ring_->config().max_slot_bytes, ctx_->config.capacity);
    if (direct_) {
      ctx_->direct(size, direct_cause_);
      return;
    }
    const uint64_t alignment = std::max<uint64_t>(u.alignment, 1);
    const uint64_t before = lease_->cursor();
    auto offset = lease_->place(size, alignment);
    if (!offset) {  // cannot happen with the run's worst-case total; route it around if it does
      ctx_->direct(size, BlockCause::Fragmentation);
      return;
    }
    SimBuffer& buffer = ring_->buffer(*lease_);
    Reservation r;
    r.id = next_id_++;
    r.region = buffer.id();
    r.offset = *offset;
    r.size = size;
    r.alignment = alignment;
    r.token = ctx_->queue.next_value();
    r.owner = u.kind;
    ctx_->asked = size;
    ctx_->placed(r, static_cast<uint32_t>(lease_->slot()), lease_->cursor() - before,
                 ctx_->config.policy, buffer.data(), buffer.capacity());
    lease_ids_.push_back(r.id);
  }

  void finish() override { ctx_->result.slot_stats = ring_->stats(); }

 private:
  struct Frame {
    TimelineValue value;
    std::vector<uint64_t> ids;
  };

  // The bytes a run of uploads (one frame's, from `index` on; a streaming upload alone) needs,
  // with worst-case alignment padding; saturates at UINT64_MAX.
  uint64_t run_needed(std::size_t index) const {
    const std::vector<Upload>& ups = ctx_->workload.uploads;
    const int64_t frame = ups[index].frame;
    uint64_t total = 0;
    for (std::size_t i = index; i < ups.size(); ++i) {
      if (i > index && (frame < 0 || ups[i].frame != frame)) break;
      const uint64_t size =
          SimContext::resolve_size(ups[i], ring_->config().max_slot_bytes, ctx_->config.capacity);
      const uint64_t add = size + (std::max<uint64_t>(ups[i].alignment, 1) - 1);
      total = add < size || total > UINT64_MAX - add ? UINT64_MAX : total + add;
    }
    return total;
  }

  void go_direct(BlockCause cause) {
    direct_ = true;
    direct_cause_ = cause;
  }

  void begin_run(std::size_t index) {
    const uint64_t needed = run_needed(index);
    const StagingStats before = ring_->stats();
    for (;;) {
      if (!ctx_->step()) {  // the run's work bound: the simulator stops with an error
        go_direct(BlockCause::InFlight);
        return;
      }
      auto lease = ring_->begin(needed);
      if (lease) {
        lease_.emplace(std::move(*lease));
        after_begin(before);
        return;
      }
      if (lease.error() == UploadError::TooLarge ||
          lease.error() == UploadError::AllocationFailed) {
        go_direct(BlockCause::Cap);
        return;
      }
      // RingFull: the GPU still holds every slot.
      if (gpu_.empty()) {
        go_direct(BlockCause::InFlight);
        return;
      }
      switch (ctx_->config.policy) {
        case ExhaustionPolicy::Wait: {
          RunResult& r = ctx_->result;
          const TimelineValue want = gpu_.front().value;
          const Duration start = ctx_->now();
          const TimelineValue got = ctx_->queue.wait(want, ctx_->config.wait_timeout);
          poll();
          const Duration waited = ctx_->now() - start;
          ++r.waits;
          r.wait_causes.add(BlockCause::InFlight);
          r.wait_total += waited;
          r.wait_longest = std::max(r.wait_longest, waited);
          Mark m{.time = start,
                 .duration = waited,
                 .kind = MarkKind::Wait,
                 .token = want,
                 .flag = got < want};
          ctx_->mark(m);
          if (got < want) {
            ++r.timeouts;
            r.timeout_causes.add(BlockCause::InFlight);
            m.kind = MarkKind::Timeout;
            m.time = ctx_->now();
            m.duration = Duration{0};
            ctx_->mark(m);
            if (!ctx_->queue.can_complete(want)) {
              go_direct(BlockCause::InFlight);
              return;
            }
            // A zero wait_timeout waits for nothing: come back at the next tick or event.
            if (waited <= Duration{0}) ctx_->queue.advance_to(ctx_->retry_time().value_or(start));
          }
          break;
        }
        case ExhaustionPolicy::Defer: {
          ctx_->result.would_block_causes.add(BlockCause::InFlight);
          ctx_->mark(Mark{.time = ctx_->now(), .kind = MarkKind::WouldBlock, .bytes = needed});
          const std::optional<Duration> next = ctx_->retry_time();
          if (!next) {
            go_direct(BlockCause::InFlight);
            return;
          }
          ctx_->queue.advance_to(*next);
          poll();
          break;
        }
        default:  // Fallback: the slot ring's refusal — the frame goes by queue writes
          go_direct(BlockCause::InFlight);
          return;
      }
    }
  }

  // The slot's previous frame is reclaimed now (the ring handed the slot out again); a new or
  // grown buffer is a Grow mark.
  void after_begin(const StagingStats& before) {
    const std::size_t slot = lease_->slot();
    ctx_->sync_truth();
    for (uint64_t id : slot_ids_[slot])
      ctx_->checker.on_reclaim(id);
    slot_ids_[slot].clear();
    const StagingStats& now = ring_->stats();
    const uint64_t made = (now.slots_created - before.slots_created) +
                          (now.slots_grown - before.slots_grown) +
                          (now.slots_replaced - before.slots_replaced);
    if (made > 0) {
      ctx_->result.grows += made;
      ctx_->mark(Mark{.time = ctx_->now(),
                      .kind = MarkKind::Grow,
                      .bytes = lease_->capacity(),
                      .region = static_cast<uint32_t>(slot)});
    }
  }

  SimContext* ctx_;
  SimSlotAllocator allocator_;
  std::optional<Ring> ring_;
  std::optional<SlotLease> lease_;
  std::vector<uint64_t> lease_ids_;
  std::vector<std::vector<uint64_t>> slot_ids_;
  std::deque<Frame> gpu_;
  bool direct_ = false;
  BlockCause direct_cause_ = BlockCause::InFlight;
  uint64_t next_id_ = 1;
};

}  // namespace

std::unique_ptr<StrategyRunner> make_slot_strategy(SimContext& ctx, std::string* error) {
  auto s = std::make_unique<SlotStrategy>(ctx);
  if (!s->create(error)) return nullptr;
  return s;
}

}  // namespace staging::sim
