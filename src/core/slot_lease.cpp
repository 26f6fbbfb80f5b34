#include "staging/detail/core/slot_lease.hpp"

#include <utility>

#include "staging/detail/core/align.hpp"

namespace staging {

SlotLease::SlotLease(SlotLease&& other) noexcept
    : fence_(std::move(other.fence_)),
      generation_(other.generation_),
      slot_(other.slot_),
      capacity_(other.capacity_),
      cursor_(other.cursor_),
      placements_(other.placements_),
      refused_(other.refused_),
      bytes_placed_(other.bytes_placed_) {
  other.fence_.reset();
}

SlotLease& SlotLease::operator=(SlotLease&& other) noexcept {
  if (this != &other) {
    release();
    fence_ = std::move(other.fence_);
    other.fence_.reset();
    generation_ = other.generation_;
    slot_ = other.slot_;
    capacity_ = other.capacity_;
    cursor_ = other.cursor_;
    placements_ = other.placements_;
    refused_ = other.refused_;
    bytes_placed_ = other.bytes_placed_;
  }
  return *this;
}

SlotLease::~SlotLease() {
  release();
}

void SlotLease::release() noexcept {
  if (!fence_) return;
  // Nothing has recorded a copy from the slot before finish(), so it can be reused at once.
  fence_->transition(generation_, SlotState::Recording, SlotState::Ready);
  fence_.reset();
}

Expected<uint64_t, PlaceError> SlotLease::place(uint64_t size, uint64_t alignment) noexcept {
  const auto refuse = [this](PlaceError e) -> Expected<uint64_t, PlaceError> {
    if (e != PlaceError::Inactive) ++refused_;
    return unexpected(e);
  };
  if (!fence_) return refuse(PlaceError::Inactive);
  if (size == 0) return refuse(PlaceError::ZeroSize);
  const std::optional<uint64_t> offset = align_up(cursor_, alignment);
  if (!offset) return refuse(PlaceError::Overflow);
  const std::optional<uint64_t> end = checked_add(*offset, size);
  if (!end) return refuse(PlaceError::Overflow);
  if (*end > capacity_) return refuse(PlaceError::DoesNotFit);
  cursor_ = *end;
  ++placements_;
  bytes_placed_ += size;
  return *offset;
}

}  // namespace staging
