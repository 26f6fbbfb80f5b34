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
#include <span>
#include <string_view>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/limits.hpp"
#include "staging/detail/core/slot_fence.hpp"
#include "staging/detail/core/slot_lease.hpp"
#include "staging/detail/core/staging_ring.hpp"
#include "staging/detail/webgpu/copy_layout.hpp"
#include "staging/detail/webgpu/frame_state.hpp"
#include "staging/detail/webgpu/slot_buffer.hpp"

namespace staging::webgpu {

// StagingFrame: one frame's uploads — a slot's mapped memory to write them into and the copy
// commands that move them to their destinations — or, for a frame the ring gave no slot, the
// fallback route: the same bytes through wgpuQueueWriteBuffer / wgpuQueueWriteTexture.
//
// The frame cycle (docs/webgpu.md):
//
//   auto frame = ring.begin(needed).value();  // a slot (Recording) or the fallback route
//   frame.upload(vertices, 0, data, size);    // bytes copied into the slot's mapping now
//   frame.upload(tile, pixels, size);         // rows repacked to 256-byte bytesPerRow
//   frame.finish(encoder);                    // unmap (flush), record copies; slot InFlight
//   wgpuQueueSubmit(queue, 1, &commands);
//   frame.submitted();                        // request the re-map; its callback → Ready
//
// The slot's fence is its re-map: WebGPU completes a map request only after the submissions
// that read the buffer have finished. The WebGPU C API has no way to attach it to the encoder,
// so the caller says when the encoder was submitted. A frame destroyed after finish() but
// without submitted() is a dropped encoder: the slot becomes Abandoned and is replaced the next
// time it is picked. A failed re-map (destroyed buffer, lost device) leaves it Failed.
//
// Threading: the device's thread (the browser's main thread). The map callback runs there too,
// from the event loop, so a slot becomes Ready only after control has returned to the browser.

class StagingRing;

/// Where a texture upload goes: the destination texture, mip level and origin, the region's
/// extent, and the format's texel block.
struct TextureUpload {
  WGPUTexture texture = nullptr;  ///< the destination (COPY_DST usage; not null)
  uint32_t mip_level = 0;         ///< the mip level written
  WGPUOrigin3D origin{0, 0, 0};   ///< where the region starts, in texels (block-aligned)
  WGPUTextureAspect aspect = WGPUTextureAspect_All;  ///< the aspect written
  /// The region in texels; depthOrArrayLayers counts images (layers or depth slices).
  WGPUExtent3D extent{0, 0, 1};
  /// The format's texel block (4 bytes, 1×1 for rgba8unorm).
  TexelBlock block{};
  /// The texture's format, checked against a TextureDestination's (Undefined: the destination's).
  WGPUTextureFormat format = WGPUTextureFormat_Undefined;
};

/// A destination buffer, described once (the size it was created with): uploads through it are
/// checked to lie inside it. Plain data. (The WebGPU C API this library targets cannot ask a
/// buffer for its size.)
struct BufferDestination {
  WGPUBuffer buffer = nullptr;  ///< the buffer (COPY_DST usage; not null)
  uint64_t size = 0;            ///< its WGPUBufferDescriptor::size in bytes (> 0)
};

/// A destination texture, described once (the values of its WGPUTextureDescriptor): regions
/// uploaded through it are checked against its format, size, mip levels and array layers.
struct TextureDestination {
  WGPUTexture texture = nullptr;                           ///< the texture (COPY_DST; not null)
  WGPUTextureFormat format = WGPUTextureFormat_Undefined;  ///< its format (not Undefined)
  /// Mip level 0's size in texels; depthOrArrayLayers: array layers (2D) or depth (3D).
  WGPUExtent3D size{0, 0, 1};
  uint32_t mip_level_count = 1;  ///< mip levels (1 ..= floor(log2(largest mipped dimension)) + 1)
  /// 2D (layers are not mipped) or 3D (depth is); 1D textures are 2D textures of height 1 here.
  WGPUTextureDimension dimension = WGPUTextureDimension_2D;
};

/// Checks that bytes [offset, offset + size) lie inside `target`. Pure; safe from any thread.
/// Errors: NullDestination, InvalidDestination, ZeroSize, OutOfBounds (also on overflow).
[[nodiscard]] Expected<void, UploadError> check_destination(const BufferDestination& target,
                                                            uint64_t offset,
                                                            uint64_t size) noexcept;

/// Checks `region` against the described destination `target`: the same texture (null: the
/// destination's) and format (Undefined: the destination's), a non-empty extent, a mip level the
/// texture has, array layers it has (2D), and the box inside the mip level's size rounded up to
/// whole blocks of region.block, with origin and extent whole blocks (WebGPU's copy rules). Pure;
/// safe from any thread. Errors, in this order: NullDestination, InvalidDestination,
/// DestinationMismatch, FormatMismatch, ZeroSize, UnsupportedFormat (region.block not set),
/// NoSuchSubresource, OutOfBounds, Misaligned.
[[nodiscard]] Expected<void, UploadError> check_destination(const TextureDestination& target,
                                                            const TextureUpload& region) noexcept;

/// The slot layout of a texture upload (the core's engine under COPY_LIMITS; extent.
/// depthOrArrayLayers counts images). Errors: Empty, Overflow. Pure; safe from any thread.
[[nodiscard]] Expected<TextureLayout, LayoutError> texture_layout(
    const TextureUpload& region) noexcept;

/// One frame's uploads. Made by StagingRing::begin() / begin_fallback().
///
/// Ownership: move-only; references its StagingRing, which must outlive it. Holds a reference to
/// every destination it recorded a copy to, until finish() (or destruction) releases them.
/// States: Recording → finish() → Finished → submitted() → Submitted. Destroying a frame (or
/// assigning another over it) does, by state:
///   - Recording, nothing placed in the slot: the slot is Ready again at once;
///   - Recording with bytes placed (ranges of the slot are mapped out): the slot is unmapped and
///     re-mapped without any copy — InFlight until the map callback makes it Ready;
///   - Finished, not submitted: a dropped encoder — the slot is Abandoned and its buffer replaced
///     on the next pick (the caller must then not submit that encoder either);
///   - Submitted, or on the fallback route: nothing to do.
/// Threading: the device's thread.
class StagingFrame {
 public:
  /// Takes `other`'s frame; `other` is left as if finished.
  StagingFrame(StagingFrame&& other) noexcept;
  /// Ends a frame held here as the destructor does (see above), then takes `other`'s.
  StagingFrame& operator=(StagingFrame&& other) noexcept;
  StagingFrame(const StagingFrame&) = delete;
  StagingFrame& operator=(const StagingFrame&) = delete;
  /// See "Destroying a frame" above.
  ~StagingFrame();

