// staging::webgpu::StagingRing: the slot ring (staging::StagingRing) over the WebGPU C API
// (Emscripten).
//
// The slot policy is not reimplemented here: this ring *is* staging::StagingRing<SlotBuffer> with a
// SlotBufferAllocator, plus what only a live device can do — frames that write into mapped slots
// and record copies (StagingFrame), the fallback route (queue writes) for frames that get no slot,
// and the map callbacks that fire the slots' FenceTokens. Constants and states are the core's
// (STAGING_SLOTS, MIN_SLOT_BYTES, MAX_SLOT_BYTES, SlotState); STAGING_USAGE is in slot_buffer.hpp.
//
//   slot 0: [Ready 64K]──begin──►[Recording]──finish──►[InFlight]──submitted…map callback──►[Ready]
//                                                          │ frame dropped unsubmitted ─► Abandoned
//                                                          │ re-map failed ─────────────► Failed
//   Abandoned / Failed slots get a fresh (mapped) buffer the next time they are picked.
//
// Retirement is pushed, as a timeline of one step: a slot's map callback fires its FenceToken. The
// ring never polls: in the browser a map callback only runs once control returns to the event loop
// (between requestAnimationFrame callbacks), so there is nothing to poll synchronously.
#pragma once

#include <webgpu/webgpu.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/expected.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/detail/core/limits.hpp"
#include "staging/detail/core/staging_ring.hpp"
#include "staging/detail/webgpu/copy_layout.hpp"
#include "staging/detail/webgpu/slot_buffer.hpp"
#include "staging/webgpu/staging_frame.hpp"

namespace staging::webgpu {

/// The largest slot this backend makes (1 GiB): mapped ranges are mirrored in the wasm heap.
inline constexpr uint64_t MAX_MAPPABLE_SLOT_BYTES = uint64_t{1} << 30;

/// The slot policy this ring runs: the core's, over WebGPU slot buffers.
using CoreRing = staging::StagingRing<SlotBuffer>;

/// How a StagingRing is made.
struct RingConfig {
  /// Slot count and sizes (max_slot_bytes is capped at MAX_MAPPABLE_SLOT_BYTES).
  StagingRingConfig slot_ring;
  /// What begin() does without a slot: the core's ExhaustionPolicy (byte_ring.hpp), with the
  /// values a browser frame can use —
  ///  - Defer: begin() answers the refusal (TooLarge, AllInFlight, AllocationFailed);
  ///  - Fallback: begin() gives a frame on the fallback route (queue writes): the same bytes,
  ///    another way.
  /// Wait, Split and Grow are refused by create() (ConfigError::UnsupportedPolicy): a browser
  /// frame cannot wait (map callbacks run only between frames), and slots grow by themselves.
  ExhaustionPolicy policy = ExhaustionPolicy::Fallback;
};

/// What the WebGPU side of a ring has done: routes, repacking, mappings. The slot policy's own
/// counters are in StagingRing::stats(). A diagnostic, never a decision input.
struct RouteStats {
  /// Uploads (buffer and texture) written into slots (the ring route).
  uint64_t slot_uploads = 0;
  uint64_t slot_bytes = 0;  ///< their bytes (unpadded)
  /// Uploads sent through wgpuQueueWriteBuffer / wgpuQueueWriteTexture — from frames without a
  /// slot and from uploads that did not fit their frame's slot.
  uint64_t queue_write_uploads = 0;
  uint64_t queue_write_bytes = 0;  ///< their bytes
  /// Of those, uploads that took the queue-write route because their slot was full.
  uint64_t slot_overflows = 0;
  /// Frames made on the fallback route by begin() (the ring refused a slot).
  uint64_t queue_write_frames = 0;
  /// Texture uploads through slots.
  uint64_t texture_uploads = 0;
  uint64_t rows_repacked = 0;  ///< the rows repacked to 256-byte bytesPerRow for them
  /// Bytes handed out by wgpuBufferGetMappedRange: under Emscripten a heap mirror of this size
  /// was allocated and copied into the buffer at unmap.
  uint64_t mirrored_bytes = 0;
  /// Copy commands recorded by finish().
  uint64_t copies_recorded = 0;
  /// Frames finished (either route).
  uint64_t frames_finished = 0;
  uint64_t frames_submitted = 0;  ///< frames told submitted()
  /// Frames destroyed finished but unsubmitted, with a slot in flight (the slot is Abandoned).
  uint64_t frames_abandoned = 0;
  /// Frames destroyed while recording with bytes placed (their slot re-mapped without a copy).
  uint64_t frames_dropped = 0;
  /// Re-map requests made (by submitted() and by dropped frames).
  uint64_t maps_requested = 0;
  uint64_t maps_completed = 0;  ///< re-map callbacks that succeeded (slot Ready)
  uint64_t maps_failed = 0;     ///< re-map callbacks that failed (slot Failed)
};

/// The slot ring on a WebGPU device. See the file comment.
///
/// Ownership: holds a reference to the device and its queue; owns the slot buffers. Not movable
/// (frames point at it): create() returns it boxed. It must outlive its frames. Destroying it
/// destroys the slot buffers; WebGPU finishes submitted copies first, and a pending map request
/// then fails (its FenceToken fires into a fence no ring uses any more, harmlessly).
/// Threading: the device's thread (the browser's main thread).
class StagingRing {
 public:
  /// Makes a ring on `device` (referenced; must not be null: aborts). No buffer is created yet.
  /// `config.slot_ring.max_slot_bytes` is capped at MAX_MAPPABLE_SLOT_BYTES (a slot's mapped
  /// ranges are mirrored in the wasm heap, and the C API passes sizes as 32-bit size_t).
  /// Errors: the core's ConfigError for `config.slot_ring` (after the cap).
  static Expected<std::unique_ptr<StagingRing>, ConfigError> create(WGPUDevice device,
                                                                    RingConfig config = {});
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  /// Destroys the slot buffers and releases the queue and device (see Ownership).
  ~StagingRing();

