// A ByteRing driven by a sequence of operations and checked against a reference model after
// every step — shared by the rapidcheck property test and the libFuzzer target.
//
// The reference model is a set of live byte intervals, kept without the ring's bookkeeping:
//   - `gpu_live`: every reservation whose token the fake queue has not completed (and that was not
//     cancelled) — bytes the GPU may still read. Its random bytes must stay intact until the queue
//     completes its token;
//   - `unreclaimed`: every reservation the ring has handed out and not yet reported reclaimed, in
//     id order — bytes the caller may still be writing.
// What must hold (checked inside the ring's observer callbacks, where time stands at the moment
// of the event, and after every step):
//   M1 a new reservation is inside a live region, aligned, of the size asked (a Split chunk: a
//      multiple of the granularity, smaller than asked), and overlaps no interval of either set;
//   M2 the ring reclaims in FIFO order (cancelled newest ones from the back), and only reservations
//      whose token the queue has completed, or cancelled ones;
//   M3 the bytes of every GPU-live reservation are intact, and no region's guard is damaged;
//   M4 held bytes <= cap (== the allocator's live bytes), fallback bytes <= fallback cap;
//   M5 a Wait/Split call waits at most its timeout in virtual time; the others never wait;
//   M6 refusals are right: ZeroSize iff size 0; WouldBlock/Timeout for InFlight/Fragmentation only
//      while the ring regions hold live reservations; Timeout names the oldest pending token;
//   M7 live(), oldest_pending(), free_bytes() and largest_free() agree with the model;
//   M8 the InvariantChecker (Record mode, fed by the ring) reports no violation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/observer.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/detail/core/event_reservation.hpp"
#include "staging/detail/core/invariant_checker.hpp"
#include "staging/testing/fake_queue.hpp"
#include "staging/testing/fake_region_allocator.hpp"

namespace staging::harness {

using testing::DelayModel;
using testing::FakeClock;
using testing::FakeQueue;
using testing::FakeRegionAllocator;

inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A ring's configuration and its queue's delay model, from a few random numbers.
struct Setup {
  ByteRingConfig ring;
  DelayModel delay = DelayModel::fixed(Duration{0});

