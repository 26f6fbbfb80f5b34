// StagingFrame: one frame's uploads — bytes written into staging memory, and the copy commands
// that move them to their destinations, recorded into the caller's own command buffer at
// finish(). The ring never submits the caller's work.
//
//   StagingFrame frame = ring.begin(cmd).value();                // a slot (or the fallback route)
//   frame.upload(vertex_buffer, 0, vertices).value();            // copy from your memory
//   auto span = frame.reserve(uniform_buffer, 256, 64).value();  // or write in place
//   frame.upload(texture, ImageRegion{...}, texels).value();     // a texture region
//   VkSemaphoreSubmitInfo signal = frame.finish().value();       // the copies and one barrier
//   // ... and `signal` among your vkQueueSubmit2's pSignalSemaphoreInfos.
//
// (`.value()` stands for your error handling: every upload answers an Expected. Here
// `vertex_buffer` and `uniform_buffer` are BufferDestinations, `texture` an ImageDestination.)
//
// Describe each destination once — BufferDestination{buffer, size}, ImageDestination{image, format,
// extent, mips, layers} — and upload through the description: every upload is then checked to lie
// inside it (check_destination), and one that does not is refused with a named UploadError before
// anything is placed or recorded. The overloads taking a bare VkBuffer or an ImageRegion alone
// cannot check what they are not told.
//
// Everything placed in a frame is written into staging memory at once (or kept for
// vkCmdUpdateBuffer), but nothing is recorded before finish(): a frame dropped unfinished costs
// nothing on the GPU, and its slot (or its byte-ring reservations) is reused at once.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "staging/core/errors.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/core/stream.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/shared_frame.hpp"
#include "staging/detail/vulkan/shared_copy.hpp"

namespace staging::vulkan {

namespace detail {
struct RingImpl;
struct FrameState;
}  // namespace detail

class SharedUploads;

/// "The GPU is done up to here", the one point type of the Vulkan side: a value on a timeline
/// semaphore. A frame's (StagingFrame::finish(), a shared frame's too): once the semaphore's
/// value is >= `value`, the GPU has finished every copy of the frame and the ring reclaims its
/// staging memory (I3). A streamed upload's (Streamer::point()): the destination holds the
/// upload. An in-place piece's (Streamer::commit()): that piece's copy is done (the whole
/// upload's at its last piece). Ask reached() whether the device is there, or wait() for it
/// (staging/vulkan/ring.hpp). A default point (no semaphore, value 0) is always reached.
struct RetirementPoint {
  VkSemaphore semaphore = VK_NULL_HANDLE;  ///< a timeline semaphore (the ring's or the caller's)
  uint64_t value = 0;                      ///< the value the frame's submission signals

  /// The VkSemaphoreSubmitInfo of this point at `stages`, for a submission that signals it
  /// (VkSubmitInfo2::pSignalSemaphoreInfos: `stages` is the signal's first synchronization scope)
  /// or waits for it (pWaitSemaphoreInfos: the stages that wait). The default (ALL_COMMANDS)
  /// covers every command of the batch, so it is right wherever the frame's copies were recorded.
  [[nodiscard]] VkSemaphoreSubmitInfo submit_info(
      VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT) const noexcept;
  /// The point as what a submission signals: submit_info() with its default stages, so that
  /// `VkSemaphoreSubmitInfo signal = frame.finish().value();` reads as it does. (As a wait, the
  /// same value waits for the point before every command of the batch.)
  operator VkSemaphoreSubmitInfo() const noexcept { return submit_info(); }

