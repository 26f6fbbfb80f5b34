// Ring: the Vulkan staging ring — staging memory in persistently mapped VkBuffers, for frames
// that record their copies into the caller's command buffers, reclaimed once a timeline semaphore
// says the GPU has finished reading it. One of the core's two strategies holds the memory, chosen
// by the type of its configuration (RingConfig::strategy):
//   StagingRingConfig  the slot ring (staging::StagingRing): one slot per frame, sized by
//                      begin()'s `needed`; begin() is where the ring refuses.
//   ByteRingConfig     the byte ring (staging::ByteRing): every upload is one reservation in
//                      FIFO order with wraparound; its own policy decides per upload.
// What the ring cannot place takes the fallback route (vkCmdUpdateBuffer, or a one-off buffer),
// within its caps. The frame API is the same for both strategies (docs/vulkan.md).
//
// Retirement (invariant I3): a frame's staging memory is reclaimed once its RetirementPoint's
// semaphore value is >= the point's value and every frame begun before it is released (retirement
// by value, see Ring) — read with vkGetSemaphoreCounterValue on every begin()
// and poll(), never inferred from frame counts. A point that will never be signalled (the
// command buffer was dropped or its submission failed) is reported with abandon(), or is
// superseded once a later value on the same semaphore is signalled. A lost device
// (VK_ERROR_DEVICE_LOST from the semaphore) fails every frame in flight: their memory is
// replaced by the next frames that need it.
#pragma once

#include <vulkan/vulkan_core.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "staging/core/byte_ring.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/observer.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/vulkan/dispatch.hpp"
#include "staging/vulkan/frame.hpp"
#include "staging/vulkan/memory.hpp"

