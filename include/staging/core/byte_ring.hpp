// ByteRing: a staging ring of bytes — one region of bytes, reservations in FIFO order, wraparound
// where no reservation straddles the end, retirement by the queue's completion signal, and an
// explicit, bounded policy when a reservation does not fit. For uploads not tied to frames
// (asset and chunk streaming, CUDA batches); the slot ring (slot_ring.hpp) is for frames.
//
// Ring-state sketch (capacity 16, one character per byte; A..C live, '-' free, '#' skipped):
//
//            tail (oldest live)        head (next reservation)
//            v                         v
//   [ - - - A A A A B B B B B C C - - ]      reserve(4) at head: 2 bytes left before the end,
//                                            so the tail end is skipped and D wraps to 0:
//   [ D D D D A A A A B B B B B C C # # ]    D.skipped == 2 (charged to D, freed with D)
//
// Full and empty are never confused: the ring tracks live bytes, not just head == tail.
//
// Regions: region 0 is the ring itself. The Grow policy adds further ring regions (up to the
// cap), the Fallback policy adds one dedicated region per oversized reservation; the backend
// creates and destroys each region's memory through RegionAllocator and maps a Reservation's
// (region, offset) to a pointer. Region ids are small integers, reused after destroy_region().
//
// Invariants (docs/safety.md): I1 no reservation overlaps bytes a queued copy still reads;
// I2 offsets meet the requested alignment and every offset, size and byte count the ring decides
// with is overflow-checked (cumulative statistics count modulo 2^64); I3 bytes
// are reclaimed only when completed >= token; I4 a reservation never extends past its region
// (nor into its neighbour); I5 all regions together stay <= the cap. With
// ByteRingConfig::check_invariants the ring verifies them on every operation (the internal
// checker of staging/detail/core/invariant_checker.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "staging/core/errors.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging {

class Observer;
class Clock;
class InvariantChecker;
class ByteRing;
struct ByteRingConfig;

namespace detail {
/// What a ring works with, the internal parts included (staging/detail/core/byte_ring_deps.hpp).
struct ByteRingDeps;
/// ByteRing::create with every dependency given (staging/detail/core/byte_ring_deps.hpp).
Expected<ByteRing, CreateError> create_byte_ring(const ByteRingConfig& config,
                                                 const ByteRingDeps& deps);
}  // namespace detail

/// What a ring does when a reservation does not fit right now. Chosen per ring
/// (ByteRingConfig::policy) and overridable per call (ReserveRequest::policy).
enum class ExhaustionPolicy : uint8_t {
  /// Answer WouldBlock at once, with what is needed and what is free. Never blocks.
  Defer,
  /// Wait for the pending reservations whose retirement frees enough bytes, up to the timeout;
  /// then Timeout, naming the oldest pending token — sooner when the source answers that the
  /// token cannot be reached by waiting. Never hangs. The waiting is done by reserve_waiting();
  /// ByteRing::reserve() itself never waits: it answers WouldBlock at once, naming in
  /// ReserveError::wait_for the token to wait for.
  Wait,
  /// Place as much as fits (the largest chunk that fits now, in any ring region, a multiple of
  /// the request's granularity), waiting as Wait does when nothing fits; the caller reserves the
  /// rest with further calls. A payload of any size streams through, even one larger than the
  /// whole ring. ByteRing::reserve() places what fits now and otherwise answers WouldBlock naming
  /// wait_for; reserve_waiting() waits.
  Split,
  /// Add ring capacity (a new region) up to the cap; idle extra regions are trimmed after
  /// trim_after. Beyond the cap: WouldBlock with cause Cap (as Defer), or TooLarge when the
  /// request is larger than region 0 and than the room the cap leaves beside it.
  Grow,
  /// Place the reservation in a one-off dedicated region, counted and capped (fallback_cap and
  /// the total cap). Beyond the caps: WouldBlock with cause Cap (as Defer), or TooLarge when
  /// the request is larger than the fallback cap and than every ring region.
  Fallback,
};

