// ByteRing: see include/staging/core/byte_ring.hpp and docs/byte-ring.md.
//
// Bookkeeping, per ring region (region 0 and grown regions), capacity C:
//   tail  start of the oldest live charge     head  end of the newest (normalised: C becomes 0)
//   used  bytes charged to live reservations  (used == (head - tail) mod C, and C when full)
// Each reservation is charged the contiguous run from the head at the time it was placed up to
// the end of its payload — its alignment padding, and when it wrapped, the skipped tail [head, C)
// too. So the charges of a region's live reservations tile [tail, head) exactly, and reclaiming
// the oldest moves the tail to its end. `used` tells full (C) from empty (0) when head == tail;
// an empty region resets to head = tail = 0, which gives the next reservation the whole region.
//
// One FIFO of entries for all regions, in id order; entries leave it only at the front (retired
// or cancelled) and at the back (a cancelled newest reservation rolls the head back).
#include "staging/core/byte_ring.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "staging/core/observer.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/detail/core/clock.hpp"
#include "staging/detail/core/invariant_checker.hpp"

namespace staging {
namespace {

enum class RegionKind : uint8_t { Free, Ring, Grown, Fallback };

struct Region {
  uint64_t bytes = 0;
  uint64_t head = 0;
  uint64_t tail = 0;
  uint64_t used = 0;
  uint64_t live = 0;
  Duration idle_since{0};
  RegionKind kind = RegionKind::Free;
};

struct Entry {
  uint64_t id;
  TimelineValue token;
  uint64_t start;   // the head when it was placed: where its charge begins
  uint64_t end;     // offset + size, normalised (the head after it)
  uint64_t charge;  // padding + skipped tail + size (a fallback: its region's bytes)
  uint32_t region;
  bool cancelled;
};

// Where a request fits in a region: the payload's offset, the charge's start and length, and the
// tail skipped by a wrap.
struct Fit {
  uint64_t offset;
  uint64_t start;
  uint64_t charge;
  uint64_t skipped;
};

// align_up with a shift-and-mask path for powers of two (no division on the hot path).
inline bool align_offset(uint64_t value, uint64_t alignment, uint64_t* out) noexcept {
  if ((alignment & (alignment - 1)) == 0) {
    const uint64_t mask = alignment - 1;
    if (value > UINT64_MAX - mask) return false;
    *out = (value + mask) & ~mask;
    return true;
  }
  const std::optional<uint64_t> aligned = align_up(value, alignment);
  if (!aligned) return false;
  *out = *aligned;
  return true;
}

// Where `size` bytes aligned to `alignment` fit in ring region `r`, if anywhere: at the head, or
// wrapped to offset 0 with the tail [head, C) skipped. Never straddles the end.
inline std::optional<Fit> fit_ring(const Region& r, uint64_t size, uint64_t alignment) noexcept {
  const uint64_t c = r.bytes;
  if (size > c) return std::nullopt;
  if (r.used == 0) return Fit{0, 0, size, 0};
  if (r.used == c) return std::nullopt;
  const uint64_t h = r.head, t = r.tail;
  const uint64_t limit = h > t ? c : t;  // end of the free run that starts at the head
  uint64_t off = 0;
  if (align_offset(h, alignment, &off) && off <= limit && limit - off >= size) {
    return Fit{off, h, off - h + size, 0};
  }
  if (h > t && size <= t) return Fit{0, h, (c - h) + size, c - h};
  return std::nullopt;
}

// The longest run a reservation could take in `r` now (a wrap's skip accounted for).
inline uint64_t largest_run(const Region& r) noexcept {
  if (r.used == 0) return r.bytes;
  if (r.used == r.bytes) return 0;
  if (r.head > r.tail) return std::max(r.bytes - r.head, r.tail);
  return r.tail - r.head;
}

// What a request would be charged in `r` if the bytes were free (for ReserveError::needed):
// padding or the skipped tail plus the size, saturating at 2^64 - 1.
inline uint64_t natural_charge(const Region& r, uint64_t size, uint64_t alignment) noexcept {
  if (r.used == 0 || size > r.bytes) return size;
  uint64_t off = 0;
  if (align_offset(r.head, alignment, &off) && off <= r.bytes && r.bytes - off >= size) {
    return off - r.head + size;
  }
  return checked_add(r.bytes - r.head, size).value_or(UINT64_MAX);
}

// Releases the charge of the oldest (from_front) or newest live reservation of ring region `r`.
inline void release_charge(Region& r, const Entry& e, bool from_front) noexcept {
  r.used -= e.charge;
  --r.live;
  if (from_front) {
    r.tail = e.end;
  } else {
    r.head = e.start;
  }
  if (r.used == 0) r.head = r.tail = 0;
}

// The FIFO: a power-of-two ring buffer of entries that grows geometrically (never per call once
// it holds the ring's working set).
class EntryQueue {
 public:
  explicit EntryQueue(std::size_t initial)
      : slots_(std::bit_ceil(std::max<std::size_t>(initial, 16))) {
    mask_ = slots_.size() - 1;
  }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  Entry& front() noexcept { return slots_[first_]; }
  const Entry& front() const noexcept { return slots_[first_]; }
  Entry& back() noexcept { return slots_[(first_ + count_ - 1) & mask_]; }
  Entry& operator[](std::size_t i) noexcept { return slots_[(first_ + i) & mask_]; }
  const Entry& operator[](std::size_t i) const noexcept { return slots_[(first_ + i) & mask_]; }
  void push_back(const Entry& e) {
    if (count_ == slots_.size()) [[unlikely]]
      grow();
    slots_[(first_ + count_) & mask_] = e;
    ++count_;
  }
  void pop_front() noexcept {
    first_ = (first_ + 1) & mask_;
    --count_;
  }
  void pop_back() noexcept { --count_; }
  // The index of the entry with `id`, if live (ids increase from front to back).
  [[nodiscard]] std::optional<std::size_t> find(uint64_t id) const noexcept {
    std::size_t lo = 0, hi = count_;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if ((*this)[mid].id < id) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo < count_ && (*this)[lo].id == id) return lo;
    return std::nullopt;
  }