  /// Same semaphore and value.
  friend bool operator==(const RetirementPoint&, const RetirementPoint&) = default;
};

/// Who uses the destinations around the frame's copies: finish() records one barrier from the
/// copies to `stages`/`access` (the consumers), and — only when `prior_stages` is non-zero or an
/// image needs a layout transition — one barrier before the copies, from `prior_stages`/
/// `prior_access` (earlier commands that read or wrote the destinations: write-after-read and
/// write-after-write hazards) to the copies.
struct Visibility {
  /// The stages and accesses that consume the uploaded data after the copies. The default is
  /// coarse but always correct.
  VkPipelineStageFlags2 stages = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
  /// The consumers' accesses (the barrier's dstAccessMask).
  VkAccessFlags2 access = VK_ACCESS_2_MEMORY_READ_BIT;
  /// Earlier users of the destinations the copies must wait for; 0 when the destinations are
  /// fresh or were last used by commands already ordered before this command buffer's copies.
  VkPipelineStageFlags2 prior_stages = 0;
  /// Those earlier users' accesses (ignored when prior_stages is 0).
  VkAccessFlags2 prior_access = 0;
};

/// A region of one mip level (and one or more array layers) of an image, and the layouts around
/// the upload. The data for it is tightly packed: rows of ceil(width / block width) texel blocks,
/// ceil(height / block height) rows per depth slice, `depth` slices per layer, then layers.
struct ImageRegion {
  /// The destination image (created with TRANSFER_DST usage; not null).
  VkImage image = VK_NULL_HANDLE;
  /// The image's format: a non-planar format with a known texel block (docs/vulkan.md lists the
  /// families); others answer UnsupportedFormat.
  VkFormat format = VK_FORMAT_UNDEFINED;
  /// One aspect (0: the format's only aspect; combined depth/stencil formats must name DEPTH or
  /// STENCIL, uploaded separately).
  VkImageAspectFlags aspect = 0;
  /// The mip level written.
  uint32_t mip_level = 0;
  /// The first array layer written.
  uint32_t base_layer = 0;
  /// Array layers written (>= 1).
  uint32_t layer_count = 1;
  /// In texels; x/y/z multiples of the format's block extent.
  VkOffset3D offset{0, 0, 0};
  /// In texels; for block-compressed formats a multiple of the block extent unless the region
  /// reaches the mip level's edge (the usual Vulkan rule, checked by the validation layer).
  VkExtent3D extent{0, 0, 1};
  /// The subresources' layout before the frame's copies. UNDEFINED discards their contents (right
  /// for a texture being filled; wrong for a partial update of one already in use). A
  /// depth/stencil image is transitioned with both aspects together.
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  /// The layout finish() leaves the subresources in (not UNDEFINED or PREINITIALIZED: an
  /// upload asking for either is refused with InvalidArgument).
  VkImageLayout new_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
};

/// A destination buffer, described once (the values it was created with): uploads through it
/// are checked to lie inside it. Plain data; describe each buffer once and keep the value.
struct BufferDestination {
  /// The buffer (created with TRANSFER_DST usage; not null).
  VkBuffer buffer = VK_NULL_HANDLE;
  /// Its VkBufferCreateInfo::size in bytes (> 0).
  uint64_t size = 0;
  /// Its VkBufferCreateInfo::sharingMode. Read by the Streamer only (which copies on a queue of
  /// its own): EXCLUSIVE with two different families moves ownership to the consumer's family;
  /// a frame records on the consumer's own queue and needs no transfer.
  VkSharingMode sharing = VK_SHARING_MODE_EXCLUSIVE;
};

/// A destination image, described once (the values of its VkImageCreateInfo): regions uploaded
/// through it are checked against its format, extent, mip levels and array layers. Plain data.
struct ImageDestination {
  /// The image (created with TRANSFER_DST usage; not null).
  VkImage image = VK_NULL_HANDLE;
  /// Its format (not UNDEFINED).
  VkFormat format = VK_FORMAT_UNDEFINED;
  /// Mip level 0's extent in texels (each > 0; depth 1 for 1D and 2D images).
  VkExtent3D extent{0, 0, 1};
  /// Mip levels (1 ..= floor(log2(largest dimension)) + 1).
  uint32_t mip_levels = 1;
  /// Array layers (>= 1).
  uint32_t array_layers = 1;
  /// Its VkImageCreateInfo::sharingMode (see BufferDestination::sharing).
  VkSharingMode sharing = VK_SHARING_MODE_EXCLUSIVE;
};

/// Checks that bytes [offset, offset + size) lie inside `target`. Pure; safe from any thread.
/// Errors: NullDestination, InvalidDestination, ZeroSize, Overflow, OutOfBounds.
[[nodiscard]] Expected<void, UploadError> check_destination(const BufferDestination& target,
                                                            uint64_t offset,
                                                            uint64_t size) noexcept;

/// Checks `region` against the described destination `target`: the same image (a null region.image
/// means the destination's) and the same format (UNDEFINED means the destination's), a known format
/// and aspect, a non-empty extent, a mip level and layers the image has, the box inside the mip
/// level's extent, its offset a multiple of the texel block and its extent too unless it reaches
/// the mip level's edge (the Vulkan rule for block-compressed formats). Pure; safe from any thread.
/// Errors, in this order: NullDestination, InvalidDestination, DestinationMismatch, FormatMismatch,
/// UnsupportedFormat, BadAspect, ZeroSize, NoSuchSubresource, OutOfBounds, Misaligned.
[[nodiscard]] Expected<void, UploadError> check_destination(const ImageDestination& target,
                                                            const ImageRegion& region) noexcept;

/// One frame's uploads, from Ring::begin() to finish(). Move-only; assigning to an open frame
/// drops it first (as the destructor does).
///
/// Ownership: refers to the Ring that made it, which must outlive it. Destroying an unfinished
/// frame drops its uploads: nothing was recorded, its slot (or its reservations) is reused at once
/// and its one-off buffers are freed. Threading: not synchronised; used on the ring's thread (see
/// Ring), one call at a time. Spans returned by reserve() stay valid until finish() or the frame's
/// destruction; write them before finish() (finish flushes non-coherent memory).
class StagingFrame {
 public:
  /// An inactive frame (every call answers Inactive).
  StagingFrame() noexcept;
  /// Takes `other`'s frame; `other` is left inactive.
  StagingFrame(StagingFrame&& other) noexcept;
  /// Drops an open frame held here (as the destructor does), then takes `other`'s.
  StagingFrame& operator=(StagingFrame&& other) noexcept;
  StagingFrame(const StagingFrame&) = delete;
  StagingFrame& operator=(const StagingFrame&) = delete;
  /// Drops an unfinished frame (see the class comment).
  ~StagingFrame();