/// Names of ExhaustionPolicy's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<ExhaustionPolicy>) noexcept {
  return std::to_array<std::string_view>({"Defer", "Wait", "Split", "Grow", "Fallback"});
}
static_assert(enum_names_complete<ExhaustionPolicy>(), "ExhaustionPolicy: a value has no name");

/// Why bytes were not available — real GPU backpressure, fragmentation, or the cap — so that a
/// caller (and a bookkeeping bug hunt) can tell them apart. Attributed on every WouldBlock,
/// Timeout, wait, split and fallback.
enum class BlockCause : uint8_t {
  /// The GPU still holds the bytes: they free up once in-flight reservations retire.
  InFlight,
  /// Enough bytes are free in total, but no contiguous free run is large enough.
  Fragmentation,
  /// The request cannot be met under the cap (or exceeds the ring and the policy cannot split).
  /// Under Split, a chunk of a request larger than every ring region is a split for this cause,
  /// but its wait for room is not: it waits for a chunk, which InFlight or Fragmentation
  /// explains.
  Cap,
};

/// Names of BlockCause's values, in order (to_string, enum_from_string; the per-cause counters).
constexpr auto enum_names(std::type_identity<BlockCause>) noexcept {
  return std::to_array<std::string_view>({"InFlight", "Fragmentation", "Cap"});
}
static_assert(enum_names_complete<BlockCause>(), "BlockCause: a value has no name");

/// One placement in the ring. Plain data; the ring keeps its own record (changing this copy
/// changes nothing). The bytes [offset, offset + size) of `region` are the caller's until the
/// ring reclaims them (token retired, or cancel()).
struct Reservation {
  /// Unique per ring, increasing in FIFO order (1, 2, ...).
  uint64_t id = 0;
  /// The region the bytes are in: 0 is the ring; others come from Grow or Fallback.
  uint32_t region = 0;
  /// Byte offset of the payload inside the region; a multiple of `alignment`.
  uint64_t offset = 0;
  /// Bytes reserved for the payload. Under Split this may be less than requested (a chunk).
  uint64_t size = 0;
  /// The alignment it was placed at (>= 1).
  uint64_t alignment = 1;
  /// Bytes skipped at the end of the region by the wrap this reservation caused (freed with it).
  uint64_t skipped = 0;
  /// The retirement token: its bytes are reclaimed once the completed value is >= token.
  TimelineValue token = 0;
  /// The caller's tag (a stream, an asset id), carried into stats and the timeline.
  uint64_t owner = 0;
  /// True when this is a dedicated Fallback region rather than ring space.
  bool fallback = false;
};

/// What a caller asks for.
struct ReserveRequest {
  /// Payload bytes (> 0).
  uint64_t size = 0;
  /// Offset alignment (0 is treated as 1; any value, not only powers of two).
  uint64_t alignment = 1;
  /// The completion value after which the GPU no longer reads the bytes (e.g. the timeline
  /// value the caller's submission will signal). Tokens need not increase from one request to
  /// the next, but bytes are reclaimed in FIFO order: a reservation is reclaimed only once every
  /// older one is. A token <= the completed value already seen is reclaimed at the next
  /// retire().
  TimelineValue token = 0;
  /// The caller's tag.
  uint64_t owner = 0;
  /// Overrides the ring's policy for this call.
  std::optional<ExhaustionPolicy> policy;
  /// Overrides the ring's wait timeout for this call (Wait, Split); a negative one is 0.
  std::optional<Duration> timeout;
  /// Split: chunks smaller than the request are multiples of this (e.g. a texture row pitch);
  /// 0 is treated as 1. A request larger than every ring region with a granularity larger than
  /// every ring region is TooLarge (no chunk can be placed).
  uint64_t granularity = 1;
};