namespace staging::vulkan {

/// The device a Ring works on. The handles must outlive the ring.
struct Device {
  /// The physical device `device` was created from (limits, memory types, API version).
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  /// Created with Vulkan 1.2+ timelineSemaphore and synchronization2 enabled.
  VkDevice device = VK_NULL_HANDLE;
  /// The functions the ring calls (copied into the ring): Dispatch::missing() empty; a Streamer
  /// also needs Dispatch::missing_for_streamer() empty.
  Dispatch dispatch;
};

/// Whether the device has reached `point` (its semaphore's counter is at least its value), read
/// now without waiting (vkGetSemaphoreCounterValue). Any point of the device: a frame's, a
/// streamed upload's, the caller's own. A default point (no semaphore, value 0) is reached.
/// Errors: DeviceLost; Failed (the counter could not be read otherwise, or a point with no
/// semaphore has a value). Safe from any thread (the semaphore's counter is read, nothing else).
[[nodiscard]] Expected<bool, WaitError> reached(const Device& device, const RetirementPoint& point);

/// Blocks until the device reaches `point` or `timeout` passes (vkWaitSemaphores; a timeout of 0
/// or less polls). Bounded: never waits longer than `timeout`. Errors: Timeout, DeviceLost,
/// Failed (as reached()). Safe from any thread. To also give the memory of the frames it
/// completes back to a ring at once, use Ring::wait() (or let the next begin() retire them).
Expected<void, WaitError> wait(const Device& device, const RetirementPoint& point,
                               Duration timeout);

/// Which core strategy holds a Ring's staging memory, chosen by its configuration's type: the
/// slot ring (StagingRingConfig) or the byte ring (ByteRingConfig). See RingConfig::strategy.
using RingStrategy = std::variant<StagingRingConfig, ByteRingConfig>;

/// How a Ring is made.
struct RingConfig {
  /// Which core strategy holds the ring's staging memory, and its configuration:
  ///
  /// A StagingRingConfig (the default, `{}`): the slot ring, one slot per frame — slot count
  /// and slot sizes. Between calls the slots hold at most `slots` × the largest slot; while
  /// begin() grows or replaces a slot, its old buffer is released just after the new one is made
  /// (staging::StagingRing), so for that moment one more buffer is held.
  ///
  /// A ByteRingConfig (its capacity is required): the byte ring, one reservation per upload. Its
  /// tokens are the frames' ids on the ring's frame sequence (see Ring). Its policy is what an
  /// upload that does not fit does:
  ///  - Defer: refuse at once (then RingConfig::policy decides);
  ///  - Wait: wait for the frames in flight whose bytes free enough, up to wait_timeout (then
  ///    Timeout, naming the oldest pending frame); gives up at once when that needs a frame still
  ///    being recorded;
  ///  - Grow: add ring regions up to `cap`, trimmed when idle;
  ///  - Fallback: a dedicated region per upload, up to fallback_cap.
  /// Split is refused at Ring::create (UnsupportedPolicy): a frame submits once, so chunks of
  /// one upload could never retire to make room for the next; split_min_chunk is not used.
  ///
  ///   config.strategy = ByteRingConfig{.capacity = 64 << 20, .policy = ExhaustionPolicy::Wait};
  RingStrategy strategy;
  /// What the ring does when it has no room for a frame (slot ring: begin() got no slot) or for
  /// an upload (byte ring: it refused the reservation under its own policy). The core's
  /// ExhaustionPolicy (byte_ring.hpp):
  ///  - Defer: answer at once: begin() answers its refusal, an upload RingFull;
  ///  - Wait (slot ring only): begin() waits up to wait_timeout for the oldest frame in flight,
  ///    then answers Timeout (oldest_in_flight() names the point; TooLarge and AllocationFailed
  ///    are answered at once; so is RingFull when no frame of the ring route is in flight to
  ///    wait for; a wait_timeout of 0 or less answers Timeout without waiting, and so does a
  ///    vkWaitSemaphores failure other than VK_ERROR_DEVICE_LOST); a byte ring waits per upload
  ///    instead, with ByteRingConfig::policy = Wait;
  ///  - Fallback: take the fallback route: the frame (slot ring) or the upload (byte ring).
  /// Split and Grow are refused at Ring::create (UnsupportedPolicy): a frame submits once,
  /// and slots grow by themselves.
  ExhaustionPolicy policy = ExhaustionPolicy::Fallback;
  /// The longest one begin() waits under ExhaustionPolicy::Wait (slot ring).
  Duration wait_timeout = std::chrono::milliseconds(100);
  /// The fallback route (how the bytes of a frame, or an upload, the ring refused still arrive):
  /// use vkCmdUpdateBuffer for buffer uploads where it is legal (size <= 65536, offset and size
  /// multiples of 4). The data travels inside the command buffer.
  bool fallback_update_buffer = true;
  /// The fallback route: most bytes one frame sends through vkCmdUpdateBuffer; beyond it,
  /// one-off buffers.
  uint64_t fallback_max_update_bytes = uint64_t{256} << 10;
  /// The fallback route: most bytes held in one-off staging buffers at once, across all frames
  /// until their points retire. An upload beyond it is refused (UploadError::FallbackCapReached,
  /// or TooLarge when it is larger than the cap itself and than the ring can ever hold). 0
  /// disables one-off buffers.
  uint64_t fallback_max_oneoff_bytes = uint64_t{64} << 20;
  /// Pad image rows in staging memory to optimalBufferCopyRowPitchAlignment (InPlacePiece says the
  /// pitch). Off: rows are tightly packed.
  bool pad_image_rows = false;
  /// Flush written ranges even when the memory is coherent (a test of the non-coherent path).
  bool flush_always = false;
  /// Where staging buffers come from; null: the built-in hook (one VkDeviceMemory per buffer,
  /// of the type choose_staging_memory_type() picks). Must outlive the ring.
  MemoryHook* memory = nullptr;
  /// The built-in hook (memory null) ranks DEVICE_LOCAL | HOST_VISIBLE types first: resizable BAR
  /// or UMA, the CPU writes straight into VRAM. Off by default (see memory.hpp's memory-type
  /// order). Ignored with a hook of your own.
  bool prefer_device_local = false;
  /// The ring's timeline; may be null. Sees every staging range written, every frame's point and
  /// every release (EventKind::FrameWrite, FrameFinish, FrameRelease) and, for
  /// a byte ring, its events (tokens: frame ids). Called on the ring's thread,
  /// inside its calls. Must outlive the ring. For invariant checkers and profilers.
  Observer* observer = nullptr;
  /// Internal (the library's tests; leave null): with a byte ring, an invariant checker fed every
  /// reservation and completion of the byte ring (tokens: frame ids).
  /// Set ByteRingConfig::check_invariants to have the ring check itself. Must outlive the ring.
  InvariantChecker* checker = nullptr;
  /// The longest the destructor waits for frames still in flight before it gives up and leaks
  /// the ring's memory instead of freeing what the GPU may still read (see ~Ring).
  Duration destroy_timeout = std::chrono::seconds(5);
};

/// What a Ring has done. Plain data; a diagnostic, never a decision input.
struct Stats {
  /// The counters of the ring's strategy, the alternative RingConfig::strategy holds: the slot
  /// ring's StagingStats (frames, placements, slots created/grown/replaced, refusals) or the
  /// byte ring's ByteRingStats (reservations, wraps, waits, grows, fallbacks, ...).
  std::variant<StagingStats, ByteRingStats> strategy;
  uint64_t frames_begun = 0;     ///< frames begun, on either route
  uint64_t frames_finished = 0;  ///< frames finish() recorded
  uint64_t frames_dropped = 0;   ///< frames destroyed (or assigned over) unfinished
  /// Frames that took the fallback route (begin_fallback() or a refusal under Fallback).
  uint64_t frames_fallback = 0;
  /// begin() refusals: TooLarge, RingFull, AllocationFailed (Timeout is begin_timeouts).
  uint64_t begin_refused = 0;
  uint64_t begin_timeouts = 0;  ///< begin() answers of Timeout
  uint64_t waits = 0;           ///< begin() calls that waited (Wait policy)
  Duration wait_time{0};        ///< the time those calls spent waiting, in total
  uint64_t staged_uploads = 0;  ///< uploads placed in the ring's staging memory
  uint64_t staged_bytes = 0;    ///< their bytes (alignment padding excluded)
  /// Fallback route: uploads sent with vkCmdUpdateBuffer (their data in the command buffer).
  uint64_t update_buffer_uploads = 0;
  uint64_t update_buffer_bytes = 0;  ///< their bytes
  uint64_t oneoff_uploads = 0;       ///< fallback route: uploads through one-off staging buffers
  uint64_t oneoff_bytes = 0;         ///< their bytes
  /// Uploads of ring-route frames sent to the fallback route because the ring had no room (a
  /// full slot, or a byte-ring refusal under the Fallback policy).
  uint64_t ring_full_fallbacks = 0;
  /// Uploads refused with FallbackCapReached or TooLarge (RingConfig::fallback_max_oneoff_bytes).
  uint64_t fallback_cap_refusals = 0;
  /// Byte ring: uploads the byte ring refused (under any ByteRingConfig::policy) answered
  /// RingFull because RingConfig::policy is Defer.
  uint64_t ring_full_refusals = 0;
  /// One-off staging bytes held now (until their frames' points retire, or the frames drop).
  uint64_t oneoff_live_bytes = 0;
  uint64_t oneoff_peak_bytes = 0;  ///< the most oneoff_live_bytes has been
  uint64_t points_retired = 0;     ///< retirement points reached (by poll(), wait(), begin())
  uint64_t points_abandoned = 0;   ///< points reported with abandon()
  uint64_t points_failed = 0;      ///< points failed by a lost device
  uint64_t device_lost = 0;        ///< times the device was found lost
  /// vkCmdCopyBuffer and vkCmdCopyBufferToImage commands recorded (one per source and
  /// destination).
  uint64_t copy_commands = 0;
  uint64_t copy_regions = 0;     ///< the regions those commands copy (adjacent ones merged)
  uint64_t update_commands = 0;  ///< vkCmdUpdateBuffer commands recorded
  uint64_t barriers = 0;         ///< vkCmdPipelineBarrier2 commands recorded
  /// Flushes of non-coherent (or flush_always) memory.
  uint64_t flushes = 0;
  uint64_t flushed_bytes = 0;  ///< the bytes asked for (before rounding to atoms)
};

/// Stats' counters, in declaration order: the one list that formatting, comparison and
/// serialisation use (counters.hpp).
constexpr auto counters_of(std::type_identity<Stats>) noexcept {
  using S = Stats;
  constexpr CounterUnit bytes = CounterUnit::Bytes;
  return std::tuple{
      not_a_counter(&S::strategy),  // format_stats() shows the strategy's own table
      counter("frames_begun", "frames begun (all routes)", &S::frames_begun),
      counter("frames_finished", "frames finished", &S::frames_finished),
      counter("frames_dropped", "frames dropped unfinished", &S::frames_dropped),
      counter("frames_fallback", "frames on the fallback route", &S::frames_fallback),
      counter("begin_refused", "begin: refused", &S::begin_refused),
      counter("begin_timeouts", "begin: timed out waiting", &S::begin_timeouts),
      counter("waits", "begin: waited", &S::waits),
      counter("wait_time_ns", "begin: wait time (ns)", &S::wait_time),
      counter("staged_uploads", "uploads staged in the ring", &S::staged_uploads),
      counter("staged_bytes", "bytes staged in the ring", &S::staged_bytes, bytes),
      counter("update_buffer_uploads", "fallback: update-buffer", &S::update_buffer_uploads),
      counter("update_buffer_bytes", "fallback: update-buffer bytes", &S::update_buffer_bytes,
              bytes),
      counter("oneoff_uploads", "fallback: one-off buffers", &S::oneoff_uploads),
      counter("oneoff_bytes", "fallback: one-off bytes", &S::oneoff_bytes, bytes),
      counter("ring_full_fallbacks", "fallback: ring had no room", &S::ring_full_fallbacks),
      counter("fallback_cap_refusals", "fallback: refused at cap", &S::fallback_cap_refusals),
      counter("ring_full_refusals", "refused: ring full", &S::ring_full_refusals),
      counter("oneoff_live_bytes", "one-off bytes held now", &S::oneoff_live_bytes, bytes),
      counter("oneoff_peak_bytes", "one-off bytes held at peak", &S::oneoff_peak_bytes, bytes),
      counter("points_retired", "points retired", &S::points_retired),
      counter("points_abandoned", "points abandoned", &S::points_abandoned),
      counter("points_failed", "points failed (device lost)", &S::points_failed),
      counter("device_lost", "device lost", &S::device_lost),
      counter("copy_commands", "copy commands", &S::copy_commands),
      counter("copy_regions", "copy regions", &S::copy_regions),
      counter("update_commands", "update-buffer commands", &S::update_commands),
      counter("barriers", "pipeline barriers", &S::barriers),
      counter("flushes", "flushes", &S::flushes),
      counter("flushed_bytes", "flushed bytes", &S::flushed_bytes, bytes)};
}
static_assert(counters_complete<Stats>(), "vulkan::Stats: a member is missing from counters_of");

/// A readable multi-line table of the counters (the strategy's ring, then the Vulkan side), for
/// logs and examples. Allocates.
[[nodiscard]] std::string format_stats(const Stats& stats);

class Ring;
namespace detail {
/// A ring's state, for the library's own inspection (staging/detail/vulkan/ring_inspect.hpp).
const RingImpl& impl_of(const Ring& ring) noexcept;
}  // namespace detail

/// The staging ring of one device. See the file comment.
///
/// Retirement by value: every frame gets the next number of the ring's frame sequence at
/// begin() (its id); its slot (slot strategy) or its reservations (byte strategy) carry that
/// number. The ring hands the strategy the highest number through which every frame has been
/// released (its point reached, or abandoned, failed or dropped) — so retirement still follows
/// the semaphores, and frames may finish and complete in any order (a later one's memory waits
/// for an earlier one).
///
/// Ownership: owns its staging buffers, its timeline semaphore and the one-off buffers of frames
/// in flight. Frames must not outlive it. Destroying it frees all of that, but never under the
/// GPU: the destructor first waits (up to RingConfig::destroy_timeout) for every point in flight;
/// when they are not all reached by then — a frame finished but never submitted and not
/// abandon()ed, or a hung queue — it leaks the ring's staging memory and semaphore rather than
/// free memory the GPU may still read, and counts it in rings_leaked(). A lost device reads
/// nothing more: then everything is freed. Wait yourself (wait_idle()) to keep it quick.
/// Threading: not synchronised. The ring and its frames are used by one thread at a time (one
/// ring per recording thread, or a lock around a shared one). The semaphore may be signalled by
/// the GPU or any host thread at any time. Observers and the memory hook are called on that
/// thread, from inside the ring's calls; they must not call the ring.
/// Movable (the state is boxed: frames keep working across a move); a moved-from ring may only
/// be destroyed or assigned to.
class Ring {
 public:
  /// Makes a ring: checks the dispatch, the configuration and the device's API version, creates
  /// the timeline semaphore (initial value 0). A slot ring allocates no staging memory until
  /// the first frame; a byte ring allocates its first region (ByteRingConfig::capacity) here.
  /// Errors (CreateError), checked in this order: MissingFunction (a Dispatch member is null:
  /// Dispatch::missing() names it); InvalidConfig (`device.device` or
  /// `device.physical_device` is null); NoSlots, TooManySlots, MinNotPowerOfTwo, MaxBelowMin,
  /// SlotTooLarge (a StagingRingConfig, as validate()); UnsupportedPolicy (RingConfig::policy
  /// Split or Grow, Wait with a byte ring — use ByteRingConfig::policy = Wait —, or
  /// ByteRingConfig::policy Split); ApiVersionTooOld (the physical device reports an API version
  /// below 1.2); ObjectCreationFailed (vkCreateSemaphore failed: out of host or device memory);
  /// then, for a byte ring, the byte ring's (ByteRing::create: ZeroCapacity, CapBelowCapacity,
  /// FallbackCapAboveCap, AllocationFailed).
  static Expected<Ring, CreateError> create(const Device& device, const RingConfig& config = {});