  /// Copies `data` into staging memory now; at finish() it is copied to bytes [dst_offset,
  /// dst_offset + data.size()) of `dst` (created with TRANSFER_DST usage). Unchecked against the
  /// buffer's size, which a VkBuffer does not tell: a range past its end is recorded and the
  /// driver writes out of bounds. Prefer the BufferDestination overload. Any offset and size;
  /// the staging offset is aligned to optimalBufferCopyOffsetAlignment. When the frame's slot is
  /// full the upload takes the fallback route (counted in Stats::ring_full_fallbacks), whatever
  /// the policy; when the byte ring refuses it, it does so under the Fallback policy and answers
  /// RingFull under the others. Errors: Inactive, NullDestination, ZeroSize, Overflow,
  /// OverlapsEarlierUpload, FallbackCapReached, TooLarge, AllocationFailed, RingFull.
  Expected<void, UploadError> upload(VkBuffer dst, uint64_t dst_offset,
                                     std::span<const std::byte> data);
  /// upload() from a pointer and a size.
  Expected<void, UploadError> upload(VkBuffer dst, uint64_t dst_offset, const void* data,
                                     uint64_t size) {
    return upload(dst, dst_offset, std::span(static_cast<const std::byte*>(data), size));
  }
  /// Reserves `size` bytes for `dst` at `dst_offset` and returns them to write in place; they are
  /// copied at finish(). The span's contents are unspecified until written: write all of it.
  /// Errors as upload().
  Expected<std::span<std::byte>, UploadError> reserve(VkBuffer dst, uint64_t dst_offset,
                                                      uint64_t size);

