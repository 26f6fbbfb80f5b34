// StagingFrame: checking uploads and their destinations, placing them (ring or fallback route),
// and finish() in its steps (the commands themselves are recorder.cpp's).
#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>

#include "ring_impl.hpp"
#include "staging/detail/core/align.hpp"

namespace staging::vulkan {
namespace detail {

namespace {

// vkCmdUpdateBuffer's limits (Vulkan spec: dataSize <= 65536, offset and size multiples of 4).
constexpr uint64_t kMaxUpdateBytes = 65536;

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
  if (r.offset.x < 0 || r.offset.y < 0 || r.offset.z < 0 ||
      static_cast<uint32_t>(r.offset.x) % block->width != 0 ||
      static_cast<uint32_t>(r.offset.y) % block->height != 0 ||
      static_cast<uint32_t>(r.offset.z) % block->depth != 0) {
    return unexpected(UploadError::Misaligned);
  }
  const Expected<TextureLayout, LayoutError> texels = texture_layout(
      {r.extent.width, r.extent.height, r.extent.depth}, r.layer_count, *block, limits);
  if (!texels) return unexpected(UploadError::Overflow);  // not Empty: checked above
  ImageLayout l;
  l.texels = *texels;
  l.aspect = r.aspect != 0 ? r.aspect : default_aspect(r.format);
  if (is_depth_stencil(r.format)) {
    l.barrier_aspect =
        (texel_block(r.format, VK_IMAGE_ASPECT_DEPTH_BIT) ? VK_IMAGE_ASPECT_DEPTH_BIT : 0) |
        (texel_block(r.format, VK_IMAGE_ASPECT_STENCIL_BIT) ? VK_IMAGE_ASPECT_STENCIL_BIT : 0);
  } else {
    l.barrier_aspect = VK_IMAGE_ASPECT_COLOR_BIT;
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
  staged_bytes = 0;
  update_bytes = 0;
  demand = 0;
  buffer_copies.clear();
  image_copies.clear();
  updates.clear();
  arena.clear();
  oneoffs.clear();
  oneoff_bytes = 0;
  buffer_dests.clear();
  image_dests.clear();
  if (shared) (void)shared->frame.seal();  // late joiners of a finished or dropped frame: Sealed
  shared_buffer = VK_NULL_HANDLE;
  sharing = false;
  shared_folded = false;
  shared_conflict = false;
}

// The ring route through the strategy; when it has no room, the fallback route (or RingFull).
Expected<Placement, UploadError> RingImpl::place(FrameState& f, uint64_t size, uint64_t alignment,
                                                 bool update_ok) {
  // What the frame asked for, whatever route it takes: what later frames of begin(cmd) are sized
  // by. Saturates.
  f.demand = checked_add(f.demand, footprint(size, alignment)).value_or(UINT64_MAX);
  if (f.route == Route::Ring) {
    const PlaceResult r = strategy->place(f.id, size, alignment);
    // Frames found done meanwhile give their memory back (and the observer hears of it) before
    // any byte of theirs is written again.
    if (r.completion_advanced) poll();
    if (r.staged) {
      const Staged& m = *r.staged;
      report({.kind = EventKind::FrameWrite,
              .id = f.id,
              .offset = m.offset,
              .bytes = size,
              .object = handle_bits(m.buffer),
              .object_bytes = m.capacity});
      f.staged_bytes += size;
      ++stats.staged_uploads;
      stats.staged_bytes += size;
      return Placement{Placement::Kind::Ring, m.buffer, m.offset, m.ptr};
    }
    if (r.miss == PlaceResult::Miss::Overflow) return unexpected(UploadError::Overflow);
    if (std::holds_alternative<ByteRingConfig>(config.strategy) &&
        config.policy != ExhaustionPolicy::Fallback) {
      ++stats.ring_full_refusals;
      return unexpected(UploadError::RingFull);
    }
    ++stats.ring_full_fallbacks;  // no room in the ring: this upload takes the fallback route
  }
  return place_fallback(f, size, update_ok);
}

// vkCmdUpdateBuffer where legal and within the frame's budget, else a one-off buffer.
Expected<Placement, UploadError> RingImpl::place_fallback(FrameState& f, uint64_t size,
                                                          bool update_ok) {
  if (update_ok && config.fallback_update_buffer && size <= kMaxUpdateBytes && size % 4 == 0 &&
      f.update_bytes + size <= config.fallback_max_update_bytes) {
    f.update_bytes += size;
    ++stats.update_buffer_uploads;
    stats.update_buffer_bytes += size;
    return Placement{Placement::Kind::Update, VK_NULL_HANDLE, 0, f.arena.allocate(size)};
  }
  if (size > config.fallback_max_oneoff_bytes ||
      stats.oneoff_live_bytes > config.fallback_max_oneoff_bytes - size) {
    ++stats.fallback_cap_refusals;
    // Above the cap itself and above anything the ring can hold: no frame will ever take it.
    if (size > config.fallback_max_oneoff_bytes && size > strategy->largest_placement())
      return unexpected(UploadError::TooLarge);
    return unexpected(UploadError::FallbackCapReached);
  }
  const Expected<StagingMemory, AllocError> made = memory.allocate(size);
  if (!made) return unexpected(UploadError::AllocationFailed);
  f.oneoffs.push_back(*made);
  f.oneoff_bytes += size;
  stats.oneoff_live_bytes += size;
  stats.oneoff_peak_bytes = std::max(stats.oneoff_peak_bytes, stats.oneoff_live_bytes);
  ++stats.oneoff_uploads;
  stats.oneoff_bytes += size;
  report({.kind = EventKind::FrameWrite,
          .id = f.id,
          .bytes = size,
          .object = handle_bits(made->buffer),
          .object_bytes = made->size});
  return Placement{Placement::Kind::OneOff, made->buffer, 0, made->mapped};
}

// finish(), in its steps: check the external point; 1. flush what the CPU wrote; 2. the barrier
// before the copies; 3. the copies; 4. the barrier after them; 5. the frame in flight until its
// point is reached.
Expected<RetirementPoint, FinishError> RingImpl::finish(FrameState& f, const Visibility& vis,
                                                        std::optional<RetirementPoint> external) {
  if (external) {
    if (external->semaphore == VK_NULL_HANDLE) return unexpected(FinishError::NullSemaphore);
    uint64_t reached = 0;
    const VkResult r =
        device.dispatch.vkGetSemaphoreCounterValue(device.device, external->semaphore, &reached);
    if (r == VK_ERROR_DEVICE_LOST) {
      device_lost();
      return unexpected(FinishError::DeviceLost);
    }
    if (r == VK_SUCCESS && reached >= external->value)
      return unexpected(FinishError::PointAlreadyReached);
  }
  // 1 (a failed flush records nothing: the frame stays open)
  if (f.route == Route::Ring && !strategy->flush(f.id)) return unexpected(FinishError::FlushFailed);
  for (const StagingMemory& m : f.oneoffs) {
    if (!memory.flush(m, 0, m.size)) return unexpected(FinishError::FlushFailed);
  }
  recorder.barrier_before(f, vis, stats);  // 2
  recorder.copies(f, stats);               // 3
  recorder.barrier_after(f, vis, stats);   // 4
  const RetirementPoint point = external ? *external : RetirementPoint{semaphore, ++last_value};
  if (f.route == Route::Ring) strategy->end(f.id);  // 5
  note_demand(f.demand);
  Pending p;
  p.frame = f.id;
  p.point = point;
  p.route = f.route;
  p.oneoffs = std::move(f.oneoffs);
  p.oneoff_bytes = f.oneoff_bytes;
  f.oneoffs.clear();
  f.oneoff_bytes = 0;
  pending.push_back(std::move(p));
  report({.kind = EventKind::FrameFinish,
          .id = f.id,
          .value = point.value,
          .object = handle_bits(point.semaphore)});
  ++stats.frames_finished;
  return point;
}

void RingImpl::drop(std::unique_ptr<FrameState> f) noexcept {
  release_oneoffs(f->oneoffs, f->oneoff_bytes);  // never recorded: nothing reads them
  release(f->id, Release::Dropped);              // nor its ring memory
  ++stats.frames_dropped;
  recycle(std::move(f));
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

// Where bytes [begin, end) of `dst` go among the frame's earlier ranges of it (sorted and
// disjoint), or OverlapsEarlierUpload.
struct RangeSlot {
  detail::BufferDest* dest;
  std::size_t at;
};
Expected<RangeSlot, UploadError> free_range(detail::FrameState& f, VkBuffer dst, uint64_t begin,
                                            uint64_t end) {
  detail::BufferDest& dest = buffer_dest(f, dst);
  // Only the neighbours can overlap [begin, end).
  const auto next = std::lower_bound(dest.ranges.begin(), dest.ranges.end(),
                                     std::pair<uint64_t, uint64_t>{begin, 0});
  if ((next != dest.ranges.end() && next->first < end) ||
      (next != dest.ranges.begin() && std::prev(next)->second > begin)) {
    return unexpected(UploadError::OverlapsEarlierUpload);
  }
  return RangeSlot{&dest, static_cast<std::size_t>(next - dest.ranges.begin())};
}

// Takes [begin, end) at `slot` (free_range's answer). A range that touches its neighbour extends
// it instead of adding one, so uploads written back to back, in either order, keep one range and
// cost no shifting of the ranges after them.
void take_range(const RangeSlot& slot, uint64_t begin, uint64_t end) {
  std::vector<std::pair<uint64_t, uint64_t>>& ranges = slot.dest->ranges;
  const auto at = ranges.begin() + static_cast<std::ptrdiff_t>(slot.at);
  const bool joins_prev = at != ranges.begin() && std::prev(at)->second == begin;
  const bool joins_next = at != ranges.end() && at->first == end;
  if (joins_prev && joins_next) {
    std::prev(at)->second = at->second;
    ranges.erase(at);
  } else if (joins_prev) {
    std::prev(at)->second = end;
  } else if (joins_next) {
    at->first = begin;
  } else {
    ranges.insert(at, {begin, end});
  }
}

// Adds the copy of `size` bytes from `src` at `src_offset` to `dst` at `dst_offset`, merged into
// the frame's last copy when it continues that one in both buffers (uploads placed back to back).
void add_buffer_copy(detail::FrameState& f, VkBuffer src, VkBuffer dst, uint64_t src_offset,
                     uint64_t dst_offset, uint64_t size) {
  if (!f.buffer_copies.empty()) {
    detail::BufferCopyCmd& last = f.buffer_copies.back();
    if (last.src == src && last.dst == dst &&
        last.region.srcOffset + last.region.size == src_offset &&
        last.region.dstOffset + last.region.size == dst_offset) {
      last.region.size += size;
      return;
    }
  }
  f.buffer_copies.push_back({src, dst, VkBufferCopy{src_offset, dst_offset, size}});
}

detail::ImageBox image_box(VkImageAspectFlags aspect, uint32_t base_layer, uint32_t layers,
                           VkOffset3D offset, VkExtent3D extent) noexcept {
  return {aspect,
          base_layer,
          base_layer + layers,
          offset.x,
          offset.y,
          offset.z,
          int64_t{offset.x} + extent.width,
          int64_t{offset.y} + extent.height,
          int64_t{offset.z} + extent.depth};
}

// The frame's record of mip level `mip` of `image` (null when none yet), once `box` is known to
// overlap no box written earlier and the layouts to agree; else the error.
Expected<detail::ImageDest*, UploadError> free_box(detail::FrameState& f, VkImage image,
                                                   uint32_t mip, VkImageLayout old_layout,
                                                   VkImageLayout new_layout,
                                                   const detail::ImageBox& box) {
  detail::ImageDest* dest = nullptr;
  for (detail::ImageDest& d : f.image_dests) {
    if (d.image == image && d.mip == mip) dest = &d;
  }
  if (dest != nullptr) {
    if (dest->old_layout != old_layout || dest->new_layout != new_layout)
      return unexpected(UploadError::ConflictingLayouts);
    for (const detail::ImageBox& b : dest->boxes) {
      if (detail::boxes_overlap(b, box)) return unexpected(UploadError::OverlapsEarlierUpload);
    }
  }
  return dest;
}

void take_box(detail::FrameState& f, detail::ImageDest* dest, VkImage image, uint32_t mip,
              VkImageAspectFlags barrier_aspect, VkImageLayout old_layout, VkImageLayout new_layout,
              const detail::ImageBox& box) {
  if (dest == nullptr) {
    f.image_dests.push_back({image, mip, barrier_aspect, old_layout, new_layout, {}});
    dest = &f.image_dests.back();
  }
  dest->boxes.push_back(box);
}

// Takes shared runs of one destination buffer (`runs`, sorted by where they begin) into the
// frame's ranges of it; false when one overlaps another or a range the frame already holds. Ranges
// sorted by where they begin overlap somewhere exactly when two neighbours do, so one pass finds
// any overlap.
bool take_runs(detail::FrameState& f, std::span<const detail::BufferRun> runs) {
  std::vector<std::pair<uint64_t, uint64_t>>& ranges = buffer_dest(f, runs.front().buffer).ranges;
  const std::size_t held = ranges.size();
  for (const detail::BufferRun& r : runs)
    ranges.emplace_back(r.begin, r.end);
  const auto mid = ranges.begin() + static_cast<std::ptrdiff_t>(held);
  if (held != 0 && std::prev(mid)->second > mid->first)
    std::inplace_merge(ranges.begin(), mid, ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i - 1].second > ranges[i].first) return false;
  }
  return true;
}

// Takes the shared space's placements into the frame's copies, in staging-offset order. False when
// one cannot be recorded (an overlap, or conflicting layouts): the frame is then never recorded.
//
// A writer's uploads written back to back into one destination are joined into one placement as
// they are placed (SharedCopy::joins), so there is one placement per run of a writer's block, not
// one per upload. Placements come in staging order, not in destination order, so buffer uploads
// are checked a run at a time: consecutive placements that continue each other in the destination
// make one run, the runs are sorted, and each destination's are merged into its ranges with one
// pass. The cost is linear in the placements (and n log n in the runs), whatever the writers'
// order.
bool take_shared(detail::FrameState& f, const SharedFrame<detail::SharedCopy>::Placements& placed) {
  std::vector<detail::BufferRun>& runs = f.shared_runs;
  runs.clear();
  for (const FramePlacement<detail::SharedCopy>& p : placed) {
    if (const VkBuffer dst = p.payload.buffer; dst != VK_NULL_HANDLE) {
      const uint64_t dst_offset = p.payload.at;
      const uint64_t end = dst_offset + p.size;  // checked by the writer
      if (!runs.empty() && runs.back().buffer == dst && runs.back().end == dst_offset) {
        runs.back().end = end;
      } else {
        runs.push_back({dst, dst_offset, end});
      }
      add_buffer_copy(f, f.shared_buffer, dst, p.offset, dst_offset, p.size);
      continue;
    }
    assert(p.payload.at < f.shared->images.size());
    const detail::SharedImageCopy& c = f.shared->images[p.payload.at];
    const VkImageSubresourceLayers& sub = c.region.imageSubresource;
    const detail::ImageBox box = image_box(sub.aspectMask, sub.baseArrayLayer, sub.layerCount,
                                           c.region.imageOffset, c.region.imageExtent);
    const Expected<detail::ImageDest*, UploadError> dest =
        free_box(f, c.image, sub.mipLevel, c.old_layout, c.new_layout, box);
    if (!dest) return false;
    take_box(f, *dest, c.image, sub.mipLevel, c.barrier_aspect, c.old_layout, c.new_layout, box);
    VkBufferImageCopy region = c.region;
    region.bufferOffset = p.offset;
    f.image_copies.push_back({f.shared_buffer, c.image, detail::copy_layout(c.old_layout), region});
  }
  std::sort(runs.begin(), runs.end(), [](const detail::BufferRun& a, const detail::BufferRun& b) {
    std::less<> less;
    return a.buffer != b.buffer ? less(a.buffer, b.buffer) : a.begin < b.begin;
  });
  for (std::size_t i = 0; i < runs.size();) {
    std::size_t j = i + 1;
    while (j < runs.size() && runs[j].buffer == runs[i].buffer)
      ++j;
    if (!take_runs(f, std::span(runs).subspan(i, j - i))) return false;
    i = j;
  }
  return true;
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
std::optional<UploadError> StagingFrame::refusal() const noexcept {
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
  const Expected<RangeSlot, UploadError> slot = free_range(f, dst, dst_offset, *end);
  if (!slot) return unexpected(slot.error());
  const Expected<detail::Placement, UploadError> placed =
      ring_->place(f, size, ring_->limits.buffer_copy_alignment, dst_offset % 4 == 0);
  if (!placed) return unexpected(placed.error());
  take_range(*slot, dst_offset, *end);
  if (placed->kind == detail::Placement::Kind::Update) {
    f.updates.push_back({dst, dst_offset, size, placed->ptr});
  } else {
    add_buffer_copy(f, placed->buffer, dst, placed->offset, dst_offset, size);
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

Expected<std::span<std::byte>, UploadError> StagingFrame::reserve(const BufferDestination& dst,
                                                                  uint64_t dst_offset,
                                                                  uint64_t size) {
  if (!state_) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, dst_offset, size); !checked)
    return unexpected(checked.error());
  return reserve(dst.buffer, dst_offset, size);
}

Expected<void, UploadError> StagingFrame::upload(const BufferDestination& dst, uint64_t dst_offset,
                                                 std::span<const std::byte> data) {
  if (!state_) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, dst_offset, data.size()); !checked)
    return unexpected(checked.error());
  return upload(dst.buffer, dst_offset, data);
}

namespace detail {

ImageRegion described(const ImageDestination& dst, const ImageRegion& region) noexcept {
  ImageRegion r = region;
  if (r.image == VK_NULL_HANDLE) r.image = dst.image;
  if (r.format == VK_FORMAT_UNDEFINED) r.format = dst.format;
  return r;
}

}  // namespace detail

using detail::described;

Expected<InPlacePiece, UploadError> StagingFrame::reserve(const ImageDestination& dst,
                                                          const ImageRegion& region) {
  if (!state_) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, region); !checked) return unexpected(checked.error());
  return reserve(described(dst, region));
}