  /// Moves the ring (frames keep working); the moved-from ring may only be destroyed or
  /// assigned to.
  Ring(Ring&&) noexcept;
  /// Replaces this ring with `other` (this one is destroyed as by its destructor); `other` is
  /// left as after the move constructor.
  Ring& operator=(Ring&&) noexcept;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  /// Waits (bounded) for the frames in flight, then frees the staging buffers, one-off buffers
  /// and semaphore — or leaks them when the wait gives up (see Ownership). Aborts if a
  /// StagingFrame of this ring is still open.
  ~Ring();

  /// Begins a frame that records into `cmd` and will place at most `needed` bytes (use
  /// buffer_footprint()/image_footprint() to sum them; an underestimate is not an error — uploads
  /// that no longer fit take the fallback route). Retires what the GPU has finished first. When
  /// the ring gives no slot, the policy decides (see RingConfig::policy). Errors (the shared
  /// UploadError):
  ///  - InvalidArgument: `cmd` is VK_NULL_HANDLE (any strategy);
  ///  - TooLarge, RingFull, AllocationFailed: a slot ring refused and the policy is Defer — or
  ///    Wait with a refusal that waiting cannot cure. TooLarge: the frame needs more than the
  ///    largest slot; RingFull: every slot is held by a frame being recorded or in flight (or by a
  ///    completed frame that waits for an earlier one, see Retirement by value);
  ///    AllocationFailed: creating, growing or replacing the slot's buffer failed
  ///    (last_alloc_error() says why). Take the fallback route with begin_fallback(), or skip
  ///    the frame;
  ///  - Timeout: Wait, and the whole wait_timeout passed with every slot still in flight;
  ///    oldest_in_flight() names the point waited for (a stalled queue is named, never waited on
  ///    forever).
  /// A byte ring never refuses otherwise; `needed` is unused (each upload reserves its own
  /// bytes).
  Expected<StagingFrame, UploadError> begin(VkCommandBuffer cmd, uint64_t needed);
  /// begin(cmd, needed) sized by what recent frames asked for: `needed` is the most any of the
  /// last 8 finished frames tried to place (their uploads' footprints, on whichever route they
  /// went), 0 for the first frame (the smallest slot), and never more than the largest slot (so
  /// a frame that sent more than that by the fallback route never makes this TooLarge). A frame
  /// that asks for more than recent ones sends what no longer fits by the fallback route, and
  /// the next frames get a larger slot; one that asks for less leaves the rest of its slot unused.
  /// Pass `needed` when a frame is known to be larger than the ones before it (a level load).
  /// Errors: as begin(cmd, needed).
  Expected<StagingFrame, UploadError> begin(VkCommandBuffer cmd);
  /// Begins a frame on the fallback route: vkCmdUpdateBuffer where legal, else one-off staging
  /// buffers, within RingConfig's fallback caps. Never fails; a null `cmd` gives an inactive frame.
  StagingFrame begin_fallback(VkCommandBuffer cmd);

