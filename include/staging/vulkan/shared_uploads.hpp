// SharedUploads: part of one StagingFrame's staging memory, written by several threads at once.
//
// The frame's owner carves the shared space out of the frame (StagingFrame::share(bytes): through
// the ring like any upload, either strategy) and hands the returned handle to its workers. Each
// worker joins (a SharedWriter), places buffer and image uploads — the same descriptions the frame
// takes, checked the same way — and writes their bytes; placing is a private bump inside the
// writer's own block of the shared space (shared state is touched once per block; join()'s
// block_bytes, 64 KiB by default). The owner seals the space, or finish()
// does; finish() then records one copy per placement, in staging-offset order, with the frame's
// own uploads. Size the space for the uploads plus about one block per writer: a block another
// writer placed after is not reused when its writer leaves (stranded_bytes()).
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
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <span>
#include <utility>

#include "staging/core/expected.hpp"
#include "staging/detail/core/shared_frame.hpp"
#include "staging/vulkan/frame.hpp"

namespace staging::vulkan {

namespace detail {
struct SharedState;
/// What one shared placement records at finish() (the SharedFrame payload).
struct SharedCopy {
  VkBuffer buffer = VK_NULL_HANDLE;  // buffer destination (or null: an image)
  uint64_t dst_offset = 0;
  VkImage image = VK_NULL_HANDLE;
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageLayout new_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageAspectFlags barrier_aspect = 0;
  VkBufferImageCopy region{};  // bufferOffset: filled in at finish()
};
}  // namespace detail

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
  /// may be padded: see ImageSpan). Errors: as the buffer reserve(), plus UnsupportedFormat,
  /// BadAspect, Misaligned.
  Expected<ImageSpan, UploadError> reserve(const ImageRegion& region);
  /// reserve() of a region of a described image, checked as StagingFrame's described upload().
  Expected<ImageSpan, UploadError> reserve(const ImageDestination& dst, const ImageRegion& region);
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
  /// space at a time and then places into privately. A block grows in place while no other
  /// writer took bytes after it; near the space's end blocks shrink (to the free bytes /
  /// (2 × writers inside)); an upload larger than a block takes a block of its own size. 0: every
  /// upload is placed from the shared cursor (one atomic operation each, no unused block ends).
  /// Errors: Inactive (a handle to nothing), Sealed (the owner sealed the space, or the frame was
  /// finished). Lock-free; any thread.
  Expected<SharedWriter, UploadError> join(
      uint64_t block_bytes = kDefaultBlockBytes) const noexcept;
  /// Seals the space: later join() calls answer Sealed; writers inside may finish their uploads.
  /// Returns the writers inside now (0: every upload is final). Owner thread.
  uint32_t seal() const noexcept;
  /// Waits up to `timeout` for a sealed space's writers to leave; true when none is inside.
  /// Any thread.
  [[nodiscard]] bool wait_drained(Duration timeout) const;
  /// Bytes of the shared space (share()'s argument).
  [[nodiscard]] uint64_t capacity() const noexcept;
  /// Bytes placed so far, alignment padding included (a snapshot while writers place).
  [[nodiscard]] uint64_t used_bytes() const noexcept;
  /// Bytes of used_bytes() no upload holds: the unused ends of blocks another writer had placed
  /// after (alignment padding not counted). Exact once every writer has left.
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