  /// Route::Ring when the frame holds a slot, Route::Fallback otherwise (and once moved from).
  [[nodiscard]] Route route() const noexcept {
    return slot_buffer_ ? Route::Ring : Route::Fallback;
  }
  /// Why begin() gave this frame no slot; none for a slot frame and for begin_fallback().
  [[nodiscard]] std::optional<UploadError> refusal() const noexcept { return refusal_; }
  /// The slot index (meaningful for Route::Ring only).
  [[nodiscard]] std::size_t slot() const noexcept { return slot_; }
  /// Slot bytes used so far (alignment padding included); 0 on the fallback route.
  /// Meaningless after finish() or once moved from.
  [[nodiscard]] uint64_t slot_bytes_used() const noexcept { return lease_.cursor(); }

  /// Uploads `size` bytes at `data` to `dst` at `dst_offset`. Ring route: the bytes are copied
  /// into the slot now (placed at an 8-byte boundary) and a copy is recorded at finish(). When
  /// the slot has no room left, or on the fallback route: wgpuQueueWriteBuffer now (ordered
  /// before the next submission; so a queue write and a slot copy to the *same* bytes in one
  /// frame land in the order queue write, then copy). Returns the route taken. Precondition:
  /// `data` points to `size` readable bytes (they are copied before this returns).
  /// Errors: Inactive, ZeroSize, Misaligned (size or dst_offset % 4), TooLarge, NullDestination.
  Expected<Route, UploadError> upload(WGPUBuffer dst, uint64_t dst_offset, const void* data,
                                      uint64_t size);

  /// upload() to a described buffer: the range is first checked to lie inside it
  /// (check_destination). The way in for buffers: WebGPU rejects a copy past a buffer's end by
  /// invalidating the whole command buffer — every upload of the frame with it. Errors: as
  /// upload(), plus InvalidDestination and OutOfBounds (nothing written or recorded).
  Expected<Route, UploadError> upload(const BufferDestination& dst, uint64_t dst_offset,
                                      const void* data, uint64_t size);
  /// reserve() in a described buffer, checked as the described upload().
  Expected<std::span<std::byte>, UploadError> reserve(const BufferDestination& dst,
                                                      uint64_t dst_offset, uint64_t size);
  /// The texture upload() into a described texture: `region` is first checked against `dst`
  /// (check_destination; its texture and format may be left unset to take the destination's).
  /// Errors: as the texture upload(), plus InvalidDestination, OutOfBounds, NoSuchSubresource,
  /// FormatMismatch, DestinationMismatch, Misaligned (nothing written or recorded).
  Expected<Route, UploadError> upload(const TextureDestination& dst, const TextureUpload& region,
                                      const void* data, uint64_t size);
  /// Uploads a texture region from tightly packed rows (`size` must equal the region's packed
  /// size: ceil(w/bw)*bytes per row, ceil(h/bh) rows, extent.depthOrArrayLayers images). Slot
  /// route: rows repacked into the slot with bytesPerRow padded to 256, copy recorded at finish().
  /// Otherwise (or when it does not fit): wgpuQueueWriteTexture with the packed rows.
  /// Errors: ZeroSize, NullDestination, UnsupportedFormat (no block), Overflow, SizeMismatch,
  /// TooLarge, Inactive.
  Expected<Route, UploadError> upload(const TextureUpload& dst, const void* data, uint64_t size);