  /// upload() to a described buffer: the range is first checked to lie inside `dst`
  /// (check_destination). The way in for buffers whose size the caller knows. Errors: as
  /// upload(), plus InvalidDestination and OutOfBounds (nothing placed or recorded).
  Expected<void, UploadError> upload(const BufferDestination& dst, uint64_t dst_offset,
                                     std::span<const std::byte> data);
  /// upload() to a described buffer from a pointer and a size.
  Expected<void, UploadError> upload(const BufferDestination& dst, uint64_t dst_offset,
                                     const void* data, uint64_t size) {
    return upload(dst, dst_offset, std::span(static_cast<const std::byte*>(data), size));
  }
  /// reserve() in a described buffer, checked as the described upload().
  Expected<std::span<std::byte>, UploadError> reserve(const BufferDestination& dst,
                                                      uint64_t dst_offset, uint64_t size);

  /// Copies `texels` (tightly packed, see ImageRegion) into staging memory now; at finish() it is
  /// copied into `region` with vkCmdCopyBufferToImage, with the layout transitions the region
  /// asks for. Unchecked against the image (its extent, mips, layers and format are unknown
  /// here): prefer the ImageDestination overload. The staging offset is aligned to lcm(texel block
  /// size (4 for depth/stencil), 4, optimalBufferCopyOffsetAlignment): valid on any queue. Errors: as upload(), plus
  /// UnsupportedFormat, BadAspect, Misaligned, SizeMismatch, ConflictingLayouts, InvalidArgument
  /// (region.new_layout UNDEFINED or PREINITIALIZED; nothing placed or recorded).
  Expected<void, UploadError> upload(const ImageRegion& region, std::span<const std::byte> texels);
  /// Reserves staging memory for `region` and returns where to write its texel blocks in place
  /// (rows may be padded: see InPlacePiece). Errors as the image upload() (no SizeMismatch).
  Expected<InPlacePiece, UploadError> reserve(const ImageRegion& region);
  /// The image upload() into a described image: `region` is first checked against `dst`
  /// (check_destination; its image and format may be left null and UNDEFINED to take the
  /// target's). The way in for images: the unchecked overload cannot see a region past the
  /// image's extent, mips or layers, or a format that differs from the image's, and the driver
  /// then writes out of bounds. Errors: as the image upload(), plus InvalidDestination,
  /// OutOfBounds, NoSuchSubresource, FormatMismatch, DestinationMismatch (nothing placed or
  /// recorded).
  Expected<void, UploadError> upload(const ImageDestination& dst, const ImageRegion& region,
                                     std::span<const std::byte> texels);
  /// reserve() of an image region in a described image, checked as the described upload().
  Expected<InPlacePiece, UploadError> reserve(const ImageDestination& dst,
                                              const ImageRegion& region);

  /// Carves `bytes` of staging memory out of the frame for several threads to upload into at once
  /// (see SharedUploads, below): placed like any upload (the ring under either
  /// strategy; on the fallback route, or when the ring has no room, one one-off buffer), so the
  /// frame must have room for it. Returns the handle to hand to the writers; one shared space per
  /// frame. finish() seals the space, records one copy per shared upload with the frame's own, and
  /// answers WritersActive while a writer is still inside. Every writer must leave before the
  /// frame is finished, dropped or destroyed, and the handle must not be used after that.
  /// Owner thread. Errors: Inactive, ZeroSize, AlreadyShared, and those of placing `bytes` as
  /// upload() (Overflow, FallbackCapReached, TooLarge, AllocationFailed, RingFull).
  Expected<SharedUploads, UploadError> share(uint64_t bytes);

