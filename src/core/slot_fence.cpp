#include "staging/detail/core/slot_fence.hpp"

#include <utility>

namespace staging {

bool SlotFence::transition(uint64_t gen, SlotState from, SlotState to) noexcept {
  uint64_t expected = pack(gen, from);
  return word_.compare_exchange_strong(expected, pack(gen, to), std::memory_order_acq_rel,
                                       std::memory_order_acquire);
}

void SlotFence::reset(uint64_t gen, SlotState state) noexcept {
  word_.store(pack(gen, state), std::memory_order_release);
}

FenceToken::FenceToken(FenceToken&& other) noexcept
    : fence_(std::move(other.fence_)), generation_(other.generation_), slot_(other.slot_) {
  other.fence_.reset();
}

FenceToken& FenceToken::operator=(FenceToken&& other) noexcept {
  if (this != &other) {
    abandon();
    fence_ = std::move(other.fence_);
    other.fence_.reset();
    generation_ = other.generation_;
    slot_ = other.slot_;
  }
  return *this;
}

FenceToken::~FenceToken() {
  abandon();
}

bool FenceToken::signal() noexcept {
  return fire(SlotState::Ready);
}
bool FenceToken::abandon() noexcept {
  return fire(SlotState::Abandoned);
}
bool FenceToken::fail() noexcept {
  return fire(SlotState::Failed);
}

bool FenceToken::fire(SlotState to) noexcept {
  if (!fence_) return false;
  const bool moved = fence_->transition(generation_, SlotState::InFlight, to);
  fence_.reset();  // one-shot: a token fires at most once
  return moved;
}

}  // namespace staging
