#include "slot_strategy.hpp"

#include <algorithm>
#include <bit>

namespace staging::vulkan::detail {

SlotStrategy::SlotStrategy(MemorySource& memory, const staging::StagingRingConfig& config)
    : memory_(&memory), ring_(std::move(StagingRing<SlotBuffer>::create(*this, config).value())) {}

Expected<SlotBuffer, AllocError> SlotStrategy::create(uint64_t capacity) {
  Expected<StagingMemory, AllocError> made = memory_->allocate(capacity);
  if (!made) return unexpected(made.error());
  return SlotBuffer(memory_, *made);
}

Expected<void, UploadError> SlotStrategy::begin(uint64_t frame, uint64_t needed) {
  Expected<SlotLease, UploadError> lease = ring_.begin(needed);
  if (!lease) return unexpected(lease.error());
  const SlotBuffer* buffer = &ring_.buffer(*lease);
  open_.push_back(Open{frame, std::move(*lease), buffer});
  return {};
}

SlotStrategy::Open* SlotStrategy::open_frame(uint64_t frame) noexcept {
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
    if (it->frame == frame) return &*it;
  }
  return nullptr;
}

PlaceResult SlotStrategy::place(uint64_t frame, uint64_t size, uint64_t alignment) {
  PlaceResult result;
  Open* open = open_frame(frame);
  if (open == nullptr) return result;  // a frame without a slot: NoRoom
  const Expected<uint64_t, PlaceError> offset = open->lease.place(size, alignment);
  if (!offset) {
    if (offset.error() == PlaceError::Overflow) result.miss = PlaceResult::Miss::Overflow;
    return result;
  }
  const StagingMemory& m = open->buffer->memory();
  result.staged = Staged{m.buffer, m.size, *offset, m.mapped + *offset};
  return result;
}

Expected<void, AllocError> SlotStrategy::flush(uint64_t frame) {
  if (Open* open = open_frame(frame)) {
    return memory_->flush(open->buffer->memory(), 0, open->lease.cursor());
  }
  return {};
}

void SlotStrategy::end(uint64_t frame) {
  Open* open = open_frame(frame);
  if (open == nullptr) return;
  // The slot waits for the frame's number on the ring's frame sequence: it becomes Ready once
  // every frame up to this one is released (release() hands the core that value).
  const Expected<void, FinishError> finished = ring_.finish(std::move(open->lease), frame);
  STAGING_ASSERT(finished.has_value(), "a frame's own lease was refused by its ring");
  open_.erase(open_.begin() + (open - open_.data()));
}

void SlotStrategy::release(uint64_t frame, Release how, TimelineValue completed) noexcept {
  if (Open* open = open_frame(frame)) {  // dropped unfinished: nothing read the slot
    open_.erase(open_.begin() + (open - open_.data()));
  } else if (how == Release::Failed) {
    ring_.fail_in_flight();  // a lost device: every slot in flight is replaced on its next pick
  } else if (how != Release::Retired) {
    ring_.abandon(frame);  // never read: replaced on its next pick
  }
  // By value, as the byte strategy: every slot of a frame <= `completed` is Ready.
  ring_.retire(completed);
}

void SlotStrategy::add_stats(Stats& stats) const {
  stats.strategy = ring_.stats();
}

uint64_t SlotStrategy::largest_placement() const noexcept {
  const StagingRingConfig& c = ring_.config();
  return std::max(c.min_slot_bytes, std::bit_floor(c.max_slot_bytes));
}

std::optional<SlotInfo> SlotStrategy::slot(std::size_t index) const {
  if (index >= ring_.slot_count()) return std::nullopt;
  return SlotInfo{ring_.state(index), ring_.capacity(index)};
}

std::size_t SlotStrategy::slot_count() const noexcept {
  return ring_.slot_count();
}

}  // namespace staging::vulkan::detail