/// A refused reservation, with what the caller needs to decide what to do next.
struct ReserveError {
  /// What went wrong, in the vocabulary every backend shares (errors.hpp). A ring answers:
  ///  - ZeroSize: size == 0;
  ///  - Overflow: size + alignment - 1 exceeds 2^64 - 1 (no placement of it could be computed);
  ///  - WouldBlock: not enough space now (Defer; Grow/Fallback beyond their caps; Wait/Split
  ///    from ByteRing::reserve(), which never waits: `wait_for` then names the token to wait
  ///    for). Nothing waited;
  ///  - Timeout: reserve_waiting() waited for the timeout (or less, when the CompletionSource
  ///    answered that the token cannot be reached by waiting) and the bytes did not free up;
  ///    `wait_for` names the token waited for last, `oldest_pending` the oldest one not retired;
  ///  - TooLarge: the request can never be met under the policy in force: Defer/Wait: larger
  ///    than every ring region; Split: that, with a granularity larger than every ring region
  ///    too; Grow: larger than region 0 and than the room the cap leaves beside it; Fallback:
  ///    larger than the fallback cap and than every ring region;
  ///  - AllocationFailed: creating a Grow or Fallback region failed (alloc_error says why).
  UploadError kind = UploadError::WouldBlock;
  /// Why the bytes were not there (WouldBlock, Timeout, TooLarge; AllocationFailed: why a
  /// region was being added). Cap for ZeroSize and Overflow, where it means nothing.
  BlockCause cause = BlockCause::InFlight;
  /// Bytes the request needed in region 0, alignment padding and a wrap's skipped tail
  /// included, saturating at 2^64 - 1 (Timeout under Split: what its smallest acceptable chunk
  /// needed). ZeroSize and Overflow: the requested size. AllocationFailed: the bytes of the region
  /// that could not be created.
  uint64_t needed = 0;
  /// Free bytes in the ring regions (region 0 and grown ones, not fallback regions) now.
  uint64_t free_total = 0;
  /// The largest run a reservation could take in one ring region now (a wrap's skip counted).
  uint64_t free_contiguous = 0;
  /// The token of the oldest reservation not yet reclaimed, if any: the first that must
  /// complete before any ring bytes free up.
  std::optional<TimelineValue> oldest_pending;
  /// AllocationFailed: the allocator's error.
  std::optional<AllocError> alloc_error;
  /// The token whose completion frees enough bytes for the request (>= oldest_pending).
  /// WouldBlock under Wait or Split: what to wait for before retire() and a second try (what
  /// reserve_waiting() does); Timeout: the token waited for last. Unset otherwise, and when no
  /// retirement can make room (nothing pending).
  std::optional<TimelineValue> wait_for;
  /// Timeout: how long the reservation waited, in the ring's clock (about the timeout, or less
  /// when the wait gave up early; a source that returns late makes it a little longer).
  Duration waited{0};
};

/// One line for logs and test output, e.g. "Timeout (InFlight): waited 100000000 ns for token 9,
/// oldest pending token 7; needed 4096 bytes, free 1024 (largest run 512)". Allocates.
[[nodiscard]] std::string describe(const ReserveError& error);

/// Creates and destroys the memory of a ring's regions; implemented by a backend (a mapped
/// VkBuffer, pinned host memory) or a fake. Threading: called from the ring's thread only.
class RegionAllocator {
 public:
  virtual ~RegionAllocator() = default;
  /// Creates region `region` of exactly `bytes` bytes (> 0, within the ring's cap), CPU-writable
  /// and usable as a copy source. `region` is not live when this is called. May fail (the ring
  /// answers AllocationFailed, or create() does); must not throw.
  virtual Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) = 0;
  /// Releases region `region`. Called only when no live reservation is in it (every copy that
  /// read it has completed, or it was cancelled), and for every live region when the ring is
  /// destroyed (the ring's owner must first make sure the GPU no longer reads them).
  virtual void destroy_region(uint32_t region) noexcept = 0;
};

