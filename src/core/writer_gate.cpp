// WriterGate: see include/staging/detail/core/writer_gate.hpp.
#include "staging/detail/core/writer_gate.hpp"

#include <chrono>

#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/clock.hpp"

namespace staging {

void WriterGate::open() noexcept {
  uint64_t expected = kSealed;
  // release: what the owner prepared (the batch's memory, its cursor) is seen by the writers
  // that enter after this.
  const bool opened = state_.compare_exchange_strong(expected, 0, std::memory_order_release,
                                                     std::memory_order_relaxed);
  STAGING_ASSERT(opened, "WriterGate::open() on a gate that is open or has writers inside");
}

bool WriterGate::enter() noexcept {
  uint64_t s = state_.load(std::memory_order_relaxed);
  do {
    if ((s & kSealed) != 0 || (s & kCountMask) == kCountMask) return false;
  } while (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                         std::memory_order_relaxed));
  return true;
}

bool WriterGate::leave() noexcept {
  // acq_rel: release publishes this writer's bytes; acquire lets the last writer of a sealed gate
  // see every other writer's bytes (it may hand the batch on).
  const uint64_t before = state_.fetch_sub(1, std::memory_order_acq_rel);
  STAGING_ASSERT((before & kCountMask) != 0, "WriterGate::leave() without a writer inside");
  if (before != (kSealed | 1)) return false;
  // The gate drained: wake an owner sleeping in wait_drained(). Taking the mutex orders this
  // notification after its check of the predicate (no lost wake-up).
  { std::lock_guard lock(mutex_); }
  cv_.notify_all();
  return true;
}

uint32_t WriterGate::seal() noexcept {
  const uint64_t before = state_.fetch_or(kSealed, std::memory_order_acq_rel);
  return static_cast<uint32_t>(before & kCountMask);
}

bool WriterGate::wait_drained(Duration timeout) {
  if (drained()) return true;
  if (!sealed()) return false;
  const Deadline deadline(SteadyClock::instance(), timeout);
  std::unique_lock lock(mutex_);
  while (!drained() && !deadline.passed())
    cv_.wait_for(lock, deadline.remaining());
  return drained();
}

uint32_t WriterGate::writers() const noexcept {
  return static_cast<uint32_t>(state_.load(std::memory_order_acquire) & kCountMask);
}

bool WriterGate::sealed() const noexcept {
  return (state_.load(std::memory_order_acquire) & kSealed) != 0;
}

bool WriterGate::drained() const noexcept {
  return state_.load(std::memory_order_acquire) == kSealed;
}

}  // namespace staging
