// SharedUploads and SharedWriter: uploads placed into a frame's shared space from any thread (the
// core's SharedFrame); StagingFrame::finish() records them (frame.cpp).
#include <cstring>
#include <mutex>
#include <new>

#include "frame_state.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/vulkan/frame.hpp"

namespace staging::vulkan {

static_assert(SharedFrame<detail::SharedCopy>::kJoins,
              "a writer's back-to-back buffer uploads are joined into one placement");

namespace {

UploadError upload_error(SharedPlaceErrorKind kind) noexcept {
  switch (kind) {
    case SharedPlaceErrorKind::ZeroSize:
      return UploadError::ZeroSize;
    case SharedPlaceErrorKind::Overflow:
      return UploadError::Overflow;
    case SharedPlaceErrorKind::Inactive:
      return UploadError::Inactive;
    case SharedPlaceErrorKind::DoesNotFit:
    case SharedPlaceErrorKind::TooManyPlacements:  // no cap is set: cannot happen
      return UploadError::DoesNotFit;
    case SharedPlaceErrorKind::OutOfMemory:
      return UploadError::AllocationFailed;
  }
  return UploadError::DoesNotFit;
}

}  // namespace

// ---- SharedWriter -----------------------------------------------------------------------------

Expected<std::span<std::byte>, UploadError> SharedWriter::place(uint64_t size, uint64_t alignment,
                                                                const detail::SharedCopy& copy) {
  const auto placed = writer_.place(size, alignment, copy);
  if (!placed) return unexpected(upload_error(placed.error().kind));
  return placed->bytes;
}

Expected<std::span<std::byte>, UploadError> SharedWriter::reserve(VkBuffer dst, uint64_t dst_offset,
                                                                  uint64_t size) {
  if (state_ == nullptr) return unexpected(UploadError::Inactive);
  if (dst == VK_NULL_HANDLE) return unexpected(UploadError::NullDestination);
  if (size == 0) return unexpected(UploadError::ZeroSize);
  if (!checked_add(dst_offset, size)) return unexpected(UploadError::Overflow);
  return place(size, state_->limits.buffer_copy_alignment, detail::SharedCopy{dst, dst_offset});
}

Expected<std::span<std::byte>, UploadError> SharedWriter::reserve(const BufferDestination& dst,
                                                                  uint64_t dst_offset,
                                                                  uint64_t size) {
  if (state_ == nullptr) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, dst_offset, size); !checked)
    return unexpected(checked.error());
  return reserve(dst.buffer, dst_offset, size);
}

Expected<void, UploadError> SharedWriter::upload(VkBuffer dst, uint64_t dst_offset,
                                                 std::span<const std::byte> data) {
  const Expected<std::span<std::byte>, UploadError> span = reserve(dst, dst_offset, data.size());
  if (!span) return unexpected(span.error());
  std::memcpy(span->data(), data.data(), data.size());
  return {};
}

Expected<void, UploadError> SharedWriter::upload(const BufferDestination& dst, uint64_t dst_offset,
                                                 std::span<const std::byte> data) {
  const Expected<std::span<std::byte>, UploadError> span = reserve(dst, dst_offset, data.size());
  if (!span) return unexpected(span.error());
  std::memcpy(span->data(), data.data(), data.size());
  return {};
}

Expected<InPlacePiece, UploadError> SharedWriter::reserve(const ImageRegion& region) {
  if (state_ == nullptr) return unexpected(UploadError::Inactive);
  const Expected<detail::ImageLayout, UploadError> layout =
      detail::image_layout(region, state_->limits);
  if (!layout) return unexpected(layout.error());
  if (!detail::layout_after_copies(region.new_layout))
    return unexpected(UploadError::InvalidArgument);
  // The copy goes into the space's table first; a placement refused after it leaves an entry
  // nothing names (cleared with the table at the next share()).
  uint64_t at = 0;
  try {
    const std::lock_guard lock(state_->images_lock);
    at = state_->images.size();
    state_->images.push_back({region.image, region.old_layout, region.new_layout,
                              layout->barrier_aspect, layout->copy(region, 0)});
  } catch (const std::bad_alloc&) {
    return unexpected(UploadError::AllocationFailed);
  }
  const Expected<std::span<std::byte>, UploadError> bytes =
      place(layout->texels.padded_bytes, layout->texels.offset_alignment,
            detail::SharedCopy{VK_NULL_HANDLE, at});
  if (!bytes) return unexpected(bytes.error());
  return layout->span(*bytes);
}

Expected<InPlacePiece, UploadError> SharedWriter::reserve(const ImageDestination& dst,
                                                          const ImageRegion& region) {
  if (state_ == nullptr) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, region); !checked) return unexpected(checked.error());
  return reserve(detail::described(dst, region));
}

Expected<void, UploadError> SharedWriter::upload(const ImageRegion& region,
                                                 std::span<const std::byte> texels) {
  if (state_ == nullptr) return unexpected(UploadError::Inactive);
  const Expected<detail::ImageLayout, UploadError> layout =
      detail::image_layout(region, state_->limits);
  if (!layout) return unexpected(layout.error());
  if (texels.size() != layout->texels.packed_bytes) return unexpected(UploadError::SizeMismatch);
  const Expected<InPlacePiece, UploadError> span = reserve(region);
  if (!span) return unexpected(span.error());
  repack_rows(span->bytes.data(), texels.data(), layout->texels);
  return {};
}

Expected<void, UploadError> SharedWriter::upload(const ImageDestination& dst,
                                                 const ImageRegion& region,
                                                 std::span<const std::byte> texels) {
  if (state_ == nullptr) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, region); !checked) return unexpected(checked.error());
  return upload(detail::described(dst, region), texels);
}

// ---- SharedUploads ----------------------------------------------------------------------------

Expected<SharedWriter, UploadError> SharedUploads::join(uint64_t block_bytes) const noexcept {
  if (state_ == nullptr) return unexpected(UploadError::Inactive);
  auto writer = state_->frame.join(WriterOptions{.block_bytes = block_bytes});
  if (!writer) return unexpected(UploadError::Sealed);
  return SharedWriter(state_, std::move(*writer));
}

uint32_t SharedUploads::seal() const noexcept {
  return state_ != nullptr ? state_->frame.seal() : 0;
}

bool SharedUploads::wait_drained(Duration timeout) const {
  return state_ == nullptr || state_->frame.wait_drained(timeout);
}

uint64_t SharedUploads::capacity() const noexcept {
  return state_ != nullptr ? state_->frame.capacity() : 0;
}

uint64_t SharedUploads::used_bytes() const noexcept {
  return state_ != nullptr ? state_->frame.used_bytes() : 0;
}

uint64_t SharedUploads::stranded_bytes() const noexcept {
  return state_ != nullptr ? state_->frame.stranded_bytes() : 0;
}

uint32_t SharedUploads::writers() const noexcept {
  return state_ != nullptr ? state_->frame.writers() : 0;
}

bool SharedUploads::sealed() const noexcept {
  return state_ == nullptr || state_->frame.sealed();
}

}  // namespace staging::vulkan