/// How a ByteRing is sized and what it does when full.
struct ByteRingConfig {
  /// Bytes of region 0, the ring itself (> 0).
  uint64_t capacity = 0;
  /// Hard cap on the bytes of all regions together (ring + growth + fallback); 0 means equal to
  /// capacity. Must be >= capacity. No policy ever exceeds it (I5).
  uint64_t cap = 0;
  /// The policy when a reservation does not fit (Wait and Split wait through reserve_waiting()).
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;
  /// Longest reserve_waiting() waits in total for a Wait or Split reservation before answering
  /// Timeout (negative: 0, which polls once).
  Duration wait_timeout = std::chrono::milliseconds(100);
  /// Grow: bytes of each added region (at least the request, at most the room left under the
  /// cap); 0 means capacity.
  uint64_t grow_step = 0;
  /// Grow: an added region with no live reservation for this long is released (at the next
  /// retire() or trim_idle(); sooner when a larger Grow needs its bytes under the cap).
  Duration trim_after = std::chrono::seconds(1);
  /// Fallback: most bytes held in dedicated fallback regions at once (within cap); 0 means
  /// cap - capacity. Must be <= cap; a value above cap - capacity is clamped to it (the ring
  /// itself always holds `capacity` of the cap).
  uint64_t fallback_cap = 0;
  /// Split: the smallest chunk placed when more than that remains (rounded to the granularity);
  /// 0 means no minimum. Avoids a stream of tiny chunks into fragments.
  uint64_t split_min_chunk = 0;
  /// Runs the invariant checker on every operation (aborting on a violation). Off by default in
  /// every build (the checker allocates and costs a map lookup per call); tests, the fuzzer and
  /// debugging sessions turn it on.
  bool check_invariants = false;
};

/// What a ByteRing has done. Plain data, read through ByteRing::stats() (a reference: read it
/// under the ring's lock or on its thread); a diagnostic, never a decision input.
struct ByteRingStats {
  uint64_t reservations = 0;               ///< successful reservations (chunks count one each)
  uint64_t bytes_reserved = 0;             ///< payload bytes of them
  uint64_t retired = 0;                    ///< reservations reclaimed (retired or cancelled)
  uint64_t cancelled = 0;                  ///< of which cancelled
  uint64_t wraps = 0;                      ///< reservations that wrapped to the region's start
  uint64_t bytes_skipped = 0;              ///< tail bytes skipped by those wraps
  uint64_t would_blocks = 0;               ///< WouldBlock answers
  uint64_t would_blocks_by_cause[3] = {};  ///< indexed by BlockCause
  uint64_t waits = 0;                      ///< reservations reserve_waiting() waited for
  uint64_t waits_by_cause[3] = {};         ///< indexed by BlockCause
  Duration wait_total{0};                  ///< total time spent waiting
  Duration wait_longest{0};                ///< longest single reservation's wait
  uint64_t timeouts = 0;                   ///< Timeout answers
  uint64_t splits = 0;                     ///< reservations placed smaller than requested (chunks)
  uint64_t splits_by_cause[3] = {};        ///< indexed by BlockCause
  uint64_t grows = 0;                      ///< regions added by Grow
  uint64_t trims = 0;                      ///< grown regions released after sitting idle
  uint64_t fallbacks = 0;                  ///< dedicated Fallback regions created
  uint64_t fallbacks_by_cause[3] = {};     ///< indexed by BlockCause
  uint64_t fallback_bytes = 0;             ///< their total bytes
  uint64_t cap_refusals = 0;               ///< TooLarge answers
  uint64_t peak_held_bytes = 0;            ///< highest bytes of all regions together
  uint64_t held_bytes = 0;                 ///< bytes of all regions now (<= cap)
  uint64_t in_flight_bytes = 0;            ///< reserved and not yet retired now (skips included)
  uint64_t invalid_requests = 0;           ///< ZeroSize and Overflow answers
  uint64_t allocation_failures = 0;        ///< AllocationFailed answers (Grow, Fallback)
  /// CompletionSource::wait calls by reserve_waiting() (a wait may make several)
  uint64_t wait_calls = 0;
  uint64_t polls = 0;  ///< CompletionSource::completed() reads by reserve_waiting() on a miss
  uint64_t fallback_held_bytes = 0;   ///< bytes in fallback regions now (<= fallback cap)
  uint64_t peak_fallback_bytes = 0;   ///< highest fallback_held_bytes
  uint64_t peak_in_flight_bytes = 0;  ///< highest in_flight_bytes
  uint64_t regions = 0;               ///< live regions now (ring + grown + fallback)
};

