// StagingFrame: placing uploads (ring or fallback route) and recording them at finish().
#include <algorithm>
#include <cstring>
#include <functional>

#include "ring_impl.hpp"
#include "staging/core/align.hpp"

namespace staging::vulkan {
namespace detail {

namespace {

constexpr VkPipelineStageFlags2 kCopyStages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
constexpr VkAccessFlags2 kCopyAccess = VK_ACCESS_2_TRANSFER_WRITE_BIT;
// vkCmdUpdateBuffer's limits (Vulkan spec: dataSize <= 65536, offset and size multiples of 4).
constexpr uint64_t kMaxUpdateBytes = 65536;

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// The layout the copies write an image in: GENERAL stays GENERAL, anything else is moved to
// TRANSFER_DST_OPTIMAL first.
VkImageLayout copy_layout(VkImageLayout old_layout) {
  return old_layout == VK_IMAGE_LAYOUT_GENERAL ? VK_IMAGE_LAYOUT_GENERAL
                                               : VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
}

// The [begin, end) layer ranges a destination's boxes cover, merged.
void merged_layers(const ImageDest& dest, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  out.clear();
  for (const ImageBox& b : dest.boxes)
    out.emplace_back(b.layer_begin, b.layer_end);
  std::sort(out.begin(), out.end());
  std::size_t n = 0;
  for (const auto& r : out) {
    if (n > 0 && r.first <= out[n - 1].second) {
      out[n - 1].second = std::max(out[n - 1].second, r.second);
    } else {
      out[n++] = r;
    }
  }
  out.resize(n);
}

bool boxes_overlap(const ImageBox& a, const ImageBox& b) {
  return a.aspect == b.aspect && a.layer_begin < b.layer_end && b.layer_begin < a.layer_end &&
         a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 && a.z0 < b.z1 && b.z0 < a.z1;
}

}  // namespace

Expected<ImageLayout, UploadError> image_layout(const ImageRegion& r,
                                                const CopyLimits& limits) noexcept {
  if (r.image == VK_NULL_HANDLE) return unexpected(UploadError::NullDestination);
  if (r.extent.width == 0 || r.extent.height == 0 || r.extent.depth == 0 || r.layer_count == 0)
    return unexpected(UploadError::ZeroSize);
  const Expected<TexelBlock, FormatError> block = texel_block(r.format, r.aspect);
  if (!block) {
    return unexpected(block.error() == FormatError::Unsupported ? UploadError::UnsupportedFormat
                                                                : UploadError::BadAspect);
  }
  ImageLayout l;
  l.block = *block;
  l.aspect = r.aspect != 0 ? r.aspect : default_aspect(r.format);
  if (is_depth_stencil(r.format)) {
    l.barrier_aspect =
        (texel_block(r.format, VK_IMAGE_ASPECT_DEPTH_BIT) ? VK_IMAGE_ASPECT_DEPTH_BIT : 0) |
        (texel_block(r.format, VK_IMAGE_ASPECT_STENCIL_BIT) ? VK_IMAGE_ASPECT_STENCIL_BIT : 0);
  } else {
    l.barrier_aspect = VK_IMAGE_ASPECT_COLOR_BIT;
  }
  if (r.offset.x < 0 || r.offset.y < 0 || r.offset.z < 0 ||
      static_cast<uint32_t>(r.offset.x) % l.block.width != 0 ||
      static_cast<uint32_t>(r.offset.y) % l.block.height != 0 ||
      static_cast<uint32_t>(r.offset.z) % l.block.depth != 0) {
    return unexpected(UploadError::Misaligned);
  }
  const uint64_t blocks_x = ceil_div(r.extent.width, l.block.width);
  l.rows = static_cast<uint32_t>(ceil_div(r.extent.height, l.block.height));
  l.slices = ceil_div(r.extent.depth, l.block.depth);
  l.row_bytes = blocks_x * l.block.bytes;  // < 2^32 * 2^6: no overflow
  const std::optional<uint64_t> pitch_alignment =
      lcm(limits.texture_row_pitch_alignment, l.block.bytes);
  const std::optional<uint64_t> row_pitch =
      pitch_alignment ? align_up(l.row_bytes, *pitch_alignment) : std::nullopt;
  const std::optional<uint64_t> alignment =
      texture_offset_alignment(limits, l.block.offset_alignment);
  if (!row_pitch || !alignment) return unexpected(UploadError::Overflow);
  l.row_pitch = *row_pitch;
  l.alignment = *alignment;
  const auto slice = checked_mul(l.row_pitch, l.rows);
  const auto layer = slice ? checked_mul(*slice, l.slices) : std::nullopt;
  const auto total = layer ? checked_mul(*layer, r.layer_count) : std::nullopt;
  const auto data_layer = checked_mul(l.row_bytes * l.rows, l.slices);
  const auto data = data_layer ? checked_mul(*data_layer, r.layer_count) : std::nullopt;
  if (!total || !data) return unexpected(UploadError::Overflow);
  l.slice_pitch = *slice;
  l.layer_pitch = *layer;
  l.staging_size = *total;
  l.data_size = *data;
  if (l.row_pitch != l.row_bytes) {
    const uint64_t length = l.row_pitch / l.block.bytes * l.block.width;
    if (length > UINT32_MAX) return unexpected(UploadError::Overflow);
    l.buffer_row_length = static_cast<uint32_t>(length);
  }
  return l;
}

std::byte* UpdateArena::allocate(uint64_t size) {
  constexpr uint64_t kChunkBytes = uint64_t{256} << 10;
  while (current_ < chunks_.size() && used_ + size > chunks_[current_].size) {
    ++current_;
    used_ = 0;
  }
  if (current_ == chunks_.size()) {
    const uint64_t bytes = std::max(kChunkBytes, size);
    chunks_.push_back({std::make_unique<std::byte[]>(bytes), bytes});
    used_ = 0;
  }
  std::byte* p = chunks_[current_].bytes.get() + used_;
  used_ += size;
  return p;
}

void UpdateArena::clear() noexcept {
  current_ = 0;
  used_ = 0;
}

void FrameState::clear() noexcept {
  id = 0;
  cmd = VK_NULL_HANDLE;
  route = Route::Ring;
  refusal.reset();
  lease = SlotLease();
  slot = nullptr;
  reservations.clear();
  flushes.clear();
  staged_bytes = 0;
  update_bytes = 0;
  buffer_copies.clear();
  image_copies.clear();
  updates.clear();
  arena.clear();
  oneoffs.clear();
  oneoff_bytes = 0;
  buffer_dests.clear();
  image_dests.clear();
}

Expected<Placement, UploadError> RingImpl::place(FrameState& f, uint64_t size, uint64_t alignment,
                                                 bool update_ok) {
  if (f.route == Route::Ring) {
    const auto placed = [&](VkBuffer buffer, uint64_t capacity, uint64_t offset, std::byte* base) {
      if (config.observer) config.observer->on_write(f.id, buffer, capacity, offset, size);
      f.staged_bytes += size;
      ++stats.staged_uploads;
      stats.staged_bytes += size;
      return Placement{Placement::Kind::Ring, buffer, offset, base + offset};
    };
    if (slots) {
      const Expected<uint64_t, PlaceError> offset = f.lease.place(size, alignment);
      if (offset) {
        const StagingMemory& m = f.slot->memory();
        return placed(m.buffer, m.size, *offset, m.mapped);
      }
      if (offset.error() == PlaceError::Overflow) return unexpected(UploadError::Overflow);
    } else {
      const TimelineValue seen = byte_ring->completed();
      Expected<Reservation, ReserveError> r = reserve_waiting(
          *byte_ring, timeline,
          ReserveRequest{.size = size, .alignment = alignment, .token = f.id, .owner = f.id});
      // Frames it found done gave their bytes back: release them (their one-off buffers, the
      // observer's view) before any byte of theirs is handed out again.
      if (byte_ring->completed() != seen) poll();
      if (r) {
        f.reservations.push_back(r->id);
        const StagingMemory& m = regions.memory(r->region);
        if (!m.coherent || config.flush_always) f.flushes.push_back({r->region, r->offset, size});
        return placed(m.buffer, m.size, r->offset, m.mapped);
      }
      if (r.error().kind == ReserveErrorKind::Overflow) return unexpected(UploadError::Overflow);
      last_reserve_error = r.error();
      if (config.policy != ExhaustionPolicy::Fallback) {
        ++stats.ring_full_refusals;
        return unexpected(UploadError::RingFull);
      }
    }
    ++stats.ring_full_fallbacks;  // no room in the ring: this upload takes the fallback route
  }
  if (update_ok && config.fallback.update_buffer && size <= kMaxUpdateBytes && size % 4 == 0 &&
      f.update_bytes + size <= config.fallback.max_update_bytes_per_frame) {
    f.update_bytes += size;
    ++stats.update_buffer_uploads;
    stats.update_buffer_bytes += size;
    return Placement{Placement::Kind::Update, VK_NULL_HANDLE, 0, f.arena.allocate(size)};
  }
  if (size > config.fallback.max_oneoff_bytes ||
      stats.oneoff_live_bytes > config.fallback.max_oneoff_bytes - size) {
    ++stats.fallback_cap_refusals;
    return unexpected(UploadError::FallbackCapReached);
  }
  const Expected<StagingMemory, AllocError> made = allocate(size);
  if (!made) return unexpected(UploadError::AllocationFailed);
  f.oneoffs.push_back(*made);
  f.oneoff_bytes += size;
  stats.oneoff_live_bytes += size;
  stats.oneoff_peak_bytes = std::max(stats.oneoff_peak_bytes, stats.oneoff_live_bytes);
  ++stats.oneoff_uploads;
  stats.oneoff_bytes += size;
  if (config.observer) config.observer->on_write(f.id, made->buffer, made->size, 0, size);
  return Placement{Placement::Kind::OneOff, made->buffer, 0, made->mapped};
}

Expected<RetirementPoint, FinishError> RingImpl::finish(FrameState& f, const Visibility& vis,
                                                        std::optional<RetirementPoint> external) {
  const Dispatch& vk = device.dispatch;
  if (external) {
    if (external->semaphore == VK_NULL_HANDLE) return unexpected(FinishError::NullSemaphore);
    uint64_t reached = 0;
    const VkResult r = vk.vkGetSemaphoreCounterValue(device.device, external->semaphore, &reached);
    if (r == VK_ERROR_DEVICE_LOST) {
      device_lost();
      return unexpected(FinishError::DeviceLost);
    }
    if (r == VK_SUCCESS && reached >= external->value)
      return unexpected(FinishError::PointAlreadyReached);
  }

  // 1. Make the CPU's writes visible to the device (non-coherent memory).
  const auto flush = [&](const StagingMemory& m, uint64_t bytes) {
    if (bytes == 0 || (m.coherent && !config.flush_always)) return;
    memory->flush(m, 0, bytes);
    ++stats.flushes;
    stats.flushed_bytes += bytes;
  };
  if (f.route == Route::Ring && slots) flush(f.slot->memory(), f.lease.cursor());
  for (const FrameState::Flush& range : f.flushes) {
    memory->flush(regions.memory(range.region), range.offset, range.size);
    ++stats.flushes;
    stats.flushed_bytes += range.size;
  }
  for (const StagingMemory& m : f.oneoffs)
    flush(m, m.size);

  // 2. The barrier before the copies: prior users of the destinations, layout transitions.
  const bool prior = vis.prior_stages != 0;
  const auto record_barrier = [&] {
    if (scratch_buffer_barriers.empty() && scratch_image_barriers.empty()) return;
    const VkDependencyInfo dep{
        .sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
        .bufferMemoryBarrierCount = static_cast<uint32_t>(scratch_buffer_barriers.size()),
        .pBufferMemoryBarriers = scratch_buffer_barriers.data(),
        .imageMemoryBarrierCount = static_cast<uint32_t>(scratch_image_barriers.size()),
        .pImageMemoryBarriers = scratch_image_barriers.data(),
    };
    vk.vkCmdPipelineBarrier2(f.cmd, &dep);
    ++stats.barriers;
  };
  const auto buffer_barrier = [&](const BufferDest& d, VkPipelineStageFlags2 src_stages,
                                  VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                  VkAccessFlags2 dst_access) {
    const uint64_t lo = d.ranges.front().first;
    const uint64_t hi = d.ranges.back().second;
    scratch_buffer_barriers.push_back(VkBufferMemoryBarrier2{
        .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
        .srcStageMask = src_stages,
        .srcAccessMask = src_access,
        .dstStageMask = dst_stages,
        .dstAccessMask = dst_access,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .buffer = d.buffer,
        .offset = lo,
        .size = hi - lo,
    });
  };
  const auto image_barriers = [&](const ImageDest& d, VkPipelineStageFlags2 src_stages,
                                  VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                  VkAccessFlags2 dst_access, VkImageLayout from, VkImageLayout to) {
    merged_layers(d, scratch_layers);
    for (const auto& [first, end] : scratch_layers) {
      scratch_image_barriers.push_back(VkImageMemoryBarrier2{
          .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
          .srcStageMask = src_stages,
          .srcAccessMask = src_access,
          .dstStageMask = dst_stages,
          .dstAccessMask = dst_access,
          .oldLayout = from,
          .newLayout = to,
          .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
          .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
          .image = d.image,
          .subresourceRange = {d.barrier_aspect, d.mip, 1, first, end - first},
      });
    }
  };
  scratch_buffer_barriers.clear();
  scratch_image_barriers.clear();
  for (const BufferDest& d : f.buffer_dests) {
    if (prior && !d.ranges.empty())
      buffer_barrier(d, vis.prior_stages, vis.prior_access, kCopyStages, kCopyAccess);
  }
  for (const ImageDest& d : f.image_dests) {
    if (!d.boxes.empty() && (prior || d.old_layout != copy_layout(d.old_layout))) {
      image_barriers(d, prior ? vis.prior_stages : VK_PIPELINE_STAGE_2_NONE,
                     prior ? vis.prior_access : VK_ACCESS_2_NONE, kCopyStages, kCopyAccess,
                     d.old_layout, copy_layout(d.old_layout));
    }
  }
  record_barrier();

  // 3. The copies, one command per (source, destination); regions that continue each other in
  //    both buffers (consecutive uploads placed back to back) are merged into one.
  std::stable_sort(f.buffer_copies.begin(), f.buffer_copies.end(),
                   [](const BufferCopyCmd& a, const BufferCopyCmd& b) {
                     std::less<> less;
                     return a.src != b.src ? less(a.src, b.src) : less(a.dst, b.dst);
                   });
  for (std::size_t i = 0; i < f.buffer_copies.size();) {
    const BufferCopyCmd& first = f.buffer_copies[i];
    scratch_buffer_regions.clear();
    std::size_t j = i;
    for (; j < f.buffer_copies.size() && f.buffer_copies[j].src == first.src &&
           f.buffer_copies[j].dst == first.dst;
         ++j) {
      const VkBufferCopy& r = f.buffer_copies[j].region;
      if (!scratch_buffer_regions.empty()) {
        VkBufferCopy& last = scratch_buffer_regions.back();
        if (last.srcOffset + last.size == r.srcOffset &&
            last.dstOffset + last.size == r.dstOffset) {
          last.size += r.size;
          continue;
        }
      }
      scratch_buffer_regions.push_back(r);
    }
    vk.vkCmdCopyBuffer(f.cmd, first.src, first.dst,
                       static_cast<uint32_t>(scratch_buffer_regions.size()),
                       scratch_buffer_regions.data());
    ++stats.copy_commands;
    stats.copy_regions += scratch_buffer_regions.size();
    i = j;
  }
  std::stable_sort(f.image_copies.begin(), f.image_copies.end(),
                   [](const ImageCopyCmd& a, const ImageCopyCmd& b) {
                     std::less<> less;
                     if (a.src != b.src) return less(a.src, b.src);
                     if (a.dst != b.dst) return less(a.dst, b.dst);
                     return a.layout < b.layout;
                   });
  for (std::size_t i = 0; i < f.image_copies.size();) {
    const ImageCopyCmd& first = f.image_copies[i];
    scratch_image_regions.clear();
    std::size_t j = i;
    for (; j < f.image_copies.size() && f.image_copies[j].src == first.src &&
           f.image_copies[j].dst == first.dst && f.image_copies[j].layout == first.layout;
         ++j) {
      scratch_image_regions.push_back(f.image_copies[j].region);
    }
    vk.vkCmdCopyBufferToImage(f.cmd, first.src, first.dst, first.layout,
                              static_cast<uint32_t>(scratch_image_regions.size()),
                              scratch_image_regions.data());
    ++stats.copy_commands;
    stats.copy_regions += scratch_image_regions.size();
    i = j;
  }
  for (const UpdateCmd& u : f.updates) {
    vk.vkCmdUpdateBuffer(f.cmd, u.dst, u.offset, u.size, u.data);
    ++stats.update_commands;
  }

  // 4. One barrier making every destination visible to the consumers (and final layouts).
  scratch_buffer_barriers.clear();
  scratch_image_barriers.clear();
  for (const BufferDest& d : f.buffer_dests) {
    if (!d.ranges.empty()) buffer_barrier(d, kCopyStages, kCopyAccess, vis.stages, vis.access);
  }
  for (const ImageDest& d : f.image_dests) {
    if (!d.boxes.empty()) {
      image_barriers(d, kCopyStages, kCopyAccess, vis.stages, vis.access, copy_layout(d.old_layout),
                     d.new_layout);
    }
  }
  record_barrier();

  // 5. The retirement point, and the frame in flight until it is reached.
  const RetirementPoint point = external ? *external : RetirementPoint{semaphore, ++last_value};
  Pending p;
  p.frame = f.id;
  p.point = point;
  if (f.route == Route::Ring && slots)
    p.token = std::move(slots->finish(std::move(f.lease))).value();
  p.reservations = std::move(f.reservations);
  f.reservations.clear();
  p.oneoffs = std::move(f.oneoffs);
  p.oneoff_bytes = f.oneoff_bytes;
  f.oneoffs.clear();
  f.oneoff_bytes = 0;
  pending.push_back(std::move(p));
  if (config.observer) config.observer->on_finish(f.id, point);
  ++stats.frames_finished;
  return point;
}

void RingImpl::drop(std::unique_ptr<FrameState> f) noexcept {
  release_oneoffs(f->oneoffs, f->oneoff_bytes);  // never recorded: nothing reads them
  f->oneoff_bytes = 0;
  f->lease = SlotLease();                       // the slot is Ready again (no copy was recorded)
  release_frame(f->id, f->reservations, true);  // nor were its reservations read
  if (config.observer) config.observer->on_release(f->id, Release::Dropped);
  ++stats.frames_dropped;
  recycle(std::move(f));
}

void RingImpl::recycle(std::unique_ptr<FrameState> f) noexcept {
  f->clear();
  --open_frames;
  pool.push_back(std::move(f));
}

}  // namespace detail

// ---- StagingFrame -----------------------------------------------------------------------------

namespace {

// Finds (or adds) the frame's record of destination buffer `dst`.
detail::BufferDest& buffer_dest(detail::FrameState& f, VkBuffer dst) {
  for (detail::BufferDest& d : f.buffer_dests) {
    if (d.buffer == dst) return d;
  }
  f.buffer_dests.push_back({dst, {}});
  return f.buffer_dests.back();
}

}  // namespace

StagingFrame::StagingFrame() noexcept = default;

StagingFrame::StagingFrame(detail::RingImpl* ring,
                           std::unique_ptr<detail::FrameState> state) noexcept
    : ring_(ring), state_(std::move(state)) {}

StagingFrame::StagingFrame(StagingFrame&& other) noexcept
    : ring_(std::exchange(other.ring_, nullptr)), state_(std::move(other.state_)) {}

StagingFrame& StagingFrame::operator=(StagingFrame&& other) noexcept {
  if (this != &other) {
    drop();
    ring_ = std::exchange(other.ring_, nullptr);
    state_ = std::move(other.state_);
  }
  return *this;
}

StagingFrame::~StagingFrame() {
  drop();
}

void StagingFrame::drop() noexcept {
  if (state_) ring_->drop(std::move(state_));
  ring_ = nullptr;
}

Route StagingFrame::route() const noexcept {
  return state_ ? state_->route : Route::Ring;
}
std::optional<Refusal> StagingFrame::refusal() const noexcept {
  return state_ ? state_->refusal : std::nullopt;
}
uint64_t StagingFrame::id() const noexcept {
  return state_ ? state_->id : 0;
}
uint64_t StagingFrame::staged_bytes() const noexcept {
  return state_ ? state_->staged_bytes : 0;
}

Expected<std::span<std::byte>, UploadError> StagingFrame::reserve(VkBuffer dst, uint64_t dst_offset,
                                                                  uint64_t size) {
  if (!state_) return unexpected(UploadError::Inactive);
  if (dst == VK_NULL_HANDLE) return unexpected(UploadError::NullDestination);
  if (size == 0) return unexpected(UploadError::ZeroSize);
  const std::optional<uint64_t> end = checked_add(dst_offset, size);
  if (!end) return unexpected(UploadError::Overflow);
  detail::FrameState& f = *state_;
  detail::BufferDest& dest = buffer_dest(f, dst);
  // The ranges are disjoint and sorted: only the neighbours can overlap [dst_offset, end).
  const auto next = std::lower_bound(dest.ranges.begin(), dest.ranges.end(),
                                     std::pair<uint64_t, uint64_t>{dst_offset, 0});
  if ((next != dest.ranges.end() && next->first < *end) ||
      (next != dest.ranges.begin() && std::prev(next)->second > dst_offset)) {
    return unexpected(UploadError::OverlapsEarlierUpload);
  }
  const std::size_t at = static_cast<std::size_t>(next - dest.ranges.begin());
  const Expected<detail::Placement, UploadError> placed =
      ring_->place(f, size, ring_->limits.buffer_copy_alignment, dst_offset % 4 == 0);
  if (!placed) return unexpected(placed.error());
  dest.ranges.insert(dest.ranges.begin() + static_cast<std::ptrdiff_t>(at), {dst_offset, *end});
  if (placed->kind == detail::Placement::Kind::Update) {
    f.updates.push_back({dst, dst_offset, size, placed->ptr});
  } else {
    f.buffer_copies.push_back(
        {placed->buffer, dst, VkBufferCopy{placed->offset, dst_offset, size}});
  }
  return std::span<std::byte>(placed->ptr, size);
}

Expected<void, UploadError> StagingFrame::upload(VkBuffer dst, uint64_t dst_offset,
                                                 std::span<const std::byte> data) {
  Expected<std::span<std::byte>, UploadError> span = reserve(dst, dst_offset, data.size());
  if (!span) return unexpected(span.error());
  std::memcpy(span->data(), data.data(), data.size());
  return {};
}

Expected<ImageSpan, UploadError> StagingFrame::reserve(const ImageRegion& region) {
  if (!state_) return unexpected(UploadError::Inactive);
  const Expected<detail::ImageLayout, UploadError> layout =
      detail::image_layout(region, ring_->limits);
  if (!layout) return unexpected(layout.error());
  detail::FrameState& f = *state_;
  const detail::ImageBox box{
      layout->aspect,
      region.base_layer,
      region.base_layer + region.layer_count,
      region.offset.x,
      region.offset.y,
      region.offset.z,
      int64_t{region.offset.x} + region.extent.width,
      int64_t{region.offset.y} + region.extent.height,
      int64_t{region.offset.z} + region.extent.depth,
  };
  detail::ImageDest* dest = nullptr;
  for (detail::ImageDest& d : f.image_dests) {
    if (d.image == region.image && d.mip == region.mip_level) dest = &d;
  }
  if (dest != nullptr) {
    if (dest->old_layout != region.old_layout || dest->new_layout != region.new_layout)
      return unexpected(UploadError::ConflictingLayouts);
    for (const detail::ImageBox& b : dest->boxes) {
      if (detail::boxes_overlap(b, box)) return unexpected(UploadError::OverlapsEarlierUpload);
    }
  }
  const Expected<detail::Placement, UploadError> placed =
      ring_->place(f, layout->staging_size, layout->alignment, false);
  if (!placed) return unexpected(placed.error());
  if (dest == nullptr) {
    f.image_dests.push_back({region.image,
                             region.mip_level,
                             layout->barrier_aspect,
                             region.old_layout,
                             region.new_layout,
                             {}});
    dest = &f.image_dests.back();
  }
  dest->boxes.push_back(box);
  f.image_copies.push_back({
      placed->buffer,
      region.image,
      detail::copy_layout(region.old_layout),
      VkBufferImageCopy{
          .bufferOffset = placed->offset,
          .bufferRowLength = layout->buffer_row_length,
          .bufferImageHeight = 0,
          .imageSubresource = {layout->aspect, region.mip_level, region.base_layer,
                               region.layer_count},
          .imageOffset = region.offset,
          .imageExtent = region.extent,
      },
  });
  return ImageSpan{
      .bytes = std::span<std::byte>(placed->ptr, layout->staging_size),
      .row_pitch = layout->row_pitch,
      .slice_pitch = layout->slice_pitch,
      .layer_pitch = layout->layer_pitch,
      .row_bytes = layout->row_bytes,
      .rows = layout->rows,
  };
}

Expected<void, UploadError> StagingFrame::upload(const ImageRegion& region,
                                                 std::span<const std::byte> texels) {
  if (!state_) return unexpected(UploadError::Inactive);
  const Expected<detail::ImageLayout, UploadError> layout =
      detail::image_layout(region, ring_->limits);
  if (!layout) return unexpected(layout.error());
  if (texels.size() != layout->data_size) return unexpected(UploadError::SizeMismatch);
  const Expected<ImageSpan, UploadError> span = reserve(region);
  if (!span) return unexpected(span.error());
  if (span->row_pitch == span->row_bytes) {
    std::memcpy(span->bytes.data(), texels.data(), texels.size());
    return {};
  }
  // Padded rows: copy row by row (tightly packed source).
  const std::byte* src = texels.data();
  const uint64_t rows_total =
      static_cast<uint64_t>(span->rows) * layout->slices * region.layer_count;
  for (uint64_t row = 0; row < rows_total; ++row) {
    std::memcpy(span->bytes.data() + row * span->row_pitch, src, span->row_bytes);
    src += span->row_bytes;
  }
  return {};
}

Expected<RetirementPoint, FinishError> StagingFrame::finish(
    const Visibility& visibility, std::optional<RetirementPoint> external) {
  if (!state_) return unexpected(FinishError::Inactive);
  Expected<RetirementPoint, FinishError> point = ring_->finish(*state_, visibility, external);
  if (!point) return point;
  ring_->recycle(std::move(state_));
  ring_ = nullptr;
  return point;
}

}  // namespace staging::vulkan
