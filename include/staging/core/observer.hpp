// Observer: the timeline of a byte ring and of a streamer, one Event at a time, stamped with the
// owner's Clock (so a fake clock gives a deterministic timeline). staging-sim turns these events
// into a Chrome trace and an SVG plot; an application can forward them to its own profiler.
//
// One Event type serves every kind: `kind` says what happened and which fields it sets (listed on
// each EventKind value); the fields a kind does not set are zero (false, the enum's first value).
//
// A byte ring reports placements, reclamations, wraps, waits, splits, grows, trims, fallbacks and
// refusals. A streamer reports, to the same observer, what it decided (uploads accepted, refused
// and ended, batches cut and submitted, waits for ring room) beside what its staging memory did,
// so one trace shows both. A Vulkan Ring reports its frames (each staging range written, each
// frame's point, each release) beside its byte ring's events: what an invariant checker needs to
// prove that no host write lands in bytes a queued copy still reads.
//
// Every event that says "the bytes were not there" (would-block, wait, split, fallback, timeout,
// cap refusal) carries its BlockCause: InFlight (the GPU still holds the bytes), Fragmentation
// (enough bytes are free, but not contiguous) or Cap (the cap, or the request's size, forbids it).
//
// Cost: events are built only when an observer is given; without one the clock is not read on
// the hot path.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "staging/core/byte_ring.hpp"
#include "staging/core/stream.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging {

/// What an Event reports, and the fields it sets besides `kind` and `time`.
enum class EventKind : uint8_t {
  // ---- a byte ring's ----
  /// A reservation was placed (each Split chunk and each Fallback reservation too): id, region,
  /// offset, bytes (its size), alignment, skipped, token, owner, fallback, policy, asked (the
  /// size asked for; > bytes for a Split chunk), charged (padding + skipped tail + size; a
  /// fallback: its region's bytes).
  Reserve,
  /// A reservation's bytes were reclaimed (its token completed, or it was cancelled): id, region,
  /// token, completed (the value that reclaimed it), bytes (what was charged), cancelled.
  Retire,
  /// cancel() accepted a live reservation (a Retire with `cancelled` follows, now or in FIFO
  /// order): id.
  Cancel,
  /// A reservation wrapped to its region's start, skipping the tail (just before its Reserve):
  /// id, region, offset (where the skipped tail began), skipped (its length).
  Wrap,
  /// A Wait or Split reservation starts waiting on the queue: cause, token (the first token whose
  /// completion frees enough bytes), asked (the bytes it needs, padding and skip included; Split:
  /// its smallest acceptable chunk), owner.
  WaitBegin,
  /// That wait ended, placed or not: cause (as it began), token (waited for last), waited (about
  /// the timeout at most), completed, timed_out (nothing was placed: a Timeout follows), owner.
  WaitEnd,
  /// Split placed a chunk smaller than asked (after its Reserve): cause, id, asked, bytes (the
  /// chunk's size), owner.
  Split,
  /// Grow added a region (before the reservation's Reserve): region, bytes, cause.
  Grow,
  /// An idle grown region was released: region, bytes.
  Trim,
  /// Fallback placed a reservation in a dedicated region (after its Reserve): cause, id, region,
  /// bytes (the region's, == the request's size), owner.
  Fallback,
  /// A reservation was answered WouldBlock: cause, policy, asked (ReserveError::needed),
  /// free_total, free_contiguous, owner.
  WouldBlock,
  /// A Wait or Split reservation was answered Timeout (after its WaitEnd): cause, token (waited
  /// for last), oldest_pending (the oldest token not yet retired), waited, owner.
  Timeout,
  /// The cap refused a request (before its WouldBlock when for now): cause (Cap), policy, asked,
  /// held (bytes of all regions now), cap (ByteRing::cap()), permanent (TooLarge: it can never
  /// fit; else WouldBlock until bytes are released), owner.
  CapRefusal,
  // ---- a streamer's ----
  /// An upload was accepted, queued from a pointer or started in place: id (the upload's),
  /// bytes (its packed size), priority, in_place, owner.
  UploadAccepted,
  /// An upload (over the queue's cap) or an in-place next_piece() (no ring room) was refused or
  /// timed out: bytes (the upload's), timed_out (waited the whole timeout), in_place.
  UploadRefused,
  /// An upload ended: its last piece was submitted, or it was cancelled or failed: id, status,
  /// value (after which the device is done with its destination; 0: nothing of it was
  /// submitted), owner.
  UploadEnded,
  /// A batch was cut, a ring reservation holding pieces of one or more uploads: token (the
  /// batch's ring token), bytes (its reservation's), pieces, id (the upload of its first piece),
  /// priority (that upload's).
  BatchCut,
  /// A batch was submitted, or its submission failed: token, value (the timeline value it
  /// signals; 0 when it failed), failed.
  BatchSubmitted,
  /// The pump, or a producer writing in place, waited for ring room: time (when the wait began),
  /// waited, token (the batch whose retirement it waited for), in_place.
  RoomWait,
  // ---- a frame's (a Vulkan Ring's; its byte ring's events go to the same observer) ----
  /// Frame `id` is about to let the CPU write bytes [offset, offset + bytes) of the staging
  /// buffer `object` (a VkBuffer's handle) of `object_bytes` bytes: a slot, a byte-ring region
  /// or a one-off buffer. Not reported for vkCmdUpdateBuffer data (host memory, not staging).
  FrameWrite,
  /// Frame `id` was recorded; the GPU reads its staging bytes until the timeline semaphore
  /// `object` (a VkSemaphore's handle) reaches `value`.
  FrameFinish,
  /// The ring no longer holds frame `id`'s staging bytes and may hand them out again. Plain: its
  /// point was reached (or superseded by a later value on the same semaphore); `failed`: the
  /// device was lost; `cancelled`: reported never submitted (Ring::abandon()), or dropped
  /// unfinished.
  FrameRelease,
};