/// ByteRingStats' counters, in declaration order: the one list that formatting, comparison and
/// serialisation use (counters.hpp). The per-cause arrays are indexed by BlockCause.
constexpr auto counters_of(std::type_identity<ByteRingStats>) noexcept {
  using S = ByteRingStats;
  constexpr CounterUnit bytes = CounterUnit::Bytes;
  return std::tuple{
      counter("reservations", "reservations", &S::reservations),
      counter("bytes_reserved", "bytes reserved", &S::bytes_reserved, bytes),
      counter("retired", "retired", &S::retired),
      counter("cancelled", "cancelled", &S::cancelled),
      counter("wraps", "wraps", &S::wraps),
      counter("bytes_skipped", "bytes skipped by wraps", &S::bytes_skipped, bytes),
      counter("would_blocks", "would-block answers", &S::would_blocks),
      counter<BlockCause>("would_blocks_by_cause", "would-block answers",
                          &S::would_blocks_by_cause),
      counter("waits", "waits", &S::waits),
      counter<BlockCause>("waits_by_cause", "waits", &S::waits_by_cause),
      counter("wait_total_ns", "wait time (ns)", &S::wait_total),
      counter("wait_longest_ns", "longest wait (ns)", &S::wait_longest),
      counter("timeouts", "timeouts", &S::timeouts),
      counter("splits", "splits", &S::splits),
      counter<BlockCause>("splits_by_cause", "splits", &S::splits_by_cause),
      counter("grows", "grows", &S::grows),
      counter("trims", "trims", &S::trims),
      counter("fallbacks", "fallback regions", &S::fallbacks),
      counter<BlockCause>("fallbacks_by_cause", "fallback regions", &S::fallbacks_by_cause),
      counter("fallback_bytes", "fallback bytes", &S::fallback_bytes, bytes),
      counter("cap_refusals", "cap refusals", &S::cap_refusals),
      counter("peak_held_bytes", "peak held bytes", &S::peak_held_bytes, bytes),
      counter("held_bytes", "held bytes", &S::held_bytes, bytes),
      counter("in_flight_bytes", "bytes in flight", &S::in_flight_bytes, bytes),
      counter("invalid_requests", "invalid requests", &S::invalid_requests),
      counter("allocation_failures", "allocation failures", &S::allocation_failures),
      counter("wait_calls", "wait calls", &S::wait_calls),
      counter("polls", "polls", &S::polls),
      counter("fallback_held_bytes", "fallback bytes held", &S::fallback_held_bytes, bytes),
      counter("peak_fallback_bytes", "peak fallback bytes held", &S::peak_fallback_bytes, bytes),
      counter("peak_in_flight_bytes", "peak bytes in flight", &S::peak_in_flight_bytes, bytes),
      counter("regions", "regions", &S::regions)};
}
static_assert(counters_complete<ByteRingStats>(),
              "ByteRingStats: a member is missing from counters_of");

/// A readable multi-line table of every counter ("reservations ......... 12"), for logs:
/// format_counters(stats). Allocates; not for a hot path.
[[nodiscard]] std::string format_stats(const ByteRingStats& stats);