  /// Retires every point whose semaphore has reached its value; returns how many. A lost device
  /// (VK_ERROR_DEVICE_LOST from vkGetSemaphoreCounterValue) fails every point in flight
  /// (stats().device_lost, points_failed); a point whose semaphore cannot be read otherwise
  /// stays in flight.
  uint64_t poll();
  /// Waits as vulkan::wait(device, point, timeout) does on the ring's device, then poll()s (the
  /// memory of every frame it completed is reused once every earlier frame is released too).
  /// Errors: Timeout (also for a vkWaitSemaphores failure other than VK_ERROR_DEVICE_LOST),
  /// DeviceLost (from the wait, or from the poll after it; every frame in flight not retired is
  /// then failed, as poll() does), Failed (a point with no semaphore and a value above 0; with
  /// value 0 it is reached at once). Precondition: a non-null `point.semaphore` is a timeline
  /// semaphore of this device.
  Expected<void, WaitError> wait(const RetirementPoint& point, Duration timeout);
  /// Waits until every point in flight is reached (or `timeout` passes), then poll()s. Succeeds
  /// at once when nothing is in flight. Errors: Timeout, DeviceLost (as wait()).
  Expected<void, WaitError> wait_idle(Duration timeout);
  /// Reports that the submission meant to signal `point` will never happen (command buffer
  /// dropped, vkQueueSubmit2 failed): every frame in flight finished with that point gives its
  /// memory back (a slot becomes Abandoned and is replaced on its next pick) and frees its
  /// one-off buffers. Returns false when no frame in flight has that point. Precondition:
  /// nothing submitted reads those frames' memory.
  bool abandon(const RetirementPoint& point);