/// Names of EventKind's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<EventKind>) noexcept {
  return std::to_array<std::string_view>(
      {"Reserve",     "Retire",      "Cancel",         "Wrap",           "WaitBegin",
       "WaitEnd",     "Split",       "Grow",           "Trim",           "Fallback",
       "WouldBlock",  "Timeout",     "CapRefusal",     "UploadAccepted", "UploadRefused",
       "UploadEnded", "BatchCut",    "BatchSubmitted", "RoomWait",       "FrameWrite",
       "FrameFinish", "FrameRelease"});
}
static_assert(enum_names_complete<EventKind>(), "EventKind: a value has no name");

/// One line of a timeline. Which fields are set depends on `kind` (see EventKind); the rest are
/// zero. Plain data: copy it freely.
struct Event {
  EventKind kind = EventKind::Reserve;  ///< what happened
  Duration time{0};                     ///< the owner's clock when it happened
  uint64_t id = 0;          ///< a reservation's id (ring kinds) or an upload's (streamer kinds)
  uint32_t region = 0;      ///< the ring region (0 is the ring; others come from Grow, Fallback)
  uint64_t offset = 0;      ///< a byte offset inside `region`
  uint64_t bytes = 0;       ///< a size in bytes (see the kind)
  uint64_t alignment = 0;   ///< Reserve: the alignment it was placed at
  uint64_t skipped = 0;     ///< Reserve, Wrap: bytes skipped at the region's end by a wrap
  uint64_t asked = 0;       ///< the bytes a request asked for, or needs
  uint64_t charged = 0;     ///< Reserve: bytes charged to the reservation
  uint64_t owner = 0;       ///< the caller's tag (ReserveRequest::owner, an upload's owner)
  TimelineValue token = 0;  ///< a ring token (a reservation's, or one waited for)
  TimelineValue completed = 0;       ///< the ring's highest completed value seen
  TimelineValue oldest_pending = 0;  ///< Timeout: the oldest token not yet retired
  TimelineValue value = 0;  ///< a streamer's timeline value, or a frame's point's (FrameFinish)
  Duration waited{0};       ///< time spent waiting
  uint64_t free_total = 0;  ///< WouldBlock: as ReserveError::free_total
  uint64_t free_contiguous = 0;  ///< WouldBlock: as ReserveError::free_contiguous
  uint64_t held = 0;             ///< CapRefusal: bytes of all regions
  uint64_t cap = 0;              ///< CapRefusal: the ring's effective cap
  uint32_t pieces = 0;           ///< BatchCut: pieces in the batch
  uint64_t object = 0;           ///< FrameWrite, FrameFinish: a backend object's 64-bit handle
  uint64_t object_bytes = 0;     ///< FrameWrite: that object's size in bytes
  BlockCause cause = BlockCause::InFlight;            ///< why bytes were not there
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;  ///< the policy in force for the call
  StreamPriority priority = StreamPriority::Now;      ///< an upload's priority
  StreamStatus status = StreamStatus::Queued;         ///< UploadEnded: how it ended
  bool fallback = false;   ///< Reserve: placed in a dedicated Fallback region
  bool cancelled = false;  ///< Retire, FrameRelease: cancelled rather than retired by the queue
  bool timed_out = false;  ///< WaitEnd, UploadRefused: the whole timeout passed
  bool permanent = false;  ///< CapRefusal: the request can never fit
  bool in_place = false;   ///< streamer kinds: written in place, not copied from a pointer
  bool failed = false;     ///< BatchSubmitted: the submission failed; FrameRelease: device lost
};

/// Receives a timeline: a ByteRing's (ByteRing::create()'s observer), a Vulkan Ring's (its frames'
/// events and its byte ring's, RingConfig::observer) or a streamer's, which reports its ring's
/// events to the same observer.
///
/// Threading: called synchronously from inside the reporting call, on the calling thread; a
/// streamer calls it with its lock held, so calls never overlap for one streamer. An observer
/// must be quick, must not call back into what reports to it, and must not throw (several of
/// those calls are noexcept: an exception would terminate). Ownership: referenced, never owned;
/// it must outlive what reports to it.
class Observer {
 public:
  virtual ~Observer() = default;
  /// One event; see EventKind for what each kind sets.
  virtual void on_event(const Event& event) = 0;
};

}  // namespace staging
