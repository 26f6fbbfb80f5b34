#include "byte_strategy.hpp"

#include <algorithm>

#include "staging/detail/core/byte_ring_deps.hpp"

namespace staging::vulkan::detail {

ByteStrategy::ByteStrategy(MemorySource& memory, CompletionSource& frames) noexcept
    : memory_(&memory), frames_(&frames) {}

ByteStrategy::~ByteStrategy() {
  ring_.reset();  // releases every region through destroy_region() while regions_ lives
}

Expected<std::unique_ptr<ByteStrategy>, CreateError> ByteStrategy::create(
    MemorySource& memory, const RingConfig& config, CompletionSource& frames) {
  std::unique_ptr<ByteStrategy> s(new ByteStrategy(memory, frames));
  Expected<ByteRing, CreateError> ring = staging::detail::create_byte_ring(
      std::get<ByteRingConfig>(config.strategy),
      {.allocator = s.get(), .observer = config.observer, .checker = config.checker});
  if (!ring) return unexpected(ring.error());
  s->ring_.emplace(std::move(*ring));
  return s;
}

Expected<void, AllocError> ByteStrategy::create_region(uint32_t region, uint64_t bytes) {
  Expected<StagingMemory, AllocError> made = memory_->allocate(bytes);
  if (!made) return unexpected(made.error());
  if (regions_.size() <= region) regions_.resize(region + 1);
  regions_[region] = *made;
  return {};
}

void ByteStrategy::destroy_region(uint32_t region) noexcept {
  STAGING_ASSERT(region < regions_.size() && regions_[region], "destroying an unknown region");
  memory_->release(*regions_[region]);
  regions_[region].reset();
}

ByteStrategy::FrameBytes* ByteStrategy::frame_bytes(uint64_t frame) noexcept {
  for (auto it = live_.rbegin(); it != live_.rend(); ++it) {
    if (it->frame == frame) return &*it;
  }
  return nullptr;
}

Expected<void, UploadError> ByteStrategy::begin(uint64_t frame, uint64_t /*needed*/) {
  if (spare_.empty()) {
    live_.emplace_back();
  } else {
    live_.push_back(std::move(spare_.back()));
    spare_.pop_back();
  }
  live_.back().frame = frame;
  return {};
}

PlaceResult ByteStrategy::place(uint64_t frame, uint64_t size, uint64_t alignment) {
  PlaceResult result;
  FrameBytes* f = frame_bytes(frame);
  if (f == nullptr) return result;
  const TimelineValue seen = ring_->completed();
  Expected<Reservation, ReserveError> r = reserve_waiting(
      *ring_, *frames_,
      ReserveRequest{.size = size, .alignment = alignment, .token = frame, .owner = frame});
  result.completion_advanced = ring_->completed() != seen;
  if (!r) {
    if (r.error().kind == UploadError::Overflow) {
      result.miss = PlaceResult::Miss::Overflow;
    } else {
      last_refusal_ = r.error();
    }
    return result;
  }
  f->reservations.push_back(r->id);
  const StagingMemory& m = *regions_[r->region];
  if (memory_->needs_flush(m)) f->written.push_back({r->region, r->offset, size});
  result.staged = Staged{m.buffer, m.size, r->offset, m.mapped + r->offset};
  return result;
}

Expected<void, AllocError> ByteStrategy::flush(uint64_t frame) {
  const FrameBytes* f = frame_bytes(frame);
  if (f == nullptr) return {};
  for (const FrameBytes::Range& w : f->written) {
    if (auto flushed = memory_->flush(*regions_[w.region], w.offset, w.size); !flushed) {
      return flushed;
    }
  }
  return {};
}

void ByteStrategy::end(uint64_t /*frame*/) {}

void ByteStrategy::release(uint64_t frame, Release how, TimelineValue completed) noexcept {
  if (FrameBytes* f = frame_bytes(frame)) {
    // Never read (dropped, abandoned) or never to be read (a lost device): give the bytes back
    // at once rather than when every earlier frame is released.
    if (how != Release::Retired) {
      for (uint64_t id : f->reservations)
        ring_->cancel(id);
    }
    f->reservations.clear();
    f->written.clear();
    spare_.push_back(std::move(*f));
    live_.erase(live_.begin() + (f - live_.data()));
  }
  ring_->retire(completed);
}

void ByteStrategy::add_stats(Stats& stats) const {
  stats.strategy = ring_->stats();
}

}  // namespace staging::vulkan::detail