/// The byte ring. See the file comment for the model.
///
/// Retirement: the ring never learns completion by itself. Its owner reads the queue's completed
/// value and hands it over with retire(completed); reserve_waiting() does the same while it
/// waits. No ring call calls back into its caller: from inside a call the ring calls only the
/// RegionAllocator (creating and destroying regions), the Clock, and the passive observer and
/// checker — and none of those may call the ring.
/// Ownership: owns its bookkeeping; references the RegionAllocator and the observer (and, given
/// internally, a clock and a checker), which must outlive it. Destroying it destroys every region
/// (the owner first makes sure nothing still reads them, e.g. by waiting for the newest token).
/// Threading: not synchronised; one thread (or one mutex holder) at a time. A backend that
/// serves several threads wraps it in a lock. The allocator, clock, observer and checker are
/// called synchronously from inside the ring's calls, on the calling thread.
/// Movable (the state is boxed: references to config() and stats() stay valid across a move);
/// a moved-from ring may only be destroyed or assigned to: any other call on it aborts with a
/// message (a checked precondition, STAGING_ASSERT).
class ByteRing {
 public:
  /// Makes a ring whose regions come from `allocator` and creates region 0. `observer` (may be
  /// null: no timeline events) receives the ring's Events. Both must outlive the ring. Time is
  /// read from std::chrono::steady_clock. Errors (CreateError), in this order: ZeroCapacity,
  /// CapBelowCapacity, FallbackCapAboveCap (the config); AllocationFailed (the allocator could
  /// not create region 0).
  static Expected<ByteRing, CreateError> create(const ByteRingConfig& config,
                                                RegionAllocator& allocator,
                                                Observer* observer = nullptr);

  ///@{
  /// A moved-from ring may only be destroyed or assigned to; any other call aborts.
  ByteRing(ByteRing&&) noexcept;
  ByteRing& operator=(ByteRing&&) noexcept;
  ///@}
  ByteRing(const ByteRing&) = delete;
  ByteRing& operator=(const ByteRing&) = delete;
  /// Destroys every live region through the allocator, live reservations or not (see Ownership).
  ~ByteRing();

  /// Places a reservation per the request and the policy, without ever waiting. On success the
  /// bytes [offset, offset + size) of `region` are the caller's until the token retires (or
  /// cancel()). Under Split the returned size may be smaller than asked: reserve the rest with
  /// more calls.
  ///
  /// In order: ZeroSize (size 0); Overflow (size + alignment - 1 exceeds 2^64 - 1); a placement
  /// in region 0, then in grown regions (no clock read and no virtual call on this path unless
  /// an observer or checker is given; no allocation once the ring's FIFO has grown to its
  /// working set); else the policy. Defer and Wait answer TooLarge (cause Cap) for a size no
  /// ring region can hold. Wait answers WouldBlock as Defer does, and Split places what fits now
  /// or answers WouldBlock — both naming in `wait_for` the token whose completion frees enough
  /// (reserve_waiting() is the call that waits). Every refusal carries its cause, what was
  /// needed and what is free (docs/byte-ring.md). Retires nothing by itself: call retire() with
  /// the queue's completed value first (or use reserve_waiting(), which reads it on a miss).
  Expected<Reservation, ReserveError> reserve(const ReserveRequest& request);

  /// Gives a reservation back that no copy will ever read (never submitted). Its bytes are
  /// reclaimed in FIFO order as if retired — at once when it is the newest live reservation (the
  /// head rolls back, e.g. a copy that failed to record) or the oldest. Unknown, already
  /// cancelled and already reclaimed ids are ignored. A cancelled reservation's bytes must not
  /// be read by any copy (the ring may hand them out again at once).
  void cancel(uint64_t reservation_id) noexcept;

  /// Reclaims, in FIFO order, every reservation whose token <= `completed` (stopping at the first
  /// that is not; cancelled ones are reclaimed when reached), then trims idle grown regions.
  /// Returns the bytes reclaimed (their charges: padding, skipped tails and fallback regions
  /// included; trimmed regions not counted). A `completed` lower than one seen before is treated
  /// as the higher one (the timeline never goes back). This is the one way completion reaches
  /// the ring: the owner reads its queue's completed value (CompletionSource::completed(), a
  /// semaphore, an event) and hands it over.
  uint64_t retire(TimelineValue completed);

