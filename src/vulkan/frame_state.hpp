// Internal: what an open frame has placed and will record — copies, vkCmdUpdateBuffer data,
// one-off buffers, and the destinations written (for overlap checks and barriers). The frame
// recorder's state: it knows routes, never which strategy placed the ring route's bytes. Pooled
// by the ring (clear() keeps every vector's capacity). Not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/core/shared_frame.hpp"
#include "staging/detail/vulkan/format.hpp"
#include "staging/vulkan/frame.hpp"
#include "staging/vulkan/memory.hpp"

namespace staging::vulkan::detail {

/// One image region's staging layout (the core's copy layout engine) and the aspects it copies.
struct ImageLayout {
  TextureLayout texels;
  VkImageAspectFlags aspect = 0;          // the aspect copied
  VkImageAspectFlags barrier_aspect = 0;  // every aspect of the format (barriers)
  /// bufferRowLength: 0 for tightly packed rows, else the row pitch in texels.
  [[nodiscard]] uint32_t buffer_row_length() const noexcept {
    return texels.tight() ? 0 : static_cast<uint32_t>(texels.row_length);
  }
  /// The copy of `region` from staging bytes at `buffer_offset` laid out this way.
  [[nodiscard]] VkBufferImageCopy copy(const ImageRegion& region,
                                       uint64_t buffer_offset) const noexcept {
    return {.bufferOffset = buffer_offset,
            .bufferRowLength = buffer_row_length(),
            .bufferImageHeight = 0,
            .imageSubresource = {aspect, region.mip_level, region.base_layer, region.layer_count},
            .imageOffset = region.offset,
            .imageExtent = region.extent};
  }
  /// What the caller writes: `bytes` (texels.padded_bytes of them) and their pitches.
  /// Rows of every slice and layer follow each other at row_pitch (bufferImageHeight 0): the
  /// region is rows × images rows.
  [[nodiscard]] InPlacePiece span(std::span<std::byte> bytes) const noexcept {
    InPlacePiece piece;
    piece.bytes = bytes;
    piece.source_offset = 0;
    piece.source_bytes = texels.packed_bytes;
    piece.rows = uint64_t{texels.rows} * texels.images;
    piece.row_bytes = texels.row_bytes;
    piece.row_pitch = texels.row_pitch;
    return piece;
  }
};

/// Validates `region` (destination, extent, format, aspect, block-aligned offset) and lays it out
/// under `limits`.
Expected<ImageLayout, UploadError> image_layout(const ImageRegion& region,
                                                const CopyLimits& limits) noexcept;

/// Whether a frame's copies may leave an image in `layout` (ImageRegion::new_layout): not
/// UNDEFINED or PREINITIALIZED, which no image layout transition may end in
/// (VUID-VkImageMemoryBarrier2-newLayout-01198).
[[nodiscard]] constexpr bool layout_after_copies(VkImageLayout layout) noexcept {
  return layout != VK_IMAGE_LAYOUT_UNDEFINED && layout != VK_IMAGE_LAYOUT_PREINITIALIZED;
}

/// `region` with the destination's image and format where it leaves them unset.
ImageRegion described(const ImageDestination& dst, const ImageRegion& region) noexcept;

/// Host memory for vkCmdUpdateBuffer data: fixed chunks, so spans handed out stay valid until
/// clear(); chunks are kept for the next frame.
class UpdateArena {
 public:
  std::byte* allocate(uint64_t size);
  void clear() noexcept;

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> bytes;
    uint64_t size = 0;
  };
  std::vector<Chunk> chunks_;
  std::size_t current_ = 0;
  uint64_t used_ = 0;
};

struct BufferCopyCmd {
  VkBuffer src;
  VkBuffer dst;
  VkBufferCopy region;
};
struct ImageCopyCmd {
  VkBuffer src;
  VkImage dst;
  VkImageLayout layout;
  VkBufferImageCopy region;
};
struct UpdateCmd {
  VkBuffer dst;
  uint64_t offset;
  uint64_t size;
  const std::byte* data;
};

/// One destination buffer of a frame: the disjoint ranges written, sorted by offset.
struct BufferDest {
  VkBuffer buffer = VK_NULL_HANDLE;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end)
};

/// Bytes [begin, end) of one destination buffer written by a frame's shared uploads (finish()).
struct BufferRun {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// One box of texels written into an image (texels, layers), for overlap checks.
struct ImageBox {
  VkImageAspectFlags aspect;
  uint32_t layer_begin, layer_end;
  int64_t x0, y0, z0, x1, y1, z1;
};

/// One destination mip level of a frame: layouts and boxes written.
struct ImageDest {
  VkImage image = VK_NULL_HANDLE;
  uint32_t mip = 0;
  VkImageAspectFlags barrier_aspect = 0;
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageLayout new_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  std::vector<ImageBox> boxes;
};

/// Where one upload's bytes go.
struct Placement {
  enum class Kind : uint8_t { Ring, OneOff, Update };
  Kind kind = Kind::Ring;
  VkBuffer buffer = VK_NULL_HANDLE;  // the staging buffer (Ring, OneOff)
  uint64_t offset = 0;
  std::byte* ptr = nullptr;
};

/// One image upload of a shared space: what finish() records for it.
struct SharedImageCopy {
  VkImage image = VK_NULL_HANDLE;
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageLayout new_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageAspectFlags barrier_aspect = 0;
  VkBufferImageCopy region{};  // bufferOffset: filled in at finish()
};

/// A frame's shared space (StagingFrame::share()): the core's SharedFrame over the staging bytes,
/// and what writers need to lay out uploads. Kept with the pooled FrameState from frame to frame.
struct SharedState {
  SharedFrame<SharedCopy> frame;
  CopyLimits limits;  // a copy of the ring's: read by writer threads
  // The image uploads' copies (SharedCopy::at indexes them). Writers append under the lock (an
  // image upload is large and rare beside buffer uploads, so a lock is cheap there and keeps every
  // placement's record small); finish() reads them once every writer has left; share() clears
  // them (keeping the capacity).
  mutable std::mutex images_lock;
  mutable std::vector<SharedImageCopy> images;
};

/// One open frame.
struct FrameState {
  uint64_t id = 0;  // its number on the ring's frame sequence
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  Route route = Route::Ring;
  std::optional<UploadError> refusal;
  uint64_t staged_bytes = 0;
  uint64_t update_bytes = 0;
  uint64_t demand = 0;  // what its uploads asked to place, padding included (any route)
  std::vector<BufferCopyCmd> buffer_copies;
  std::vector<ImageCopyCmd> image_copies;
  std::vector<UpdateCmd> updates;
  UpdateArena arena;
  std::vector<StagingMemory> oneoffs;
  uint64_t oneoff_bytes = 0;
  std::vector<BufferDest> buffer_dests;
  std::vector<ImageDest> image_dests;
  std::unique_ptr<SharedState> shared;      // allocated on the first share(), then kept
  VkBuffer shared_buffer = VK_NULL_HANDLE;  // the staging buffer holding the shared space
  bool sharing = false;                     // share() was called on this frame
  bool shared_folded = false;               // finish() took the shared placements in
  bool shared_conflict = false;             // ... and found one it cannot record
  std::vector<BufferRun> shared_runs;       // finish()'s scratch, kept for its capacity

  void clear() noexcept;
};

}  // namespace staging::vulkan::detail