  /// Worst-case bytes a buffer upload of `size` bytes takes in a slot (size plus alignment
  /// padding), for begin()'s `needed`. Saturates at UINT64_MAX.
  [[nodiscard]] uint64_t buffer_footprint(uint64_t size) const noexcept;
  /// The same for an image region (its staging layout plus alignment padding). Errors:
  /// NullDestination, ZeroSize, UnsupportedFormat, BadAspect, Misaligned, Overflow (as upload()).
  [[nodiscard]] Expected<uint64_t, UploadError> image_footprint(const ImageRegion& region) const;
  /// The tightly packed byte size of an image region's data (what upload() expects). Errors: as
  /// image_footprint().
  [[nodiscard]] Expected<uint64_t, UploadError> image_data_size(const ImageRegion& region) const;

  /// The ring's own timeline semaphore (frames finished without an external point signal it).
  [[nodiscard]] VkSemaphore semaphore() const noexcept;
  /// The last value of the ring's semaphore handed out by finish() (0 before the first).
  [[nodiscard]] uint64_t last_value() const noexcept;
  /// Frames finished whose points have not been reached yet.
  [[nodiscard]] uint64_t in_flight() const noexcept;
  /// The point of the oldest frame in flight that holds ring memory (a slot, or byte-ring
  /// reservations): the one begin() waits for under ExhaustionPolicy::Wait, and the one a Timeout
  /// from begin() waited for — unless that frame completed just after the timeout, when the poll
  /// that ended the wait retired it. None when no such frame is in flight (as of the last
  /// poll()).
  [[nodiscard]] std::optional<RetirementPoint> oldest_in_flight() const noexcept;
  /// The memory type of the last staging buffer made (none before the first).
  [[nodiscard]] std::optional<uint32_t> memory_type() const noexcept;
  /// Whether the last staging buffer made is HOST_COHERENT (true before the first).
  [[nodiscard]] bool memory_coherent() const noexcept;
  /// The allocator error behind the last failed staging allocation, if any (not cleared by a
  /// later success).
  [[nodiscard]] std::optional<AllocError> last_alloc_error() const noexcept;
  /// The byte ring's answer behind the last refused reservation, if any (a slot ring reserves
  /// nothing: it refuses whole frames at begin(), or in a fallback frame's refusal()).
  [[nodiscard]] const std::optional<ReserveError>& last_reserve_error() const noexcept;
  /// The configuration the ring was created with.
  [[nodiscard]] const RingConfig& config() const noexcept;
  /// A snapshot of every counter, the core ring's included.
  [[nodiscard]] Stats stats() const noexcept;

 private:
  friend const detail::RingImpl& detail::impl_of(const Ring& ring) noexcept;
  explicit Ring(std::unique_ptr<detail::RingImpl> impl) noexcept;
  std::unique_ptr<detail::RingImpl> impl_;
};

/// Rings (of this process) whose destructor gave up waiting for their frames in flight and
/// leaked their staging memory and semaphore rather than free memory the GPU may still read
/// (RingConfig::destroy_timeout). Safe from any thread.
[[nodiscard]] uint64_t rings_leaked() noexcept;

}  // namespace staging::vulkan