  static Setup from(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    Setup s;
    s.ring.capacity = 16 + a % 2033;  // 16 .. 2048, rarely a power of two
    s.ring.cap = s.ring.capacity * (1 + (a >> 12) % 4);
    static constexpr ExhaustionPolicy kPolicies[] = {
        ExhaustionPolicy::Defer, ExhaustionPolicy::Wait, ExhaustionPolicy::Split,
        ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback};
    s.ring.policy = kPolicies[b % 5];
    s.ring.wait_timeout = Duration{(b >> 3) % 4 == 0 ? 0 : 1 + (b >> 5) % 40000};
    s.ring.grow_step = (b >> 20) % 3 == 0 ? 0 : 1 + (b >> 8) % s.ring.capacity;
    s.ring.trim_after = Duration{(c % 4) * 5000};
    const uint64_t room = s.ring.cap - s.ring.capacity;
    s.ring.fallback_cap = (c >> 2) % 3 == 0 || room == 0 ? 0 : 1 + (c >> 4) % room;
    s.ring.split_min_chunk = (c >> 16) % 3 == 0 ? 0 : (c >> 18) % (s.ring.capacity + 8);
    s.ring.check_invariants = false;  // the harness gives its own Record-mode checker
    const Duration fast{1 + d % 3000}, slow{(d >> 12) % 30000};
    switch ((d >> 28) % 4) {
      case 0:
        s.delay = DelayModel::fixed(fast);
        break;
      case 1:
        s.delay = DelayModel::seeded_random(Duration{0}, slow, d);
        break;
      case 2:
        s.delay = DelayModel::bursty(fast, slow, (d >> 8) % 6);
        break;
      default:
        s.delay = DelayModel::stalled();
        break;
    }
    return s;
  }
};

enum class OpKind : uint8_t {
  Reserve,
  Submit,
  Advance,
  Retire,
  RetireStale,
  Poll,
  Cancel,
  Stall,
  Release,
  Trim,
};
inline constexpr OpKind kOpTable[] = {
    OpKind::Reserve, OpKind::Reserve,     OpKind::Reserve, OpKind::Reserve, OpKind::Reserve,
    OpKind::Reserve, OpKind::Submit,      OpKind::Submit,  OpKind::Submit,  OpKind::Advance,
    OpKind::Advance, OpKind::Advance,     OpKind::Retire,  OpKind::Retire,  OpKind::Poll,
    OpKind::Cancel,  OpKind::RetireStale, OpKind::Stall,   OpKind::Release, OpKind::Release,
    OpKind::Trim};

inline const char* name(OpKind k) {
  static constexpr const char* kNames[] = {"Reserve", "Submit", "Advance", "Retire",  "RetireStale",
                                           "Poll",    "Cancel", "Stall",   "Release", "Trim"};
  return kNames[static_cast<int>(k)];
}

struct Op {
  OpKind kind = OpKind::Reserve;
  uint32_t a = 0;
  uint32_t b = 0;
  uint32_t c = 0;
  static Op from(uint32_t k, uint32_t a, uint32_t b, uint32_t c) {
    return Op{kOpTable[k % std::size(kOpTable)], a, b, c};
  }
};

inline std::ostream& operator<<(std::ostream& os, const Op& op) {
  return os << name(op.kind) << "(" << op.a << ", " << op.b << ", " << op.c << ")";
}

inline std::string describe(const Setup& s) {
  return "capacity " + std::to_string(s.ring.capacity) + ", cap " + std::to_string(s.ring.cap) +
         ", policy " + std::string(to_string(s.ring.policy)) + ", timeout " +
         std::to_string(s.ring.wait_timeout.count()) + " ns, grow_step " +
         std::to_string(s.ring.grow_step) + ", fallback_cap " +
         std::to_string(s.ring.fallback_cap) + ", split_min_chunk " +
         std::to_string(s.ring.split_min_chunk) + ", delay model " +
         std::to_string(static_cast<int>(s.delay.kind));
}

/// The ring under test, its fakes, and the model. Not copyable (the ring points at its fakes).
class Harness final : public Observer {
 public:
  explicit Harness(const Setup& setup)
      : setup_(setup), queue_(clock_, setup.delay), checker_(InvariantChecker::Mode::Record) {
    allocator_.set_max_region_bytes(uint64_t{1} << 24);
    auto made = staging::detail::create_byte_ring(
        setup.ring, staging::detail::ByteRingDeps{&allocator_, &clock_, this, &checker_});
    if (made) ring_.emplace(std::move(*made));
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  [[nodiscard]] bool ok() const { return ring_.has_value(); }
  [[nodiscard]] const ByteRing& ring() const { return *ring_; }
  [[nodiscard]] uint64_t operations() const { return operations_; }
  [[nodiscard]] uint64_t reservations() const { return reservations_; }
  [[nodiscard]] const std::string& failure() const { return failure_; }

  /// Runs one operation and checks the model. Returns false (and failure() says why) on the
  /// first broken property.
  bool step(const Op& op) {
    ++operations_;
    switch (op.kind) {
      case OpKind::Reserve:
        do_reserve(op);
        break;
      case OpKind::Submit:
        queue_.submit();
        break;
      case OpKind::Advance:
        clock_.advance(Duration{op.a % 20000});
        break;
      case OpKind::Retire:
        ring_->retire(queue_.completed());
        break;
      case OpKind::RetireStale:  // a lower completed value than seen before: ignored
        ring_->retire(op.a % (ring_->completed() + 1));
        break;
      case OpKind::Poll:
        ring_->retire(queue_.completed());
        break;
      case OpKind::Cancel:
        do_cancel(op);
        break;
      case OpKind::Stall:
        queue_.stall();
        break;
      case OpKind::Release:
        if (queue_.stalled())
          queue_.release(setup_.delay.kind == DelayModel::Kind::Stalled
                             ? DelayModel::fixed(Duration{op.a % 5000})
                             : setup_.delay);
        break;
      case OpKind::Trim:
        ring_->trim_idle();
        break;
    }
    check_after_step();
    return failure_.empty();
  }

  // --- Observer: checks at the moment of each event -------------------------------------------

  void on_event(const Event& ev) override {
    if (ev.kind == EventKind::Reserve) on_reserve(ev);
    if (ev.kind == EventKind::Retire) on_retire(ev);
    if (ev.kind == EventKind::WaitEnd) on_wait_end(ev);
  }

 private:
  void on_reserve(const Event& ev) {
    prune_completed();
    const Reservation r = detail::reservation_of(ev);
    const std::string who = InvariantChecker::describe(r);
    if (r.id != next_id_) fail("M1: ids not in FIFO order: got " + who);
    next_id_ = r.id + 1;
    if (!allocator_.live(r.region)) fail("M1: " + who + " is in a region that does not exist");
    if (r.offset + r.size > allocator_.size(r.region) || r.offset + r.size < r.offset) {
      fail("M1: " + who + " ends past its region of " + std::to_string(allocator_.size(r.region)));
    }
    if (r.alignment == 0 || r.offset % r.alignment != 0) fail("M1: " + who + " is misaligned");
    for (const Live& l : unreclaimed_) {
      if (overlaps(l.r, r)) fail("M1: " + who + " overlaps unreclaimed " + describe(l.r));
    }
    for (const Live& l : gpu_live_) {
      if (overlaps(l.r, r)) fail("M1: " + who + " overlaps GPU-live " + describe(l.r));
    }
    unreclaimed_.push_back(Live{r, mix(r.id * 7919 + seed_salt_)});
    last_reserved_ = r;
  }

  void on_retire(const Event& ev) {
    prune_completed();
    if (unreclaimed_.empty()) {
      fail("M2: reclaimed #" + std::to_string(ev.id) + " but nothing is live");
      return;
    }
    const bool front = unreclaimed_.front().r.id == ev.id;
    const bool back = unreclaimed_.back().r.id == ev.id;
    if (!front && !(ev.cancelled && back)) {
      fail("M2: reclaimed #" + std::to_string(ev.id) + " out of FIFO order (oldest is #" +
           std::to_string(unreclaimed_.front().r.id) + ")");
    }
    const auto it = front ? unreclaimed_.begin() : unreclaimed_.end() - 1;
    if (ev.cancelled != cancelled(it->r.id)) fail("M2: cancel flag wrong for " + describe(it->r));
    const TimelineValue truth = queue_.completed();
    if (!ev.cancelled && it->r.token > truth) {
      fail("M2: " + describe(it->r) + " reclaimed while the queue has completed only " +
           std::to_string(truth));
    }
    if (front) {
      unreclaimed_.pop_front();
    } else {
      unreclaimed_.pop_back();
    }
  }

  void on_wait_end(const Event& ev) {
    if (ev.waited > current_timeout_) {
      fail("M5: a wait of " + std::to_string(ev.waited.count()) + " ns exceeds its timeout of " +
           std::to_string(current_timeout_.count()) + " ns");
    }
  }

  struct Live {
    Reservation r;
    uint64_t seed;  // the bytes written are mix(seed + i)
  };

  static std::string describe(const Reservation& r) { return InvariantChecker::describe(r); }
  static bool overlaps(const Reservation& x, const Reservation& y) {
    return x.region == y.region && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
  }
  void fail(std::string why) {
    if (failure_.empty()) failure_ = std::move(why);
  }
  bool cancelled(uint64_t id) const {
    return std::find(cancelled_.begin(), cancelled_.end(), id) != cancelled_.end();
  }

  void write(const Live& l) {
    std::byte* p = allocator_.data(l.r.region) + l.r.offset;
    for (uint64_t i = 0; i < l.r.size; ++i)
      p[i] = static_cast<std::byte>(mix(l.seed + i));
  }
  bool intact(const Live& l) {
    if (!allocator_.live(l.r.region)) return false;
    const std::byte* p = allocator_.data(l.r.region) + l.r.offset;
    for (uint64_t i = 0; i < l.r.size; ++i) {
      if (p[i] != static_cast<std::byte>(mix(l.seed + i))) return false;
    }
    return true;
  }
  // The GPU reads a reservation when the queue completes its token: its bytes must be intact
  // then. Drops completed ones from gpu_live_.
  void prune_completed() {
    const TimelineValue done = queue_.completed();
    for (auto it = gpu_live_.begin(); it != gpu_live_.end();) {
      if (it->r.token <= done) {
        if (!intact(*it)) fail("M3: bytes of " + describe(it->r) + " changed before the GPU read");
        it = gpu_live_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void do_reserve(const Op& op) {
    ReserveRequest req;
    const uint64_t capacity = ring_->capacity();
    switch (op.a % 8) {
      case 0:  // around the largest contiguous free run: smaller, equal, larger
        req.size = ring_->largest_free() + (op.a >> 3) % 3 - 1;
        break;
      case 1:  // larger than the ring
        req.size = capacity + 1 + (op.a >> 3) % (2 * capacity);
        break;
      case 2:
        req.size = (op.a >> 3) % 64 == 0 ? 0 : 1 + (op.a >> 3) % capacity;
        break;
      default:  // small
        req.size = 1 + (op.a >> 3) % std::max<uint64_t>(1, capacity / 4);
        break;
    }
    static constexpr uint64_t kAlign[] = {0, 1, 1, 2, 4, 8, 16, 64, 3, 12, 256, 1024};
    req.alignment = kAlign[op.b % std::size(kAlign)];
    static constexpr ExhaustionPolicy kPolicies[] = {
        ExhaustionPolicy::Defer, ExhaustionPolicy::Wait, ExhaustionPolicy::Split,
        ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback};
    if (op.c % 4 == 0) req.policy = kPolicies[(op.c >> 2) % 5];
    if ((op.c >> 5) % 5 == 0) req.timeout = Duration{(op.c >> 8) % 30000};
    static constexpr uint64_t kGranularity[] = {0, 1, 1, 4, 16, 100, 256};
    req.granularity = kGranularity[(op.b >> 8) % std::size(kGranularity)];
    req.token = queue_.next_value();
    req.owner = op.b >> 16;

    const ExhaustionPolicy policy = req.policy.value_or(setup_.ring.policy);
    current_timeout_ = req.timeout.value_or(setup_.ring.wait_timeout);
    last_reserved_.reset();
    const bool ring_regions_busy_before = ring_has_live();
    const Duration before = clock_.now();
    auto result = reserve_waiting(*ring_, queue_, req);
    const Duration waited = clock_.now() - before;

    // M5
    const bool may_wait = policy == ExhaustionPolicy::Wait || policy == ExhaustionPolicy::Split;
    if (!may_wait && waited != Duration{0})
      fail("M5: a " + std::string(to_string(policy)) + " reservation moved the clock");
    if (waited > current_timeout_ && may_wait) {
      fail("M5: reserve waited " + std::to_string(waited.count()) + " ns > timeout " +
           std::to_string(current_timeout_.count()));
    }
    // M6
    if ((req.size == 0) != (!result && result.error().kind == UploadError::ZeroSize)) {
      fail("M6: ZeroSize answered wrongly for size " + std::to_string(req.size));
    }
    if (!result) {
      if (last_reserved_) fail("M6: an error was answered after a reservation was placed");
      const ReserveError& e = result.error();
      const bool blocked = e.kind == UploadError::WouldBlock || e.kind == UploadError::Timeout;
      if (blocked && e.cause != BlockCause::Cap && !ring_regions_busy_before && !ring_has_live()) {
        fail("M6: " + staging::describe(e) + " while the ring regions were empty (size " +
             std::to_string(req.size) + ")");
      }
      if (e.kind == UploadError::Timeout) {
        const std::optional<TimelineValue> oldest =
            unreclaimed_.empty() ? std::nullopt : std::optional(unreclaimed_.front().r.token);
        if (e.oldest_pending != oldest) fail("M6: Timeout names the wrong oldest token");
      }
      if (e.kind == UploadError::TooLarge && req.size <= capacity) {
        fail("M6: TooLarge for " + std::to_string(req.size) + " bytes, within the ring");
      }
      return;
    }
    const Reservation& r = *result;
    if (!last_reserved_ || last_reserved_->id != r.id || last_reserved_->offset != r.offset ||
        last_reserved_->region != r.region || last_reserved_->size != r.size) {
      fail("M1: the reservation returned differs from the one reported to the observer");
    }
    const uint64_t g = req.granularity == 0 ? 1 : req.granularity;
    if (r.size != req.size) {
      if (policy != ExhaustionPolicy::Split || r.size > req.size || r.size % g != 0) {
        fail("M1: " + describe(r) + " has the wrong size for a request of " +
             std::to_string(req.size) + " (granularity " + std::to_string(g) + ")");
      }
    }
    if (r.token != req.token || r.owner != req.owner) fail("M1: token or owner not carried");
    ++reservations_;
    write(unreclaimed_.back());
    gpu_live_.push_back(unreclaimed_.back());
  }

  void do_cancel(const Op& op) {
    // Only reservations never submitted may be cancelled (the GPU will never read them).
    std::vector<uint64_t> candidates;
    for (const Live& l : unreclaimed_) {
      if (l.r.token >= queue_.next_value() && !cancelled(l.r.id)) candidates.push_back(l.r.id);
    }
    if (candidates.empty()) return;
    const uint64_t id = candidates[op.a % candidates.size()];
    cancelled_.push_back(id);
    gpu_live_.erase(std::remove_if(gpu_live_.begin(), gpu_live_.end(),
                                   [&](const Live& l) { return l.r.id == id; }),
                    gpu_live_.end());
    ring_->cancel(id);
    ring_->cancel(id);  // twice: ignored
  }

  bool ring_has_live() const {
    for (const Live& l : unreclaimed_) {
      if (!l.r.fallback) return true;
    }
    return false;
  }

  void check_after_step() {
    prune_completed();
    for (const Live& l : gpu_live_) {
      if (!intact(l)) fail("M3: bytes of GPU-live " + describe(l.r) + " were overwritten");
    }
    if (!allocator_.all_guards_intact() || allocator_.log().guard_violations != 0) {
      fail("M3: a region's guard was overwritten (a write past its end)");
    }
    const ByteRingStats& s = ring_->stats();
    if (s.held_bytes > ring_->cap()) fail("M4: held bytes above the cap");
    if (s.held_bytes != allocator_.log().live_bytes) fail("M4: held bytes != allocator's bytes");
    if (s.fallback_held_bytes > ring_->fallback_cap()) fail("M4: fallback bytes above its cap");
    if (ring_->live() != unreclaimed_.size()) {
      fail("M7: ring says " + std::to_string(ring_->live()) + " live, model says " +
           std::to_string(unreclaimed_.size()));
    }
    const std::optional<TimelineValue> oldest =
        unreclaimed_.empty() ? std::nullopt : std::optional(unreclaimed_.front().r.token);
    if (ring_->oldest_pending() != oldest) fail("M7: oldest_pending differs from the model");
    if (ring_->free_bytes() > ring_->capacity() || ring_->largest_free() > ring_->free_bytes()) {
      fail("M7: free_bytes/largest_free out of range");
    }
    bool region0_busy = false;
    uint64_t region0_payload = 0;
    for (const Live& l : unreclaimed_) {
      if (l.r.region == 0) {
        region0_busy = true;
        region0_payload += l.r.size;
      }
    }
    if (!region0_busy && ring_->free_bytes() != ring_->capacity()) {
      fail("M7: region 0 has nothing live but free_bytes() < capacity");
    }
    if (ring_->free_bytes() + region0_payload > ring_->capacity()) {
      fail("M7: free_bytes() counts bytes of live reservations as free");
    }
    if (!checker_.violations().empty()) fail("M8: " + checker_.violations().front().message);
  }

  Setup setup_;
  FakeClock clock_;
  FakeQueue queue_;
  FakeRegionAllocator allocator_;
  InvariantChecker checker_;
  std::optional<ByteRing> ring_;
  std::deque<Live> unreclaimed_;
  std::vector<Live> gpu_live_;
  std::vector<uint64_t> cancelled_;
  std::optional<Reservation> last_reserved_;
  Duration current_timeout_{0};
  uint64_t next_id_ = 1;
  uint64_t seed_salt_ = 0x5eed;
  uint64_t operations_ = 0;
  uint64_t reservations_ = 0;
  std::string failure_;
};

}  // namespace staging::harness