  /// Records the frame into its command buffer (which must be recording, outside a render pass):
  /// the copies, batched into one command per source and destination, then one pipeline barrier
  /// making them visible to `visibility`'s consumers (with the image layout transitions asked
  /// for), preceded by one barrier only when prior users are declared or a layout must change
  /// before the copies. Returns the retirement point the caller's submission must signal: by
  /// default a new value of the ring's timeline semaphore (signal ring points in the order their
  /// frames finished); `external` instead names a point on the caller's own timeline that its
  /// submission signals. Consumes the frame on success. With a shared space (share()) it is
  /// sealed first and its uploads are recorded in staging-offset order among the frame's own.
  /// Errors: Inactive, NullSemaphore, PointAlreadyReached, DeviceLost, WritersActive (writers
  /// still inside the shared space: call again once they left), SharedConflict, FlushFailed
  /// (the frame is then left open, nothing recorded; on DeviceLost the ring has also failed every
  /// frame in flight, as Ring::poll()
  /// does).
  Expected<RetirementPoint, FinishError> finish(const Visibility& visibility = {},
                                                std::optional<RetirementPoint> external = {});

  /// True between begin() and finish() (or destruction, or being moved from).
  [[nodiscard]] bool active() const noexcept { return state_ != nullptr; }
  /// Which route the frame's uploads take (Ring unless begin() fell back; Ring when inactive).
  [[nodiscard]] Route route() const noexcept;
  /// Why the ring gave this frame no slot (set when route() is Fallback because of a refusal).
  [[nodiscard]] std::optional<UploadError> refusal() const noexcept;
  /// The frame's id (1, 2, ... per ring; the id staging observers see). 0 when inactive.
  [[nodiscard]] uint64_t id() const noexcept;
  /// Bytes this frame has placed in the ring's staging memory so far (alignment padding excluded).
  [[nodiscard]] uint64_t staged_bytes() const noexcept;

 private:
  friend struct detail::RingImpl;
  StagingFrame(detail::RingImpl* ring, std::unique_ptr<detail::FrameState> state) noexcept;
  void drop() noexcept;

  detail::RingImpl* ring_ = nullptr;
  std::unique_ptr<detail::FrameState> state_;
};

// ---- The shared space: StagingFrame::share()'s handle, and its writers ----
//
// SharedUploads: part of one StagingFrame's staging memory, written by several threads at once.
//
// The frame's owner carves the shared space out of the frame (StagingFrame::share(bytes): through
// the ring like any upload, either strategy) and hands the returned handle to its workers. Each
// worker joins (a SharedWriter), places buffer and image uploads — the same descriptions the frame
// takes, checked the same way — and writes their bytes; placing is a private bump inside the
// writer's own block of the shared space (shared state is touched once per block; join()'s
// block_bytes, 64 KiB by default). A thread's blocks come first from its own lane of the space,
// sized by what its writers used the previous time this frame state shared a space, so that a
// thread writes the same offsets of the space frame after frame (the same staging bytes, still in
// its core's cache, when the space lies where it lay then); then from the rest of the space. The
// owner seals the space, or finish() does; finish() then records one copy per placement, in
// staging-offset order, with the frame's own uploads. Size the space for the uploads plus about
// one block per writer: a block another writer placed after is not reused when its writer leaves
// (stranded_bytes()). Lanes are laid out only when the space also has room for the largest upload
// of the previous time besides them; a space filled to its end has none.
//
//   StagingFrame frame = ring.begin(cmd, 8 << 20).value();
//   SharedUploads shared = frame.share(4 << 20).value();             // owner
//   // on any thread:
//   SharedWriter w = shared.join().value();
//   if (!w.upload(mesh, 0, vertices)) { /* DoesNotFit: hand it to the owner */ }
//   w.leave();
//   // owner, once the workers are done (or while they write: finish() waits for none)
//   shared.seal();
//   RetirementPoint done = frame.finish().value();                   // WritersActive: call again
//
//   shared space [ w3:buf | w0:img(2,1) | w5:buf | w0:buf ... |     free     ]
//
// When the shared space is full a writer's upload is refused with DoesNotFit (nothing placed);
// the writer may hand that upload to the owner thread, which uploads it through the frame itself
// (StagingFrame::upload: the ring, or the fallback route). Overlaps between shared uploads (or
// with the frame's own) and conflicting layouts for one mip level cannot be checked while
// threads place concurrently: finish() checks them and answers SharedConflict (the frame cannot
// be recorded; drop it).
/// One thread's membership of a frame's shared space (SharedUploads::join()). Move-only; the
/// destructor leaves. Used by one thread at a time (any thread); must leave before the frame is
/// finished or destroyed. Every upload is written into staging memory at once and recorded at
/// the frame's finish(); spans returned by reserve() must be written before leave().
class SharedWriter {
 public:
  /// A writer of no shared space (every upload answers Inactive).
  SharedWriter() noexcept = default;
  /// Takes `other`'s membership; `other` is left a writer of nothing.
  SharedWriter(SharedWriter&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), writer_(std::move(other.writer_)) {}
  /// Leaves (see leave()), then takes `other`'s membership.
  SharedWriter& operator=(SharedWriter&& other) noexcept {
    if (this != &other) {
      leave();
      state_ = std::exchange(other.state_, nullptr);
      writer_ = std::move(other.writer_);
    }
    return *this;
  }
  SharedWriter(const SharedWriter&) = delete;
  SharedWriter& operator=(const SharedWriter&) = delete;
  /// Leaves (see leave()).
  ~SharedWriter() = default;

