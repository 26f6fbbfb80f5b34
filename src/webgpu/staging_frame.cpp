#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "frame_copy.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/webgpu/staging_ring.hpp"

namespace staging::webgpu {

Expected<TextureLayout, LayoutError> texture_layout(const TextureUpload& region) noexcept {
  // depthOrArrayLayers counts images (layers or depth slices): the same rows either way.
  return staging::texture_layout({region.extent.width, region.extent.height, 1},
                                 region.extent.depthOrArrayLayers, region.block, COPY_LIMITS);
}

namespace {

// One pending re-map: the slot's fence, fired by the map callback. Owned by the callback.
struct MapRequest {
  FenceToken token;
  std::shared_ptr<RouteStats> stats;
};

void on_slot_mapped(WGPUBufferMapAsyncStatus status, void* userdata) {
  std::unique_ptr<MapRequest> request(static_cast<MapRequest*>(userdata));
  if (status == WGPUBufferMapAsyncStatus_Success) {
    ++request->stats->maps_completed;
    request->token.signal();  // InFlight → Ready
  } else {
    ++request->stats->maps_failed;
    request->token.fail();  // InFlight → Failed: replaced on the next pick
  }
}

}  // namespace

StagingFrame::StagingFrame(StagingRing& ring, std::optional<UploadError> refusal) noexcept
    : ring_(&ring), state_(State::Recording), refusal_(refusal) {}

StagingFrame::StagingFrame(StagingRing& ring, SlotLease lease, WGPUBuffer slot_buffer,
                           uint64_t slot_capacity) noexcept
    : ring_(&ring),
      state_(State::Recording),
      lease_(std::move(lease)),
      slot_buffer_(slot_buffer),
      slot_capacity_(slot_capacity),
      slot_(lease_.slot()) {
  if (!ring.spare_copies_.empty()) {
    copies_ = std::move(ring.spare_copies_.back());
    ring.spare_copies_.pop_back();
    copies_.clear();
  }
}

StagingFrame::StagingFrame(StagingFrame&& other) noexcept
    : ring_(std::exchange(other.ring_, nullptr)),
      state_(std::exchange(other.state_, State::Closed)),
      refusal_(other.refusal_),
      lease_(std::move(other.lease_)),
      token_(std::move(other.token_)),
      slot_buffer_(std::exchange(other.slot_buffer_, nullptr)),
      slot_capacity_(other.slot_capacity_),
      slot_(other.slot_),
      mapped_any_(std::exchange(other.mapped_any_, false)),
      copies_(std::move(other.copies_)) {
  other.copies_.clear();
}

StagingFrame& StagingFrame::operator=(StagingFrame&& other) noexcept {
  if (this != &other) {
    close();
    ring_ = std::exchange(other.ring_, nullptr);
    state_ = std::exchange(other.state_, State::Closed);
    refusal_ = other.refusal_;
    lease_ = std::move(other.lease_);
    token_ = std::move(other.token_);
    slot_buffer_ = std::exchange(other.slot_buffer_, nullptr);
    slot_capacity_ = other.slot_capacity_;
    slot_ = other.slot_;
    mapped_any_ = std::exchange(other.mapped_any_, false);
    copies_ = std::move(other.copies_);
    other.copies_.clear();
  }
  return *this;
}

StagingFrame::~StagingFrame() {
  close();
}

void StagingFrame::close() noexcept {
  if (ring_ == nullptr) return;
  RouteStats& stats = *ring_->route_stats_;
  if (state_ == State::Recording && slot_buffer_ != nullptr) {
    release_destinations();
    if (mapped_any_) {
      // Ranges of the slot are mapped out, so the next frame could not map them again: unmap
      // and re-map (no copy reads the slot; the map completes on the next event-loop turn).
      ++stats.frames_dropped;
      wgpuBufferUnmap(slot_buffer_);
      Expected<FenceToken, staging::FinishError> token = ring_->core_.finish(std::move(lease_));
      STAGING_ASSERT(token.has_value(), "a recording frame's lease must finish");
      request_map(std::move(*token));
    }
    // else: the lease's destructor gives the still-mapped slot back (Ready).
  } else if (state_ == State::Finished && token_.pending()) {
    // A dropped encoder: the token dies unfired and the slot becomes Abandoned.
    ++stats.frames_abandoned;
  }
  if (copies_.capacity() != 0) {
    copies_.clear();
    ring_->spare_copies_.push_back(std::move(copies_));
  }
  lease_ = SlotLease();
  token_ = FenceToken();
  state_ = State::Closed;
  ring_ = nullptr;
  slot_buffer_ = nullptr;
}

void StagingFrame::release_destinations() noexcept {
  for (const Copy& copy : copies_) {
    if (copy.dst_buffer != nullptr)
      wgpuBufferRelease(copy.dst_buffer);
    else
      wgpuTextureRelease(copy.texture.texture);
  }
  copies_.clear();
}

void StagingFrame::request_map(FenceToken token) noexcept {
  RouteStats& stats = *ring_->route_stats_;
  ++stats.maps_requested;
  auto* request = new MapRequest{std::move(token), ring_->route_stats_};
  // size_t is 32 bits in wasm32; slot capacities are at most max_slot_bytes (64 MiB by default).
  wgpuBufferMapAsync(slot_buffer_, WGPUMapMode_Write, 0, static_cast<size_t>(slot_capacity_),
                     &on_slot_mapped, request);
}

std::byte* StagingFrame::place(uint64_t size, uint64_t alignment) noexcept {
  if (slot_buffer_ == nullptr) return nullptr;
  const Expected<uint64_t, PlaceError> offset = lease_.place(size, alignment);
  if (!offset) return nullptr;
  void* mapped = wgpuBufferGetMappedRange(slot_buffer_, static_cast<size_t>(*offset),
                                          static_cast<size_t>(size));
  if (mapped == nullptr) return nullptr;  // the placement is spent; the upload goes the other way
  mapped_any_ = true;
  ring_->route_stats_->mirrored_bytes += size;
  return static_cast<std::byte*>(mapped);
}

Expected<Route, UploadError> StagingFrame::upload(WGPUBuffer dst, uint64_t dst_offset,
                                                  const void* data, uint64_t size) {
  if (state_ != State::Recording || ring_ == nullptr) return unexpected(UploadError::Inactive);
  if (size == 0) return unexpected(UploadError::ZeroSize);
  if (size % COPY_BUFFER_ALIGNMENT != 0 || dst_offset % COPY_BUFFER_ALIGNMENT != 0)
    return unexpected(UploadError::Misaligned);
  if (size > SIZE_MAX) return unexpected(UploadError::TooLarge);
  if (dst == nullptr) return unexpected(UploadError::NullDestination);
  RouteStats& stats = *ring_->route_stats_;
  if (std::byte* slot = place(size, BUFFER_PLACEMENT_ALIGNMENT)) {
    std::memcpy(slot, data, static_cast<std::size_t>(size));
    wgpuBufferReference(dst);
    Copy copy;
    copy.src_offset = lease_.cursor() - size;  // place() just ended the cursor there
    copy.dst_buffer = dst;
    copy.dst_offset = dst_offset;
    copy.size = size;
    copies_.push_back(copy);
    ++stats.slot_uploads;
    stats.slot_bytes += size;
    return Route::Ring;
  }
  if (slot_buffer_ != nullptr) ++stats.slot_overflows;
  wgpuQueueWriteBuffer(ring_->queue_, dst, dst_offset, data, static_cast<size_t>(size));
  ++stats.queue_write_uploads;
  stats.queue_write_bytes += size;
  return Route::Fallback;
}

Expected<std::span<std::byte>, UploadError> StagingFrame::reserve(WGPUBuffer dst,
                                                                  uint64_t dst_offset,
                                                                  uint64_t size) {
  if (state_ != State::Recording || ring_ == nullptr) return unexpected(UploadError::Inactive);
  if (size == 0) return unexpected(UploadError::ZeroSize);
  if (size % COPY_BUFFER_ALIGNMENT != 0 || dst_offset % COPY_BUFFER_ALIGNMENT != 0)
    return unexpected(UploadError::Misaligned);
  if (size > SIZE_MAX) return unexpected(UploadError::TooLarge);
  if (dst == nullptr) return unexpected(UploadError::NullDestination);
  if (slot_buffer_ == nullptr) return unexpected(UploadError::NoSlot);
  std::byte* slot = place(size, BUFFER_PLACEMENT_ALIGNMENT);
  if (slot == nullptr) return unexpected(UploadError::DoesNotFit);
  wgpuBufferReference(dst);
  Copy copy;
  copy.src_offset = lease_.cursor() - size;
  copy.dst_buffer = dst;
  copy.dst_offset = dst_offset;
  copy.size = size;
  copies_.push_back(copy);
  RouteStats& stats = *ring_->route_stats_;
  ++stats.slot_uploads;
  stats.slot_bytes += size;
  return std::span<std::byte>(slot, static_cast<std::size_t>(size));
}

Expected<Route, UploadError> StagingFrame::upload(const TextureUpload& dst, const void* data,
                                                  uint64_t size) {
  if (state_ != State::Recording || ring_ == nullptr) return unexpected(UploadError::Inactive);
  if (dst.extent.width == 0 || dst.extent.height == 0 || dst.extent.depthOrArrayLayers == 0)
    return unexpected(UploadError::ZeroSize);
  if (dst.texture == nullptr) return unexpected(UploadError::NullDestination);
  const Expected<TextureLayout, LayoutError> layout = texture_layout(dst);
  if (!layout && layout.error() == LayoutError::Empty)  // the extent is not: the block is
    return unexpected(UploadError::UnsupportedFormat);
  if (!layout || layout->row_pitch > UINT32_MAX) return unexpected(UploadError::Overflow);
  if (layout->packed_bytes != size) return unexpected(UploadError::SizeMismatch);
  if (size > SIZE_MAX || layout->copy_bytes > SIZE_MAX) return unexpected(UploadError::TooLarge);
  RouteStats& stats = *ring_->route_stats_;
  const std::optional<uint64_t> staged = align_up(layout->copy_bytes, MAP_SIZE_ALIGNMENT);
  if (!staged) return unexpected(UploadError::Overflow);
  if (std::byte* slot = place(*staged, layout->offset_alignment)) {
    repack_rows(slot, static_cast<const std::byte*>(data), *layout);
    wgpuTextureReference(dst.texture);
    Copy copy;
    copy.src_offset = lease_.cursor() - *staged;
    copy.size = size;
    copy.texture = dst;
    copy.bytes_per_row = static_cast<uint32_t>(layout->row_pitch);
    copy.rows_per_image = static_cast<uint32_t>(layout->rows);
    copies_.push_back(copy);
    ++stats.slot_uploads;
    stats.slot_bytes += size;
    ++stats.texture_uploads;
    stats.rows_repacked += layout->rows * layout->images;
    return Route::Ring;
  }
  if (slot_buffer_ != nullptr) ++stats.slot_overflows;
  WGPUImageCopyTexture destination{};
  destination.texture = dst.texture;
  destination.mipLevel = dst.mip_level;
  destination.origin = dst.origin;
  destination.aspect = dst.aspect;
  WGPUTextureDataLayout packed{};
  packed.offset = 0;
  packed.bytesPerRow = static_cast<uint32_t>(layout->row_bytes);
  packed.rowsPerImage = static_cast<uint32_t>(layout->rows);
  wgpuQueueWriteTexture(ring_->queue_, &destination, data, static_cast<size_t>(size), &packed,
                        &dst.extent);
  ++stats.queue_write_uploads;
  stats.queue_write_bytes += size;
  return Route::Fallback;
}

Expected<Route, UploadError> StagingFrame::upload(const BufferDestination& dst, uint64_t dst_offset,
                                                  const void* data, uint64_t size) {
  if (state_ != State::Recording || ring_ == nullptr) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, dst_offset, size); !checked)
    return unexpected(checked.error());
  return upload(dst.buffer, dst_offset, data, size);
}

