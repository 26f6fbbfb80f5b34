// StagingFrame: one frame's uploads — seed 004's "one frame's open slot: a mapped view to write
// uploads into and the copy commands that move them to their destinations" — plus the seed's
// other route: a frame StagingRing::begin() gave no slot sends the same bytes through
// wgpuQueueWriteBuffer / wgpuQueueWriteTexture.
//
// The frame cycle, and the one difference from the seed (docs/webgpu.md):
//
//   auto frame = ring.begin_frame(needed);        // a slot (Recording) or the queue-write route
//   frame.write_buffer(vertices, 0, data, size);  // bytes copied into the slot's mapping now
//   frame.write_texture(tile, pixels, size);      // rows repacked to 256-byte bytesPerRow
//   frame.finish(encoder);                        // unmap (flush), record copies; slot InFlight
//   wgpuQueueSubmit(queue, 1, &commands);
//   frame.submitted();                            // request the re-map; its callback → Ready
//
// wgpu attaches the re-map to the encoder (map_buffer_on_submit); the WebGPU C API has no such
// call, so the caller says when the encoder was submitted. A frame destroyed after finish() but
// without submitted() is the seed's dropped encoder: the slot becomes Abandoned and is replaced
// the next time it is picked. A failed re-map (destroyed buffer, lost device) leaves it Failed.
//
// Threading: the device's thread (the browser's main thread). The map callback runs there too,
// from the event loop, so a slot becomes Ready only after control has returned to the browser.
#pragma once

#include <webgpu/webgpu.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "staging/core/expected.hpp"
#include "staging/core/slot_fence.hpp"
#include "staging/core/slot_lease.hpp"
#include "staging/core/staging_ring.hpp"
#include "staging/webgpu/copy_layout.hpp"

namespace staging::webgpu {

class StagingRing;

/// Which way a frame's (or one upload's) bytes travel.
enum class Route : uint8_t {
  /// Written into a ring slot, copied by commands recorded into the frame's encoder.
  Slot,
  /// wgpuQueueWriteBuffer / wgpuQueueWriteTexture: the queue's own staging, at call time.
  QueueWrite,
};

/// Why an upload was not made. Nothing was written or recorded.
enum class UploadError : uint8_t {
  /// size == 0, or a texture region with a zero extent.
  ZeroSize,
  /// A buffer upload's size or destination offset is not a multiple of 4 (COPY_BUFFER_ALIGNMENT;
  /// neither route can copy it).
  Unaligned,
  /// The destination buffer or texture is null.
  NullDestination,
  /// A texture upload's data size is not the region's tightly packed size, or its layout
  /// overflows.
  BadLayout,
  /// reserve_buffer() on a frame without a slot (Route::QueueWrite).
  NoSlot,
  /// reserve_buffer(): the slot has no room left for it (write_buffer() would take the other
  /// route instead).
  DoesNotFit,
  /// The frame is finished, submitted, or moved from.
  Closed,
  /// The upload is larger than the C API can pass (size_t: 4 GiB on wasm32).
  TooLarge,
};

/// Why finish() or submitted() was refused. The frame is unchanged.
enum class FrameError : uint8_t {
  /// finish(): already finished, or moved from. submitted(): not finished yet, already
  /// submitted, or moved from.
  WrongState,
  /// finish() of a slot frame with copies to record was given a null encoder.
  NullEncoder,
};

/// The value's name, e.g. "QueueWrite". Never null; "?" for values outside the enum.
[[nodiscard]] std::string_view to_string(Route route) noexcept;
[[nodiscard]] std::string_view to_string(UploadError error) noexcept;
[[nodiscard]] std::string_view to_string(FrameError error) noexcept;

/// Where a texture upload goes: seed-style destination plus the region's extent and texel block.
struct TextureUpload {
  WGPUTexture texture = nullptr;  ///< the destination (COPY_DST usage; not null)
  uint32_t mip_level = 0;         ///< the mip level written
  WGPUOrigin3D origin{0, 0, 0};   ///< where the region starts, in texels (block-aligned)
  WGPUTextureAspect aspect = WGPUTextureAspect_All;  ///< the aspect written
  /// The region in texels; depthOrArrayLayers counts images (layers or depth slices).
  WGPUExtent3D extent{0, 0, 1};
  /// The format's texel block (4 bytes, 1×1 for rgba8unorm).
  TexelBlock block{};
};

/// The slot layout of a texture upload (the core's engine under COPY_LIMITS; extent.
/// depthOrArrayLayers counts images). Errors: Empty, Overflow. Pure; safe from any thread.
[[nodiscard]] Expected<TextureLayout, LayoutError> texture_layout(
    const TextureUpload& region) noexcept;

/// One frame's uploads. Made by StagingRing::begin() / begin_frame().
///
/// Ownership: move-only; references its StagingRing, which must outlive it. Holds a reference to
/// every destination it recorded a copy to, until finish() (or destruction) releases them.
/// States: Recording → finish() → Finished → submitted() → Submitted. Destroying a frame (or
/// assigning another over it) does, by state:
///   - Recording, nothing placed in the slot: the slot is Ready again at once;
///   - Recording with bytes placed (ranges of the slot are mapped out): the slot is unmapped and
///     re-mapped without any copy — InFlight until the map callback makes it Ready;
///   - Finished, not submitted: the seed's dropped encoder — the slot is Abandoned and its buffer
///     replaced on the next pick (the caller must then not submit that encoder either);
///   - Submitted, or on the queue-write route: nothing to do.
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