 private:
  void grow() {
    std::vector<Entry> bigger(slots_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i)
      bigger[i] = (*this)[i];
    slots_ = std::move(bigger);
    mask_ = slots_.size() - 1;
    first_ = 0;
  }
  std::vector<Entry> slots_;
  std::size_t mask_ = 0;
  std::size_t first_ = 0;
  std::size_t count_ = 0;
};

constexpr std::size_t cause_index(BlockCause c) noexcept {
  return static_cast<std::size_t>(c);
}

Duration saturating_add(Duration a, Duration b) noexcept {
  if (b.count() > 0 && a.count() > std::numeric_limits<Duration::rep>::max() - b.count()) {
    return Duration::max();
  }
  return a + b;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Names

std::string describe(const ReserveError& e) {
  char buf[384];
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  const std::string kind(to_string(e.kind)), cause(to_string(e.cause));
  int n = 0;
  switch (e.kind) {
    case UploadError::ZeroSize:
      n = std::snprintf(buf, sizeof buf, "ZeroSize: a reservation of 0 bytes");
      break;
    case UploadError::Overflow:
      n = std::snprintf(buf, sizeof buf,
                        "Overflow: size + alignment - 1 exceeds 2^64 - 1 (needed %llu+ bytes)",
                        u(e.needed));
      break;
    case UploadError::Timeout:
      n = std::snprintf(buf, sizeof buf,
                        "Timeout (%s): waited %llu ns for token %llu, oldest pending token %llu; "
                        "needed %llu bytes, free %llu (largest run %llu)",
                        cause.c_str(), u(static_cast<uint64_t>(e.waited.count())),
                        u(e.wait_for.value_or(0)), u(e.oldest_pending.value_or(0)), u(e.needed),
                        u(e.free_total), u(e.free_contiguous));
      break;
    case UploadError::AllocationFailed:
      n = std::snprintf(buf, sizeof buf,
                        "AllocationFailed (%s): creating a region of %llu bytes failed with %s",
                        cause.c_str(), u(e.needed),
                        std::string(to_string(e.alloc_error.value_or(AllocError::Other))).c_str());
      break;
    default:  // WouldBlock, TooLarge
      if (e.oldest_pending) {
        n = std::snprintf(buf, sizeof buf,
                          "%s (%s): needed %llu bytes, free %llu (largest run %llu); oldest "
                          "pending token %llu",
                          kind.c_str(), cause.c_str(), u(e.needed), u(e.free_total),
                          u(e.free_contiguous), u(*e.oldest_pending));
      } else {
        n = std::snprintf(buf, sizeof buf,
                          "%s (%s): needed %llu bytes, free %llu (largest run %llu)", kind.c_str(),
                          cause.c_str(), u(e.needed), u(e.free_total), u(e.free_contiguous));
      }
      break;
  }
  if (n < 0) return kind;
  return std::string(buf);
}

// ---------------------------------------------------------------------------------------------
// Impl

struct ByteRing::Impl {
  ByteRingConfig config;
  RegionAllocator* allocator;
  Clock* clock;
  Observer* observer;
  InvariantChecker* checker;
  std::unique_ptr<InvariantChecker> own_checker;

  uint64_t cap;
  uint64_t fallback_cap;  // effective: <= cap - capacity
  uint64_t grow_step;
  std::vector<Region> regions;      // by region id; regions[0] is the ring
  std::vector<uint32_t> grown_ids;  // grown regions, in creation order
  std::vector<Region> scratch;      // token_needed()'s simulation (reused, no allocation)
  EntryQueue fifo;
  uint64_t next_id = 1;
  TimelineValue completed = 0;
  ByteRingStats stats;

  Impl(const ByteRingConfig& c, const detail::ByteRingDeps& d)
      : config(c),
        allocator(d.allocator),
        clock(d.clock != nullptr ? d.clock : &SteadyClock::instance()),
        observer(d.observer),
        checker(d.checker),
        cap(c.cap == 0 ? c.capacity : c.cap),
        fallback_cap(0),
        grow_step(c.grow_step == 0 ? c.capacity : c.grow_step),
        fifo(256) {
    const uint64_t room = cap - c.capacity;
    fallback_cap = c.fallback_cap == 0 ? room : std::min(c.fallback_cap, room);
    if (checker == nullptr && c.check_invariants) {
      own_checker = std::make_unique<InvariantChecker>(InvariantChecker::Mode::Abort, cap);
      checker = own_checker.get();
    }
    if (checker != nullptr) checker->set_cap(cap);
    regions.reserve(8);
    grown_ids.reserve(8);
  }

  ~Impl() {
    for (uint32_t id = 0; id < regions.size(); ++id) {
      if (regions[id].kind == RegionKind::Free) continue;
      allocator->destroy_region(id);
      if (checker != nullptr) checker->forget_region(id);
    }
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Duration now() { return clock->now(); }

  // --- regions --------------------------------------------------------------------------------

  // Creates a region of `bytes` (caller checked the cap). Returns its id or the allocator's error.
  Expected<uint32_t, AllocError> add_region(uint64_t bytes, RegionKind kind) {
    uint32_t id = 0;
    while (id < regions.size() && regions[id].kind != RegionKind::Free)
      ++id;
    if (auto made = allocator->create_region(id, bytes); !made) return unexpected(made.error());
    if (id == regions.size()) regions.emplace_back();
    Region& r = regions[id];
    r = Region{};
    r.bytes = bytes;
    r.kind = kind;
    stats.held_bytes += bytes;
    stats.peak_held_bytes = std::max(stats.peak_held_bytes, stats.held_bytes);
    ++stats.regions;
    if (kind == RegionKind::Grown) grown_ids.push_back(id);
    if (checker != nullptr) checker->on_region_created(id, bytes);
    return id;
  }

  void drop_region(uint32_t id) {
    Region& r = regions[id];
    STAGING_ASSERT(r.live == 0, "a region with live reservations was released");
    if (checker != nullptr) checker->on_region_destroyed(id);
    allocator->destroy_region(id);
    stats.held_bytes -= r.bytes;
    --stats.regions;
    if (r.kind == RegionKind::Fallback) stats.fallback_held_bytes -= r.bytes;
    if (r.kind == RegionKind::Grown) {
      grown_ids.erase(std::find(grown_ids.begin(), grown_ids.end(), id));
    }
    r = Region{};
  }

  // --- queries over ring regions (region 0 and grown ones) ------------------------------------

  uint64_t ring_free_total() const noexcept {
    uint64_t total = regions[0].bytes - regions[0].used;
    for (uint32_t id : grown_ids)
      total += regions[id].bytes - regions[id].used;
    return total;
  }
  uint64_t ring_free_contiguous() const noexcept {
    uint64_t best = largest_run(regions[0]);
    for (uint32_t id : grown_ids)
      best = std::max(best, largest_run(regions[id]));
    return best;
  }
  uint64_t ring_max_capacity() const noexcept {
    uint64_t best = regions[0].bytes;
    for (uint32_t id : grown_ids)
      best = std::max(best, regions[id].bytes);
    return best;
  }
  std::optional<std::pair<uint32_t, Fit>> fit_any(uint64_t size,
                                                  uint64_t alignment) const noexcept {
    if (auto f = fit_ring(regions[0], size, alignment)) return std::pair{uint32_t{0}, *f};
    for (uint32_t id : grown_ids) {
      if (auto f = fit_ring(regions[id], size, alignment)) return std::pair{id, *f};
    }
    return std::nullopt;
  }
  std::optional<TimelineValue> oldest_pending() const noexcept {
    if (fifo.empty()) return std::nullopt;
    return fifo.front().token;
  }
  // Why `size` does not fit the ring regions now.
  BlockCause classify(uint64_t size) const noexcept {
    if (size > ring_max_capacity()) return BlockCause::Cap;
    return ring_free_total() >= size ? BlockCause::Fragmentation : BlockCause::InFlight;
  }

  // The smallest token whose completion lets `size` bytes fit a ring region: walks the FIFO,
  // reclaiming in a copy of the regions, until the request fits. Slow path only.
  TimelineValue token_needed(uint64_t size, uint64_t alignment) {
    scratch = regions;
    TimelineValue need = 0;
    for (std::size_t i = 0; i < fifo.size(); ++i) {
      const Entry& e = fifo[i];
      if (!e.cancelled) need = std::max(need, e.token);
      Region& r = scratch[e.region];
      if (r.kind != RegionKind::Ring && r.kind != RegionKind::Grown) continue;
      release_charge(r, e, true);
      if (fit_ring(r, size, alignment)) return need;
    }
    return need;
  }

  // --- placement ------------------------------------------------------------------------------

  Reservation commit(uint32_t region_id, const Fit& f, uint64_t size, uint64_t alignment,
                     const ReserveRequest& req, ExhaustionPolicy policy, bool fallback) {
    Region& r = regions[region_id];
    uint64_t end = f.offset + size;
    if (end == r.bytes) end = 0;
    r.head = end;
    r.used += f.charge;
    ++r.live;
    const uint64_t id = next_id++;
    fifo.push_back(Entry{id, req.token, f.start, end, f.charge, region_id, false});
    ++stats.reservations;
    stats.bytes_reserved += size;
    stats.in_flight_bytes += f.charge;
    if (stats.in_flight_bytes > stats.peak_in_flight_bytes) {
      stats.peak_in_flight_bytes = stats.in_flight_bytes;
    }
    if (f.skipped != 0) {
      ++stats.wraps;
      stats.bytes_skipped += f.skipped;
    }
    const Reservation res{id,        region_id, f.offset,  size,    alignment,
                          f.skipped, req.token, req.owner, fallback};
    if (checker != nullptr) [[unlikely]]
      checker->on_reserve(res);
    if (observer != nullptr) [[unlikely]]
      report_reserve(res, f, req, policy);
    return res;
  }

  void report_reserve(const Reservation& res, const Fit& f, const ReserveRequest& req,
                      ExhaustionPolicy policy) {
    const Duration t = now();
    if (f.skipped != 0) {
      observer->on_event(Event{.kind = EventKind::Wrap,
                               .time = t,
                               .id = res.id,
                               .region = res.region,
                               .offset = f.start,
                               .skipped = f.skipped});
    }
    observer->on_event(Event{.kind = EventKind::Reserve,
                             .time = t,
                             .id = res.id,
                             .region = res.region,
                             .offset = res.offset,
                             .bytes = res.size,
                             .alignment = res.alignment,
                             .skipped = res.skipped,
                             .asked = req.size,
                             .charged = f.charge,
                             .owner = res.owner,
                             .token = res.token,
                             .policy = policy,
                             .fallback = res.fallback});
  }

  void report_cap_refusal(const ReserveRequest& req, ExhaustionPolicy policy, bool permanent) {
    observer->on_event(Event{.kind = EventKind::CapRefusal,
                             .time = now(),
                             .asked = req.size,
                             .owner = req.owner,
                             .held = stats.held_bytes,
                             .cap = cap,
                             .cause = BlockCause::Cap,
                             .policy = policy,
                             .permanent = permanent});
  }

  // --- reclamation ----------------------------------------------------------------------------

  // Reclaims the FIFO's front (from_front) or back entry.
  void reclaim(bool from_front) {
    const Entry e = from_front ? fifo.front() : fifo.back();
    if (from_front) {
      fifo.pop_front();
    } else {
      fifo.pop_back();
    }
    Region& r = regions[e.region];
    ++stats.retired;
    if (e.cancelled) ++stats.cancelled;
    stats.in_flight_bytes -= e.charge;
    if (checker != nullptr) [[unlikely]]
      checker->on_reclaim(e.id);
    if (observer != nullptr) [[unlikely]]
      observer->on_event(Event{.kind = EventKind::Retire,
                               .time = now(),
                               .id = e.id,
                               .region = e.region,
                               .bytes = e.charge,
                               .token = e.token,
                               .completed = completed,
                               .cancelled = e.cancelled});
    if (r.kind == RegionKind::Fallback) {
      --r.live;
      r.used = 0;
      drop_region(e.region);
      return;
    }
    release_charge(r, e, from_front);
    if (r.kind == RegionKind::Grown && r.live == 0) r.idle_since = now();
  }

  uint64_t retire(TimelineValue value) {
    if (value > completed) completed = value;
    if (checker != nullptr) [[unlikely]]
      checker->on_completed(completed);
    uint64_t freed = 0;
    while (!fifo.empty()) {
      const Entry& e = fifo.front();
      if (e.token > completed && !e.cancelled) break;
      freed += e.charge;
      reclaim(true);
    }
    if (!grown_ids.empty()) [[unlikely]]
      trim_idle();
    return freed;
  }

  // Releases grown regions idle for trim_after (all idle ones when `all_idle`).
  uint64_t trim_idle(bool all_idle = false) {
    if (grown_ids.empty()) return 0;
    const Duration t = now();
    uint64_t freed = 0;
    for (std::size_t i = grown_ids.size(); i-- > 0;) {
      const uint32_t id = grown_ids[i];
      const Region& r = regions[id];
      if (r.live != 0 || (!all_idle && t - r.idle_since < config.trim_after)) continue;
      const uint64_t bytes = r.bytes;
      drop_region(id);
      ++stats.trims;
      freed += bytes;
      if (observer != nullptr) {
        observer->on_event(Event{.kind = EventKind::Trim, .time = t, .region = id, .bytes = bytes});
      }
    }
    return freed;
  }

  void cancel(uint64_t id) {
    const std::optional<std::size_t> index = fifo.find(id);
    if (!index) return;
    Entry& e = fifo[*index];
    if (e.cancelled) return;
    e.cancelled = true;
    if (checker != nullptr) checker->on_cancel(id);
    if (observer != nullptr) {
      observer->on_event(Event{.kind = EventKind::Cancel, .time = now(), .id = id});
    }
    // The newest ones roll their region's head back; the oldest ones are reclaimed as retired.
    while (!fifo.empty() && fifo.back().cancelled)
      reclaim(false);
    while (!fifo.empty() && fifo.front().cancelled)
      reclaim(true);
  }

  // reserve_waiting()'s look at the queue on a miss: retire what completed, if anything is live.
  void poll(CompletionSource& source) {
    if (fifo.empty()) return;
    ++stats.polls;
    retire(source.completed());
  }

  // --- refusals -------------------------------------------------------------------------------

  ReserveError make_error(UploadError kind, BlockCause cause, uint64_t needed) const {
    ReserveError e;
    e.kind = kind;
    e.cause = cause;
    e.needed = needed;
    e.free_total = ring_free_total();
    e.free_contiguous = ring_free_contiguous();
    e.oldest_pending = oldest_pending();
    return e;
  }

  Unexpected<ReserveError> would_block(const ReserveRequest& req, ExhaustionPolicy policy,
                                       BlockCause cause, uint64_t needed) {
    ++stats.would_blocks;
    ++stats.would_blocks_by_cause[cause_index(cause)];
    ReserveError e = make_error(UploadError::WouldBlock, cause, needed);
    if (observer != nullptr) {
      observer->on_event(Event{.kind = EventKind::WouldBlock,
                               .time = now(),
                               .asked = needed,
                               .owner = req.owner,
                               .free_total = e.free_total,
                               .free_contiguous = e.free_contiguous,
                               .cause = cause,
                               .policy = policy});
    }
    return unexpected(std::move(e));
  }

  Unexpected<ReserveError> cap_exceeded(const ReserveRequest& req, ExhaustionPolicy policy,
                                        uint64_t needed) {
    ++stats.cap_refusals;
    if (observer != nullptr) {
      report_cap_refusal(req, policy, true);
    }
    return unexpected(make_error(UploadError::TooLarge, BlockCause::Cap, needed));
  }

  // The cap stops a Grow or Fallback for now: as Defer, with cause Cap.
  Unexpected<ReserveError> cap_blocks(const ReserveRequest& req, ExhaustionPolicy policy,
                                      uint64_t needed) {
    if (observer != nullptr) {
      report_cap_refusal(req, policy, false);
    }
    return would_block(req, policy, BlockCause::Cap, needed);
  }

  Unexpected<ReserveError> allocation_failed(AllocError error, BlockCause cause, uint64_t bytes) {
    ++stats.allocation_failures;
    ReserveError e = make_error(UploadError::AllocationFailed, cause, bytes);
    e.alloc_error = error;
    return unexpected(std::move(e));
  }

  // --- Wait and Split: answers that name what to wait for -----------------------------------

  // What Split places: chunks that are multiples of `granularity`, at least `min_chunk`; nothing
  // is placed before `min_need` (a minimum chunk, or the whole smaller request) fits.
  struct SplitPlan {
    uint64_t granularity;
    uint64_t min_chunk;
    uint64_t min_need;
  };

  // Split's plan for `req`, or none when no chunk can ever be placed (TooLarge).
  std::optional<SplitPlan> plan_split(const ReserveRequest& req) const {
    const uint64_t granularity = req.granularity == 0 ? 1 : req.granularity;
    const uint64_t max_cap = ring_max_capacity();
    // The largest chunk any ring region can ever hold, and the smallest chunk worth placing.
    const uint64_t max_chunk = max_cap - max_cap % granularity;
    if (req.size > max_cap && max_chunk == 0) return std::nullopt;
    // A granularity larger than every ring region allows no chunk: only the whole request
    // (which some region can hold) is placed, as under Wait.
    uint64_t min_chunk = req.size;
    if (max_chunk != 0) {
      min_chunk = granularity;
      if (config.split_min_chunk > granularity) {
        const std::optional<uint64_t> rounded = align_up(config.split_min_chunk, granularity);
        min_chunk = rounded ? *rounded : max_chunk;
      }
      min_chunk = std::min(min_chunk, max_chunk);  // >= granularity >= 1: no chunk is empty
    }
    return SplitPlan{granularity, min_chunk, std::min(req.size, min_chunk)};
  }

  // One try under Wait (the whole request) or Split (the whole request, else a chunk), placing
  // nothing when neither fits. `cause` is reported with a chunk.
  std::optional<Reservation> try_fit(const ReserveRequest& req, uint64_t alignment,
                                     ExhaustionPolicy policy, BlockCause cause) {
    if (auto f = fit_any(req.size, alignment)) {
      return commit(f->first, f->second, req.size, alignment, req, policy, false);
    }
    if (policy != ExhaustionPolicy::Split) return std::nullopt;
    const std::optional<SplitPlan> plan = plan_split(req);
    if (!plan || plan->min_need >= req.size) return std::nullopt;
    uint64_t chunk = 0;
    const auto f = best_chunk(req.size, alignment, plan->granularity, plan->min_chunk, &chunk);
    if (!f) return std::nullopt;
    STAGING_ASSERT(chunk != 0, "Split chose an empty chunk");
    Reservation r = commit(f->first, f->second, chunk, alignment, req, policy, false);
    ++stats.splits;
    ++stats.splits_by_cause[cause_index(cause)];
    if (observer != nullptr) {
      observer->on_event(Event{.kind = EventKind::Split,
                               .time = now(),
                               .id = r.id,
                               .bytes = chunk,
                               .asked = req.size,
                               .owner = req.owner,
                               .cause = cause});
    }
    return r;
  }

  // What must fit before a Wait or Split request places anything: the request, or Split's
  // smallest acceptable part of it.
  uint64_t fit_size(const ReserveRequest& req, ExhaustionPolicy policy) const {
    if (policy != ExhaustionPolicy::Split) return req.size;
    const std::optional<SplitPlan> plan = plan_split(req);
    return plan ? plan->min_need : req.size;
  }

  // A Wait or Split request that nothing fits: WouldBlock naming the token to wait for. Counted
  // as a would-block when `count` (reserve()); reserve_waiting() waits instead and counts that.
  Unexpected<ReserveError> must_wait(const ReserveRequest& req, uint64_t alignment,
                                     ExhaustionPolicy policy, BlockCause cause, bool count) {
    const uint64_t size = fit_size(req, policy);
    const uint64_t needed = natural_charge(regions[0], size, alignment);
    std::optional<TimelineValue> wait_for;
    if (!fifo.empty()) wait_for = token_needed(size, alignment);
    if (count) {
      Unexpected<ReserveError> e = would_block(req, policy, cause, needed);
      e.error.wait_for = wait_for;
      return e;
    }
    ReserveError e = make_error(UploadError::WouldBlock, cause, needed);
    e.wait_for = wait_for;
    return unexpected(std::move(e));
  }

  // --- waiting (reserve_waiting) ---------------------------------------------------------------

  // Waits on `source` until try_fit() places the request or the timeout passes. `miss` is the
  // uncounted answer of must_wait() that started it.
  Expected<Reservation, ReserveError> wait_for_room(CompletionSource& source,
                                                    const ReserveRequest& req, uint64_t alignment,
                                                    const ReserveError& miss) {
    const ExhaustionPolicy policy = req.policy.value_or(config.policy);
    const BlockCause cause = miss.cause;  // the wait's: why the part waited for does not fit
    const BlockCause split_cause = classify(req.size);  // a chunk's: why the whole does not fit
    const uint64_t size = fit_size(req, policy);
    const Duration timeout = req.timeout.value_or(config.wait_timeout);
    const Deadline deadline(*clock, timeout);
    const Duration start = deadline.start();
    TimelineValue target = miss.wait_for.value_or(0);
    if (observer != nullptr) {
      observer->on_event(Event{.kind = EventKind::WaitBegin,
                               .time = start,
                               .asked = miss.needed,
                               .owner = req.owner,
                               .token = target,
                               .cause = cause});
    }
    Duration t = start;
    std::optional<Reservation> placed;
    for (;;) {
      ++stats.wait_calls;
      const TimelineValue got = source.wait(target, deadline.remaining_at(t));
      const uint64_t freed = retire(got);
      const Duration t2 = now();
      placed = try_fit(req, alignment, policy, split_cause);
      // Timed out; or the source returned with no progress and either no time passed (it broke
      // its contract) or it answered below the target before the deadline (it knows waiting
      // cannot reach it: CompletionSource::wait). Never spin.
      const bool stuck = freed == 0 && (t2 <= t || (got < target && t2 < deadline.end()));
      t = t2;
      if (placed || t >= deadline.end() || stuck) break;
      target = token_needed(size, alignment);
    }
    return end_wait(req, cause, miss.needed, target, start, t, placed);
  }

  // Counts and reports a finished wait; the reservation, or Timeout.
  Expected<Reservation, ReserveError> end_wait(const ReserveRequest& req, BlockCause cause,
                                               uint64_t needed, TimelineValue target,
                                               Duration start, Duration t,
                                               const std::optional<Reservation>& placed) {
    const Duration waited = t - start;
    ++stats.waits;
    ++stats.waits_by_cause[cause_index(cause)];
    stats.wait_total = saturating_add(stats.wait_total, waited);
    stats.wait_longest = std::max(stats.wait_longest, waited);
    if (observer != nullptr) {
      observer->on_event(Event{.kind = EventKind::WaitEnd,
                               .time = t,
                               .owner = req.owner,
                               .token = target,
                               .completed = completed,
                               .waited = waited,
                               .cause = cause,
                               .timed_out = !placed.has_value()});
    }
    if (placed) return *placed;
    ++stats.timeouts;
    ReserveError e = make_error(UploadError::Timeout, cause, needed);
    e.wait_for = target;
    e.waited = waited;
    if (observer != nullptr) {
      observer->on_event(Event{.kind = EventKind::Timeout,
                               .time = t,
                               .owner = req.owner,
                               .token = target,
                               .oldest_pending = e.oldest_pending.value_or(target),
                               .waited = waited,
                               .cause = cause});
    }
    return unexpected(std::move(e));
  }

  // --- policies --------------------------------------------------------------------------------

  // ZeroSize and Overflow, or none. `alignment` is the request's, 0 made 1.
  std::optional<Unexpected<ReserveError>> invalid(const ReserveRequest& req, uint64_t alignment) {
    const uint64_t size = req.size;
    if (size != 0 && size <= UINT64_MAX - (alignment - 1)) [[likely]]
      return std::nullopt;
    ++stats.invalid_requests;
    return unexpected(make_error(size == 0 ? UploadError::ZeroSize : UploadError::Overflow,
                                 BlockCause::Cap, size));
  }

  // The whole request in any ring region (region 0 first), or none. No policy.
  std::optional<Reservation> fit_now(const ReserveRequest& req, uint64_t alignment) {
    const auto f = fit_any(req.size, alignment);
    if (!f) return std::nullopt;
    return commit(f->first, f->second, req.size, alignment, req, req.policy.value_or(config.policy),
                  false);
  }

  // The policy, once nothing fits the ring regions. `count_wait` as must_wait().
  Expected<Reservation, ReserveError> apply_policy(const ReserveRequest& req, uint64_t alignment,
                                                   bool count_wait) {
    const ExhaustionPolicy policy = req.policy.value_or(config.policy);
    const uint64_t size = req.size;
    const BlockCause cause = classify(size);
    const uint64_t needed = natural_charge(regions[0], size, alignment);
    switch (policy) {
      case ExhaustionPolicy::Defer:
        if (cause == BlockCause::Cap) return cap_exceeded(req, policy, needed);
        return would_block(req, policy, cause, needed);
      case ExhaustionPolicy::Wait:
        if (cause == BlockCause::Cap) return cap_exceeded(req, policy, needed);
        return must_wait(req, alignment, policy, cause, count_wait);
      case ExhaustionPolicy::Split:
        if (!plan_split(req)) return cap_exceeded(req, policy, needed);
        if (auto r = try_fit(req, alignment, policy, cause)) return *r;
        // A split is attributed to why the whole request does not fit (Cap when it never can);
        // the wait to why its smallest acceptable part does not fit now (never Cap: some ring
        // region can hold that part).
        return must_wait(req, alignment, policy, classify(fit_size(req, policy)), count_wait);
      case ExhaustionPolicy::Grow:
        return grow(req, alignment, cause, needed);
      case ExhaustionPolicy::Fallback:
        return fallback(req, cause, needed);
    }
    return would_block(req, policy, cause, needed);
  }

  // reserve_waiting(): see byte_ring.hpp.
  Expected<Reservation, ReserveError> reserve_waiting(CompletionSource& source,
                                                      const ReserveRequest& req) {
    const uint64_t alignment = req.alignment == 0 ? 1 : req.alignment;
    if (auto bad = invalid(req, alignment)) [[unlikely]]
      return *bad;
    if (auto r = fit_now(req, alignment)) [[likely]]
      return *r;
    poll(source);  // one non-blocking look at the queue before any policy
    if (auto r = fit_now(req, alignment)) return *r;
    Expected<Reservation, ReserveError> r = apply_policy(req, alignment, /*count_wait=*/false);
    const ExhaustionPolicy policy = req.policy.value_or(config.policy);
    const bool waits = policy == ExhaustionPolicy::Wait || policy == ExhaustionPolicy::Split;
    if (r || !waits || r.error().kind != UploadError::WouldBlock) return r;
    return wait_for_room(source, req, alignment, r.error());
  }

  // Split: the largest chunk (a multiple of the granularity, >= the minimum chunk) that fits a
  // ring region now: every region's run at the head and, where the free bytes wrap, its run at
  // offset 0 are compared. On a tie the earlier region wins, and in one region the run at the
  // head (no skip) wins over a wrap.
  std::optional<std::pair<uint32_t, Fit>> best_chunk(uint64_t size, uint64_t alignment,
                                                     uint64_t granularity, uint64_t min_chunk,
                                                     uint64_t* chunk_out) const {
    std::optional<std::pair<uint32_t, Fit>> best;
    uint64_t largest = 0;
    const auto consider = [&](uint32_t id, uint64_t chunk, const Fit& f) {
      if (chunk < min_chunk || chunk <= largest) return;  // min_chunk >= 1: never empty
      largest = chunk;
      best = std::pair{id, f};
    };
    const auto in_region = [&](uint32_t id) {
      const Region& r = regions[id];
      const auto chunk_of = [&](uint64_t run) { return std::min(size, run - run % granularity); };
      if (r.used == 0) {
        const uint64_t chunk = chunk_of(r.bytes);
        consider(id, chunk, Fit{0, 0, chunk, 0});
        return;
      }
      if (r.used == r.bytes) return;
      const uint64_t h = r.head, t = r.tail, c = r.bytes;
      const uint64_t limit = h > t ? c : t;
      uint64_t off = 0;
      if (align_offset(h, alignment, &off) && off < limit) {
        const uint64_t chunk = chunk_of(limit - off);
        consider(id, chunk, Fit{off, h, off - h + chunk, 0});
      }
      if (h > t) {
        const uint64_t chunk = chunk_of(t);
        consider(id, chunk, Fit{0, h, (c - h) + chunk, c - h});
      }
    };
    in_region(0);
    for (uint32_t id : grown_ids)
      in_region(id);
    if (best) *chunk_out = largest;
    return best;
  }

  Expected<Reservation, ReserveError> grow(const ReserveRequest& req, uint64_t alignment,
                                           BlockCause cause, uint64_t needed) {
    constexpr ExhaustionPolicy policy = ExhaustionPolicy::Grow;
    const uint64_t size = req.size;
    const uint64_t capacity = regions[0].bytes;
    // Never fits: too large for region 0 and for any region the cap leaves room for.
    if (size > capacity && size > cap - capacity) return cap_exceeded(req, policy, needed);
    // Idle grown regions were too small (fit_any tried them): release them when the cap needs
    // their bytes for a larger one.
    trim_idle();
    if (size > cap - stats.held_bytes) trim_idle(/*all_idle=*/true);
    const uint64_t room = cap - stats.held_bytes;
    if (size > room) return cap_blocks(req, policy, needed);
    const uint64_t bytes = std::min(std::max(grow_step, size), room);
    auto id = add_region(bytes, RegionKind::Grown);
    if (!id) return allocation_failed(id.error(), cause, bytes);
    ++stats.grows;
    if (observer != nullptr) {
      observer->on_event(Event{
          .kind = EventKind::Grow, .time = now(), .region = *id, .bytes = bytes, .cause = cause});
    }
    const std::optional<Fit> f = fit_ring(regions[*id], size, alignment);
    STAGING_ASSERT(f.has_value(), "a new grown region cannot hold the request it was made for");
    return commit(*id, *f, size, alignment, req, policy, false);
  }

  Expected<Reservation, ReserveError> fallback(const ReserveRequest& req, BlockCause cause,
                                               uint64_t needed) {
    constexpr ExhaustionPolicy policy = ExhaustionPolicy::Fallback;
    const uint64_t size = req.size;
    if (size > fallback_cap) {
      // The ring itself may take it later; a dedicated region never can.
      if (size <= ring_max_capacity()) return cap_blocks(req, policy, needed);
      return cap_exceeded(req, policy, needed);
    }
    // fallback_held_bytes <= fallback_cap and held_bytes <= cap: no sum that could wrap.
    if (size > fallback_cap - stats.fallback_held_bytes || size > cap - stats.held_bytes) {
      return cap_blocks(req, policy, needed);
    }
    auto id = add_region(size, RegionKind::Fallback);
    if (!id) return allocation_failed(id.error(), cause, size);
    ++stats.fallbacks;
    ++stats.fallbacks_by_cause[cause_index(cause)];
    stats.fallback_bytes += size;
    stats.fallback_held_bytes += size;
    stats.peak_fallback_bytes = std::max(stats.peak_fallback_bytes, stats.fallback_held_bytes);
    const Reservation r =
        commit(*id, Fit{0, 0, size, 0}, size, /*alignment=*/req.alignment == 0 ? 1 : req.alignment,
               req, policy, true);
    if (observer != nullptr) {
      observer->on_event(Event{.kind = EventKind::Fallback,
                               .time = now(),
                               .id = r.id,
                               .region = *id,
                               .bytes = size,
                               .owner = req.owner,
                               .cause = cause});
    }
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// ByteRing

Expected<ByteRing, CreateError> ByteRing::create(const ByteRingConfig& config,
                                                 RegionAllocator& allocator, Observer* observer) {
  return detail::create_byte_ring(config, {.allocator = &allocator, .observer = observer});
}

Expected<ByteRing, CreateError> detail::create_byte_ring(const ByteRingConfig& config,
                                                         const ByteRingDeps& deps) {
  if (config.capacity == 0) return unexpected(CreateError::ZeroCapacity);
  const uint64_t cap = config.cap == 0 ? config.capacity : config.cap;
  if (cap < config.capacity) return unexpected(CreateError::CapBelowCapacity);
  if (config.fallback_cap > cap) return unexpected(CreateError::FallbackCapAboveCap);
  if (deps.allocator == nullptr) return unexpected(CreateError::MissingDependency);
  auto impl = std::make_unique<ByteRing::Impl>(config, deps);
  auto region = impl->add_region(config.capacity, RegionKind::Ring);
  if (!region) return unexpected(CreateError::AllocationFailed);
  STAGING_ASSERT(*region == 0, "region 0 must be the ring");
  return ByteRing(std::move(impl));
}

ByteRing::ByteRing(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

ByteRing::Impl& ByteRing::live_impl() const noexcept {
  STAGING_ASSERT(impl_ != nullptr,
                 "ByteRing used after it was moved from (it may only be destroyed or assigned to)");
  return *impl_;
}
ByteRing::ByteRing(ByteRing&&) noexcept = default;
ByteRing& ByteRing::operator=(ByteRing&&) noexcept = default;
ByteRing::~ByteRing() = default;

Expected<Reservation, ReserveError> ByteRing::reserve(const ReserveRequest& request) {
  Impl& m = live_impl();
  const uint64_t size = request.size;
  const uint64_t alignment = request.alignment == 0 ? 1 : request.alignment;
  if (auto bad = m.invalid(request, alignment)) [[unlikely]]
    return *bad;
  // The hot path: region 0 takes it.
  if (const std::optional<Fit> f = fit_ring(m.regions[0], size, alignment)) [[likely]] {
    return m.commit(0, *f, size, alignment, request, request.policy.value_or(m.config.policy),
                    false);
  }
  if (auto r = m.fit_now(request, alignment)) return *r;
  return m.apply_policy(request, alignment, /*count_wait=*/true);
}

Expected<Reservation, ReserveError> reserve_waiting(ByteRing& ring, CompletionSource& source,
                                                    const ReserveRequest& request) {
  return ring.live_impl().reserve_waiting(source, request);
}

void ByteRing::cancel(uint64_t reservation_id) noexcept {
  live_impl().cancel(reservation_id);
}

uint64_t ByteRing::retire(TimelineValue completed) {
  return live_impl().retire(completed);
}

uint64_t ByteRing::trim_idle() {
  return live_impl().trim_idle();
}

uint64_t ByteRing::capacity() const noexcept {
  return live_impl().regions[0].bytes;
}
uint64_t ByteRing::free_bytes() const noexcept {
  return live_impl().regions[0].bytes - live_impl().regions[0].used;
}
uint64_t ByteRing::largest_free() const noexcept {
  return largest_run(live_impl().regions[0]);
}
uint64_t ByteRing::live() const noexcept {
  return live_impl().fifo.size();
}
std::optional<TimelineValue> ByteRing::oldest_pending() const noexcept {
  return live_impl().oldest_pending();
}
const ByteRingConfig& ByteRing::config() const noexcept {
  return live_impl().config;
}
const ByteRingStats& ByteRing::stats() const noexcept {
  return live_impl().stats;
}
uint64_t ByteRing::held_bytes() const noexcept {
  return live_impl().stats.held_bytes;
}
TimelineValue ByteRing::completed() const noexcept {
  return live_impl().completed;
}
uint64_t ByteRing::cap() const noexcept {
  return live_impl().cap;
}
uint64_t ByteRing::fallback_cap() const noexcept {
  return live_impl().fallback_cap;
}

}  // namespace staging