Expected<std::span<std::byte>, UploadError> StagingFrame::reserve(const BufferDestination& dst,
                                                                  uint64_t dst_offset,
                                                                  uint64_t size) {
  if (state_ != State::Recording || ring_ == nullptr) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, dst_offset, size); !checked)
    return unexpected(checked.error());
  return reserve(dst.buffer, dst_offset, size);
}

Expected<Route, UploadError> StagingFrame::upload(const TextureDestination& dst,
                                                  const TextureUpload& region, const void* data,
                                                  uint64_t size) {
  if (state_ != State::Recording || ring_ == nullptr) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, region); !checked) return unexpected(checked.error());
  TextureUpload described = region;
  described.texture = dst.texture;
  described.format = dst.format;
  return upload(described, data, size);
}

Expected<void, FinishError> StagingFrame::finish(WGPUCommandEncoder encoder) {
  if (state_ != State::Recording || ring_ == nullptr) return unexpected(FinishError::Inactive);
  RouteStats& stats = *ring_->route_stats_;
  if (slot_buffer_ == nullptr) {  // fallback route: its bytes are already on their way
    state_ = State::Finished;
    ++stats.frames_finished;
    return {};
  }
  if (!copies_.empty() && encoder == nullptr) return unexpected(FinishError::NullEncoder);
  if (!mapped_any_) {  // nothing placed: the still-mapped slot goes back to Ready
    lease_ = SlotLease();
    state_ = State::Finished;
    ++stats.frames_finished;
    return {};
  }
  // Emscripten: unmap copies every mapped range's heap mirror into the buffer, then unmaps it.
  wgpuBufferUnmap(slot_buffer_);
  for (const Copy& copy : copies_) {
    if (copy.dst_buffer != nullptr) {
      wgpuCommandEncoderCopyBufferToBuffer(encoder, slot_buffer_, copy.src_offset, copy.dst_buffer,
                                           copy.dst_offset, copy.size);
    } else {
      WGPUImageCopyBuffer source{};
      source.buffer = slot_buffer_;
      source.layout.offset = copy.src_offset;
      source.layout.bytesPerRow = copy.bytes_per_row;
      source.layout.rowsPerImage = copy.rows_per_image;
      WGPUImageCopyTexture destination{};
      destination.texture = copy.texture.texture;
      destination.mipLevel = copy.texture.mip_level;
      destination.origin = copy.texture.origin;
      destination.aspect = copy.texture.aspect;
      wgpuCommandEncoderCopyBufferToTexture(encoder, &source, &destination, &copy.texture.extent);
    }
  }
  stats.copies_recorded += copies_.size();
  release_destinations();
  Expected<FenceToken, staging::FinishError> token = ring_->core_.finish(std::move(lease_));
  STAGING_ASSERT(token.has_value(), "a recording frame's lease must finish");
  token_ = std::move(*token);
  state_ = State::Finished;
  ++stats.frames_finished;
  return {};
}

Expected<void, FinishError> StagingFrame::submitted() {
  if (state_ == State::Recording && ring_ != nullptr) return unexpected(FinishError::NotFinished);
  if (state_ != State::Finished || ring_ == nullptr) return unexpected(FinishError::Inactive);
  ++ring_->route_stats_->frames_submitted;
  if (token_.pending()) request_map(std::move(token_));
  state_ = State::Submitted;
  return {};
}

}  // namespace staging::webgpu