Expected<void, UploadError> StagingFrame::upload(const ImageDestination& dst,
                                                 const ImageRegion& region,
                                                 std::span<const std::byte> texels) {
  if (!state_) return unexpected(UploadError::Inactive);
  if (auto checked = check_destination(dst, region); !checked) return unexpected(checked.error());
  return upload(described(dst, region), texels);
}

Expected<InPlacePiece, UploadError> StagingFrame::reserve(const ImageRegion& region) {
  if (!state_) return unexpected(UploadError::Inactive);
  const Expected<detail::ImageLayout, UploadError> layout =
      detail::image_layout(region, ring_->limits);
  if (!layout) return unexpected(layout.error());
  if (!detail::layout_after_copies(region.new_layout))
    return unexpected(UploadError::InvalidArgument);
  detail::FrameState& f = *state_;
  const detail::ImageBox box = image_box(layout->aspect, region.base_layer, region.layer_count,
                                         region.offset, region.extent);
  const Expected<detail::ImageDest*, UploadError> dest =
      free_box(f, region.image, region.mip_level, region.old_layout, region.new_layout, box);
  if (!dest) return unexpected(dest.error());
  const Expected<detail::Placement, UploadError> placed =
      ring_->place(f, layout->texels.padded_bytes, layout->texels.offset_alignment, false);
  if (!placed) return unexpected(placed.error());
  take_box(f, *dest, region.image, region.mip_level, layout->barrier_aspect, region.old_layout,
           region.new_layout, box);
  f.image_copies.push_back({
      placed->buffer,
      region.image,
      detail::copy_layout(region.old_layout),
      layout->copy(region, placed->offset),
  });
  return layout->span(std::span<std::byte>(placed->ptr, layout->texels.padded_bytes));
}