  /// Reserves `size` bytes of the shared space for bytes [dst_offset, dst_offset + size) of `dst`
  /// and returns them to write in place (all of them, before leave()). Unchecked against the
  /// buffer's size (prefer the BufferDestination overload). Errors: Inactive, NullDestination,
  /// ZeroSize, Overflow, DoesNotFit (the shared space is full: nothing placed; a smaller upload
  /// may still fit), AllocationFailed (the placement log could not grow). Lock-free but for the
  /// log's growth.
  Expected<std::span<std::byte>, UploadError> reserve(VkBuffer dst, uint64_t dst_offset,
                                                      uint64_t size);
  /// reserve() in a described buffer: the range is first checked (check_destination). Errors: as
  /// reserve(), plus InvalidDestination and OutOfBounds.
  Expected<std::span<std::byte>, UploadError> reserve(const BufferDestination& dst,
                                                      uint64_t dst_offset, uint64_t size);
  /// Copies `data` into the shared space for bytes [dst_offset, dst_offset + data.size()) of
  /// `dst`. Errors as reserve().
  Expected<void, UploadError> upload(VkBuffer dst, uint64_t dst_offset,
                                     std::span<const std::byte> data);
  /// upload() to a described buffer, checked as the described reserve().
  Expected<void, UploadError> upload(const BufferDestination& dst, uint64_t dst_offset,
                                     std::span<const std::byte> data);

  /// Reserves the shared space for `region` and returns where to write its texel blocks (rows
  /// may be padded: see InPlacePiece). Errors: as the buffer reserve(), plus UnsupportedFormat,
  /// BadAspect, Misaligned, InvalidArgument (new_layout UNDEFINED or PREINITIALIZED).
  Expected<InPlacePiece, UploadError> reserve(const ImageRegion& region);
  /// reserve() of a region of a described image, checked as StagingFrame's described upload().
  Expected<InPlacePiece, UploadError> reserve(const ImageDestination& dst,
                                              const ImageRegion& region);
  /// Copies `texels` (tightly packed, see ImageRegion) into the shared space for `region`.
  /// Errors: as the image reserve(), plus SizeMismatch.
  Expected<void, UploadError> upload(const ImageRegion& region, std::span<const std::byte> texels);
  /// upload() into a described image, checked as StagingFrame's described upload().
  Expected<void, UploadError> upload(const ImageDestination& dst, const ImageRegion& region,
                                     std::span<const std::byte> texels);