  /// Route::Slot when the frame holds a slot, Route::QueueWrite otherwise (and once moved from).
  [[nodiscard]] Route route() const noexcept {
    return slot_buffer_ ? Route::Slot : Route::QueueWrite;
  }
  /// Why begin_frame() gave this frame no slot; none for a slot frame.
  [[nodiscard]] std::optional<Refusal> refusal() const noexcept { return refusal_; }
  /// The slot index (meaningful for Route::Slot only).
  [[nodiscard]] std::size_t slot() const noexcept { return slot_; }
  /// Slot bytes used so far (alignment padding included); 0 on the queue-write route.
  /// Meaningless after finish() or once moved from.
  [[nodiscard]] uint64_t slot_bytes_used() const noexcept { return lease_.cursor(); }

  /// Uploads `size` bytes at `data` to `dst` at `dst_offset`. Slot route: the bytes are copied
  /// into the slot now (placed at an 8-byte boundary) and a copy is recorded at finish(). When
  /// the slot has no room left, or on the queue-write route: wgpuQueueWriteBuffer now (ordered
  /// before the next submission; so a queue write and a slot copy to the *same* bytes in one
  /// frame land in the order queue write, then copy). Returns the route taken. Precondition:
  /// `data` points to `size` readable bytes (they are copied before this returns).
  /// Errors: Closed, ZeroSize, Unaligned (size or dst_offset % 4), TooLarge, NullDestination.
  Expected<Route, UploadError> write_buffer(WGPUBuffer dst, uint64_t dst_offset, const void* data,
                                            uint64_t size);

  /// Uploads a texture region from tightly packed rows (`size` must equal the region's packed
  /// size: ceil(w/bw)*bytes per row, ceil(h/bh) rows, extent.depthOrArrayLayers images). Slot
  /// route: rows repacked into the slot with bytesPerRow padded to 256, copy recorded at finish().
  /// Otherwise (or when it does not fit): wgpuQueueWriteTexture with the packed rows.
  /// Errors: ZeroSize, NullDestination, BadLayout, TooLarge, Closed.
  Expected<Route, UploadError> write_texture(const TextureUpload& dst, const void* data,
                                             uint64_t size);

  /// Zero-copy form of write_buffer(): places `size` bytes for `dst` at `dst_offset` and returns
  /// the slot's mapped bytes to fill before finish() (they are flushed there). The span's
  /// contents are undefined until written. Errors: ZeroSize, Unaligned, NullDestination, NoSlot
  /// (queue-write route), DoesNotFit, TooLarge, Closed.
  Expected<std::span<std::byte>, UploadError> reserve_buffer(WGPUBuffer dst, uint64_t dst_offset,
                                                             uint64_t size);

  /// Ends recording. Slot route: unmaps the slot (Emscripten flushes the mapped ranges' heap
  /// mirrors into the buffer here) and records every copy into `encoder`, in upload order; the
  /// slot becomes InFlight. A slot frame that placed nothing in its slot (no uploads, or all by
  /// queue write) gives the slot back (Ready) and records nothing. Queue-write route: records
  /// nothing. `encoder` may be null when nothing is recorded.
  /// Errors: WrongState, NullEncoder.
  Expected<void, FrameError> finish(WGPUCommandEncoder encoder);

  /// Tells the frame that the command buffer of the encoder given to finish() was submitted
  /// (wgpuQueueSubmit returned). Requests the slot's re-map; WebGPU completes it only after that
  /// submission has finished reading the slot, and its callback makes the slot Ready (or Failed
  /// when the mapping fails). Calling this without having submitted makes that submission invalid
  /// (its slot is mapped again). Errors: WrongState.
  Expected<void, FrameError> submitted();

  /// True after finish() (and after submitted(), and once moved from).
  [[nodiscard]] bool finished() const noexcept { return state_ != State::Recording; }

 private:
  friend class StagingRing;
  enum class State : uint8_t { Recording, Finished, Submitted, Closed };
  struct Copy {
    uint64_t src_offset = 0;
    WGPUBuffer dst_buffer = nullptr;  // buffer copy when set, texture copy otherwise
    uint64_t dst_offset = 0;
    uint64_t size = 0;
    TextureUpload texture{};
    uint32_t bytes_per_row = 0;
    uint32_t rows_per_image = 0;
  };

  // Queue-write route frame.
  StagingFrame(StagingRing& ring, Refusal refusal) noexcept;
  // Slot frame.
  StagingFrame(StagingRing& ring, SlotLease lease, WGPUBuffer slot_buffer,
               uint64_t slot_capacity) noexcept;

  // Places `size` (a multiple of 4) bytes at `alignment` and maps them; null when they do not fit.
  std::byte* place(uint64_t size, uint64_t alignment) noexcept;
  void release_destinations() noexcept;
  void abandon_or_release() noexcept;
  void request_map(FenceToken token) noexcept;
  void close() noexcept;

  StagingRing* ring_ = nullptr;
  State state_ = State::Closed;
  std::optional<Refusal> refusal_;
  SlotLease lease_;
  FenceToken token_;
  WGPUBuffer slot_buffer_ = nullptr;  // not owned: the ring's slot buffer
  uint64_t slot_capacity_ = 0;
  std::size_t slot_ = 0;
  bool mapped_any_ = false;  // a range of the slot was handed out by GetMappedRange
  std::vector<Copy> copies_;
};

}  // namespace staging::webgpu