Expected<void, UploadError> StagingFrame::upload(const ImageRegion& region,
                                                 std::span<const std::byte> texels) {
  if (!state_) return unexpected(UploadError::Inactive);
  const Expected<detail::ImageLayout, UploadError> layout =
      detail::image_layout(region, ring_->limits);
  if (!layout) return unexpected(layout.error());
  if (texels.size() != layout->texels.packed_bytes) return unexpected(UploadError::SizeMismatch);
  const Expected<InPlacePiece, UploadError> span = reserve(region);
  if (!span) return unexpected(span.error());
  repack_rows(span->bytes.data(), texels.data(), layout->texels);
  return {};
}

Expected<SharedUploads, UploadError> StagingFrame::share(uint64_t bytes) {
  if (!state_) return unexpected(UploadError::Inactive);
  if (bytes == 0) return unexpected(UploadError::ZeroSize);
  detail::FrameState& f = *state_;
  if (f.sharing) return unexpected(UploadError::AlreadyShared);
  if (!f.shared) f.shared = std::make_unique<detail::SharedState>();
  const Expected<detail::Placement, UploadError> placed =
      ring_->place(f, bytes, ring_->limits.buffer_copy_alignment, false);
  if (!placed) return unexpected(placed.error());
  f.shared->limits = ring_->limits;
  f.shared->images.clear();  // no writer of an earlier frame is inside (they left before it ended)
  f.shared->frame.open(std::span(placed->ptr, static_cast<std::size_t>(bytes)), placed->offset);
  f.shared_buffer = placed->buffer;
  f.sharing = true;
  return SharedUploads(f.shared.get());
}

Expected<RetirementPoint, FinishError> StagingFrame::finish(
    const Visibility& visibility, std::optional<RetirementPoint> external) {
  if (!state_) return unexpected(FinishError::Inactive);
  detail::FrameState& f = *state_;
  if (f.sharing && !f.shared_folded) {
    // Seals the space (if the owner did not); its uploads are final once every writer left.
    const auto placed = f.shared->frame.finish(DrainMode::Report);
    if (!placed) return unexpected(FinishError::WritersActive);
    f.shared_folded = true;
    f.shared_conflict = !take_shared(f, *placed);
  }
  if (f.shared_conflict) return unexpected(FinishError::SharedConflict);
  Expected<RetirementPoint, FinishError> point = ring_->finish(*state_, visibility, external);
  if (!point) return point;
  ring_->recycle(std::move(state_));
  ring_ = nullptr;
  return point;
}

}  // namespace staging::vulkan