  /// Leaves the shared space: this writer's uploads are final (their bytes must be written).
  /// Later uploads answer Inactive. Idempotent.
  void leave() noexcept {
    (void)writer_.leave();
    state_ = nullptr;
  }
  /// True between join() and leave().
  [[nodiscard]] bool active() const noexcept { return state_ != nullptr; }

 private:
  friend class SharedUploads;
  SharedWriter(const detail::SharedState* state,
               SharedFrame<detail::SharedCopy>::Writer writer) noexcept
      : state_(state), writer_(std::move(writer)) {}
  Expected<std::span<std::byte>, UploadError> place(uint64_t size, uint64_t alignment,
                                                    const detail::SharedCopy& copy);

  const detail::SharedState* state_ = nullptr;
  SharedFrame<detail::SharedCopy>::Writer writer_;
};

/// A handle to a frame's shared space (StagingFrame::share()). Copyable; every copy names the same
/// space. Must not be used after its frame is finished, dropped or destroyed (the space is reused
/// by a later frame). Threading: join(), wait_drained() and the queries from any thread; seal()
/// on the frame's owner thread.
class SharedUploads {
 public:
  /// A handle to nothing (join() answers Inactive).
  SharedUploads() noexcept = default;

  /// A writer's block by default (see join()).
  static constexpr uint64_t kDefaultBlockBytes = uint64_t{64} << 10;

  /// Joins as a writer (see SharedWriter). `block_bytes`: what the writer takes from the shared
  /// space at a time and then places into privately: from its thread's lane of the space (sized
  /// by what the thread's writers used in the frame state's previous shared space), then from
  /// the rest, then from another lane's unused end. A block grows in place while no other writer
  /// took bytes after it; near the space's end blocks shrink (to the free bytes / (2 × writers
  /// inside)); an upload larger than a block takes a block of its own size. 0: every upload is
  /// placed from the shared cursor (one atomic operation each, no unused block ends; no lane).
  /// Errors: Inactive (a handle to nothing), Sealed (the owner sealed the space, or the frame was
  /// finished). Lock-free; any thread.
  Expected<SharedWriter, UploadError> join(
      uint64_t block_bytes = kDefaultBlockBytes) const noexcept;
  /// Seals the space: later join() calls answer Sealed; writers inside may finish their uploads.
  /// Returns the writers inside now (0: every upload is final). Owner thread.
  uint32_t seal() const noexcept;
  /// Waits up to `timeout` for a sealed space's writers to leave; true when none is inside.
  /// False at once for a space not sealed yet (seal() first); true for a default handle; a
  /// timeout of 0 or less looks once. Any thread.
  [[nodiscard]] bool wait_drained(Duration timeout) const;
  /// Bytes of the shared space (share()'s argument).
  [[nodiscard]] uint64_t capacity() const noexcept;
  /// Bytes placed so far, alignment padding included, and the threads' lanes whole from the
  /// start (a snapshot while writers place).
  [[nodiscard]] uint64_t used_bytes() const noexcept;
  /// Bytes of used_bytes() no upload holds: the unused ends of blocks another writer had placed
  /// after, and of the lanes (alignment padding not counted). Exact once every writer has left.
  [[nodiscard]] uint64_t stranded_bytes() const noexcept;
  /// Writers inside now (a snapshot).
  [[nodiscard]] uint32_t writers() const noexcept;
  /// True once sealed (by seal() or the frame's finish()).
  [[nodiscard]] bool sealed() const noexcept;

 private:
  friend class StagingFrame;
  explicit SharedUploads(detail::SharedState* state) noexcept : state_(state) {}
  detail::SharedState* state_ = nullptr;
};

}  // namespace staging::vulkan