  /// Bytes of region 0 (ByteRingConfig::capacity).
  [[nodiscard]] uint64_t capacity() const noexcept;
  /// Free bytes in region 0, in total (grown and fallback regions not counted).
  [[nodiscard]] uint64_t free_bytes() const noexcept;
  /// The largest contiguous run of region 0 a reservation could take right now (a wrap's skip
  /// accounted for; alignment padding not).
  [[nodiscard]] uint64_t largest_free() const noexcept;
  /// Number of live (not yet reclaimed) reservations, in all regions; a cancelled one counts
  /// until its bytes are reclaimed.
  [[nodiscard]] uint64_t live() const noexcept;
  /// The token of the oldest live reservation, if any.
  [[nodiscard]] std::optional<TimelineValue> oldest_pending() const noexcept;
  /// The configuration as given to create() (0s not resolved: see cap(), fallback_cap()).
  [[nodiscard]] const ByteRingConfig& config() const noexcept;
  /// What the ring has done so far; a reference that the ring's calls update.
  [[nodiscard]] const ByteRingStats& stats() const noexcept;

  /// Releases grown regions that have been idle for trim_after (retire() does this too). Reads
  /// the clock. Returns the bytes released.
  uint64_t trim_idle();
  /// Bytes of all regions now (ring + grown + fallback; == stats().held_bytes, <= the cap).
  [[nodiscard]] uint64_t held_bytes() const noexcept;
  /// The highest completed value the ring has seen (0 before the first retire()).
  [[nodiscard]] TimelineValue completed() const noexcept;
  /// The effective cap: ByteRingConfig::cap, or capacity when that is 0.
  [[nodiscard]] uint64_t cap() const noexcept;
  /// The effective fallback cap: ByteRingConfig::fallback_cap clamped to cap() - capacity(), or
  /// cap() - capacity() when it is 0.
  [[nodiscard]] uint64_t fallback_cap() const noexcept;

 private:
  friend Expected<Reservation, ReserveError> reserve_waiting(ByteRing& ring,
                                                             CompletionSource& source,
                                                             const ReserveRequest& request);
  friend Expected<ByteRing, CreateError> detail::create_byte_ring(const ByteRingConfig& config,
                                                                  const detail::ByteRingDeps& deps);
  struct Impl;
  explicit ByteRing(std::unique_ptr<Impl> impl) noexcept;
  Impl& live_impl() const noexcept;  // *impl_; aborts on a moved-from ring
  std::unique_ptr<Impl> impl_;
};

/// reserve() with the Wait and Split policies carried out: the library's one waiting loop, used
/// by every backend and the simulator. Outside the ring: it calls the ring and the source, and
/// neither calls the other.
///
/// On a miss (region 0 and grown regions full) it reads `source.completed()` once, hands it to
/// retire() (counted in stats().polls) and tries again; then the policy applies. Under Wait and
/// Split, where reserve() would answer WouldBlock naming `wait_for`, it waits on the source for
/// that token — up to the request's timeout (ReserveRequest::timeout, else
/// ByteRingConfig::wait_timeout), in total, over as many CompletionSource::wait() calls as it
/// takes — retires what completed, and tries again; then Timeout, naming the token waited for
/// last and the oldest pending one. Never hangs: it gives up at once when a wait returns
/// without progress below the token before the deadline (the source knows the token cannot be
/// reached by waiting) or without time passing. Waits, their time and timeouts are counted in
/// stats() and reported to the observer (wait-begin, wait-end, timeout) in the ring's clock.
/// Other policies never wait here: the answer is reserve()'s after the one poll.
/// Threading: as the ring (one thread, or the ring's lock held — also while waiting).
/// `source` must be the timeline the request's token is on.
[[nodiscard]] Expected<Reservation, ReserveError> reserve_waiting(ByteRing& ring,
                                                                  CompletionSource& source,
                                                                  const ReserveRequest& request);

}  // namespace staging