  /// A frame holding a slot with room for `needed` bytes (sum upload_footprint() of the frame's
  /// uploads). When the ring gives no slot — TooLarge when `needed` exceeds the largest slot
  /// (see StagingRingConfig::max_slot_bytes), AllInFlight when every slot is Recording or
  /// InFlight, AllocationFailed — the policy decides: Fallback (the default) gives a frame on
  /// the fallback route, whose refusal() says why (the same calls, the same bytes); Defer
  /// answers the refusal.
  Expected<StagingFrame, Refusal> begin(uint64_t needed);

  /// A frame on the fallback route (queue writes), whatever the slots' states. Never fails.
  StagingFrame begin_fallback();

  /// Number of slots (RingConfig::slot_ring.slots).
  [[nodiscard]] std::size_t slot_count() const noexcept { return core_.slot_count(); }
  /// Slot `index`'s state. Precondition: index < slot_count() (aborts otherwise).
  [[nodiscard]] SlotState state(std::size_t index) const { return core_.state(index); }
  /// Slot `index`'s buffer capacity (0 when none). Precondition as state().
  [[nodiscard]] uint64_t capacity(std::size_t index) const { return core_.capacity(index); }
  /// Slot `index`'s buffer (null when none; not a new reference). Precondition as state().
  [[nodiscard]] WGPUBuffer buffer(std::size_t index) const;

  /// The slot policy's counters (frames, growth, replacements, refusals by reason).
  [[nodiscard]] const StagingStats& stats() const noexcept { return core_.stats(); }
  /// The WebGPU side's counters.
  [[nodiscard]] const RouteStats& route_stats() const noexcept { return *route_stats_; }
  /// The core ring (for inspection; frames must go through begin()/begin_fallback()).
  [[nodiscard]] const CoreRing& core() const noexcept { return core_; }
  /// The device's queue (referenced by the ring).
  [[nodiscard]] WGPUQueue queue() const noexcept { return queue_; }

 private:
  friend class StagingFrame;
  StagingRing(WGPUDevice device, CoreRing core, std::unique_ptr<SlotBufferAllocator> allocator,
              ExhaustionPolicy policy);

  std::unique_ptr<SlotBufferAllocator> allocator_;  // boxed: core_ points at it
  CoreRing core_;
  ExhaustionPolicy policy_;
  WGPUDevice device_;
  WGPUQueue queue_;
  // Shared with pending map callbacks, which may run after the ring is gone.
  std::shared_ptr<RouteStats> route_stats_ = std::make_shared<RouteStats>();
  // Copy lists recycled between frames, so a steady state allocates nothing per frame.
  std::vector<std::vector<StagingFrame::Copy>> spare_copies_;
};

}  // namespace staging::webgpu