  /// Zero-copy form of upload() to a buffer: places `size` bytes for `dst` at `dst_offset` and
  /// returns the slot's mapped bytes to fill before finish() (they are flushed there). The span's
  /// contents are undefined until written. Errors: ZeroSize, Misaligned, NullDestination, NoSlot
  /// (fallback route), DoesNotFit, TooLarge, Inactive.
  Expected<std::span<std::byte>, UploadError> reserve(WGPUBuffer dst, uint64_t dst_offset,
                                                      uint64_t size);

  /// Ends recording. Ring route: unmaps the slot (Emscripten flushes the mapped ranges' heap
  /// mirrors into the buffer here) and records every copy into `encoder`, in upload order; the
  /// slot becomes InFlight. A slot frame that placed nothing in its slot (no uploads, or all by
  /// queue write) gives the slot back (Ready) and records nothing. Fallback route: records
  /// nothing. `encoder` may be null when nothing is recorded.
  /// Errors: Inactive, NullEncoder.
  Expected<void, FinishError> finish(WGPUCommandEncoder encoder);

  /// Tells the frame that the command buffer of the encoder given to finish() was submitted
  /// (wgpuQueueSubmit returned). Requests the slot's re-map; WebGPU completes it only after that
  /// submission has finished reading the slot, and its callback makes the slot Ready (or Failed
  /// when the mapping fails). Calling this without having submitted makes that submission invalid
  /// (its slot is mapped again). Errors: NotFinished, Inactive.
  Expected<void, FinishError> submitted();

  /// True after finish() (and after submitted(), and once moved from).
  [[nodiscard]] bool finished() const noexcept { return state_ != State::Recording; }

 private:
  friend class StagingRing;
  using State = FrameState;
  using Copy = FrameCopy;

  // Fallback route frame.
  StagingFrame(StagingRing& ring, std::optional<UploadError> refusal) noexcept;
  // Slot frame.
  StagingFrame(StagingRing& ring, SlotLease lease, WGPUBuffer slot_buffer,
               uint64_t slot_capacity) noexcept;

  // Places `size` (a multiple of 4) bytes at `alignment` and maps them; null when they do not fit.
  std::byte* place(uint64_t size, uint64_t alignment) noexcept;
  void release_destinations() noexcept;
  void request_map(FenceToken token) noexcept;
  void close() noexcept;

  StagingRing* ring_ = nullptr;
  State state_ = State::Closed;
  std::optional<UploadError> refusal_;
  SlotLease lease_;
  FenceToken token_;
  WGPUBuffer slot_buffer_ = nullptr;  // not owned: the ring's slot buffer
  uint64_t slot_capacity_ = 0;
  std::size_t slot_ = 0;
  bool mapped_any_ = false;  // a range of the slot was handed out by GetMappedRange
  std::vector<Copy> copies_;
};

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
  ///  - Defer: begin() answers the refusal (TooLarge, RingFull, AllocationFailed);
  ///  - Fallback: begin() gives a frame on the fallback route (queue writes): the same bytes,
  ///    another way.
  /// Wait, Split and Grow are refused by create() (CreateError::UnsupportedPolicy): a browser
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
  /// Errors (CreateError): UnsupportedPolicy; then validate()'s for `config.slot_ring` (after
  /// the cap).
  static Expected<std::unique_ptr<StagingRing>, CreateError> create(WGPUDevice device,
                                                                    RingConfig config = {});
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  /// Destroys the slot buffers and releases the queue and device (see Ownership).
  ~StagingRing();

  /// A frame holding a slot with room for `needed` bytes (sum upload_footprint() of the frame's
  /// uploads). When the ring gives no slot — TooLarge when `needed` exceeds the largest slot
  /// (see StagingRingConfig::max_slot_bytes), RingFull when every slot is Recording or
  /// InFlight, AllocationFailed — the policy decides: Fallback (the default) gives a frame on
  /// the fallback route, whose refusal() says why (the same calls, the same bytes); Defer
  /// answers the refusal.
  Expected<StagingFrame, UploadError> begin(uint64_t needed);

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
  /// The slot configuration in force (RingConfig::slot_ring, max_slot_bytes capped at
  /// MAX_MAPPABLE_SLOT_BYTES).
  [[nodiscard]] const StagingRingConfig& slot_config() const noexcept { return core_.config(); }
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
  std::vector<std::vector<FrameCopy>> spare_copies_;
};

}  // namespace staging::webgpu
