// StagingRing: the slot ring. A handful of persistently reused staging buffers ("slots");
// one frame's uploads at a time go into one slot, which is reused only once the GPU is done with
// it. Buffer-generic: a backend instantiates it with its own buffer type and StagingAllocator;
// tests use a fake allocator and fire FenceTokens by hand. The engine under vulkan::Ring
// (a slot ring, the default) and webgpu::StagingRing, not part of the API: its vocabulary
// (configuration, refusals, counters) is public in staging/core/slot_ring.hpp.
//
// Retirement: a finished frame's slot is InFlight until the ring is told the GPU has read it, in
// one of two ways — both the one model of timeline.hpp, completion handed in as a value:
//   finish(lease, value)  the slot waits for `value` on the owner's queue timeline; the owner
//                         hands the queue's completed value to retire(completed) (a semaphore
//                         or fence value it read), which makes Ready every slot whose value is
//                         reached — as ByteRing::retire() does for bytes;
//   finish(lease)         the slot waits for the returned FenceToken: a timeline of one step,
//                         fired by whoever learns the frame is done (a map callback). A token
//                         destroyed unfired abandons the slot: its buffer is replaced (the old
//                         one released) on the next pick, so a backend drops a token unfired
//                         only for a frame nothing submitted reads, or where its buffers'
//                         release is deferred until the GPU is done (see FenceToken).
// The ring never asks anyone: begin() looks only at the slots' states. Retire before begin()
// so that a frame the GPU has just finished gives its slot back.
//
// Which slot a frame gets (begin):
//   1. a Ready slot whose buffer already fits the frame (the smallest such; lowest index on ties);
//   2. else a Ready slot too small, grown in place (the largest such) to slot_capacity(needed);
//   3. else an Abandoned or Failed slot, given a fresh buffer (at least its old capacity);
//   4. else an Empty slot, created at slot_capacity(needed);
//   5. else refuse (RingFull). A frame larger than the largest slot is refused (TooLarge)
//      before any of this. The caller then takes the other route for that frame — "a refusal
//      costs time, never pixels".
// A slot that is Recording or InFlight is never picked, grown or replaced.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "staging/core/errors.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/limits.hpp"
#include "staging/detail/core/ring_slot.hpp"
#include "staging/detail/core/slot_fence.hpp"
#include "staging/detail/core/slot_lease.hpp"
#include "staging/detail/core/staging_allocator.hpp"

namespace staging {

/// The slots, their capacities and fences: one frame's staging memory at a time, reused once the
/// GPU is done with it.
///
/// Ownership: owns the slot buffers; references the allocator, which must outlive the ring.
/// Destroying the ring destroys every buffer — the owner must first make sure no slot is still
/// read by the GPU (backends wait for their in-flight points). Outstanding FenceTokens and
/// SlotLeases stay safe to use and destroy (they share only the SlotFence).
/// Memory: between calls the slots hold at most slot_count() × the largest slot. While begin()
/// grows or replaces a slot it creates the new buffer before releasing the old one (so that a
/// failed growth keeps the old), so for that moment one more buffer is held
/// (stats().peak_bytes_allocated counts it).
/// Threading: begin(), finish(), retire(), abandon(), fail_in_flight() and every query are
/// called from one thread at a time (the ring's owner); FenceTokens may be fired, and SlotLeases
/// dropped, from any thread concurrently with them. From inside its calls the ring calls only
/// the allocator, which must not call the ring. Movable; a moved-from ring may only be
/// destroyed or assigned to, and misuse is checked: begin() aborts with a message
/// (STAGING_ASSERT), finish() answers ForeignLease (the lease belongs to the ring it was moved
/// to), slot_count() is 0 so every per-slot query aborts.
template <class Buffer>
class StagingRing {
 public:
  /// Makes a ring over `allocator` (which must outlive it). No buffer is created yet.
  /// Errors: validate(config)'s CreateError.
  static Expected<StagingRing, CreateError> create(StagingAllocator<Buffer>& allocator,
                                                   StagingRingConfig config = {}) {
    auto valid = validate(config);
    if (!valid) return unexpected(valid.error());
    return StagingRing(allocator, config);
  }

  /// Moves the ring; the moved-from ring may only be destroyed or assigned to.
  StagingRing(StagingRing&&) noexcept = default;
  /// Replaces this ring with `other` (this one's slots are released as by its destructor);
  /// `other` is left as after the move constructor.
  StagingRing& operator=(StagingRing&&) noexcept = default;
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing() = default;

  /// Gives a frame that will place at most `needed` bytes (alignment padding included) a slot:
  /// the slot becomes Recording and the returned lease's capacity is >= needed. See the file
  /// comment for which slot. Errors (UploadError): TooLarge, RingFull (every slot in flight),
  /// AllocationFailed; each is counted in stats(). `needed` may be 0: any Ready slot fits (the
  /// smallest is taken), and a new slot is made at min_slot_bytes.
  Expected<SlotLease, UploadError> begin(uint64_t needed) {
    STAGING_ASSERT(!slots_.empty(), "StagingRing::begin() on a ring that was moved from");
    const std::optional<uint64_t> capacity =
        slot_capacity(needed, config_.min_slot_bytes, config_.max_slot_bytes);
    if (!capacity) {
      ++stats_.refusals_too_large;
      return unexpected(UploadError::TooLarge);
    }
    if (const std::optional<std::size_t> pick = choose(needed)) return take(*pick, *capacity);
    ++stats_.refusals_all_in_flight;
    return unexpected(UploadError::RingFull);
  }

  /// Ends a frame's recording: the slot becomes InFlight and the returned token is the one-shot
  /// signal that makes it Ready again once the GPU has read it (see FenceToken). Consumes the
  /// lease. Errors: Inactive, ForeignLease (the lease is then left untouched).
  Expected<FenceToken, FinishError> finish(SlotLease&& lease) {
    if (!lease.active()) return unexpected(FinishError::Inactive);
    if (lease.slot_ >= slots_.size() || lease.fence_ != slots_[lease.slot_].fence) {
      return unexpected(FinishError::ForeignLease);
    }
    Slot& slot = slots_[lease.slot_];
    const bool moved =
        slot.fence->transition(lease.generation_, SlotState::Recording, SlotState::InFlight);
    STAGING_ASSERT(moved, "a leased slot left Recording while its lease was held");
    ++stats_.frames_finished;
    stats_.placements += lease.placements_;
    stats_.placements_refused += lease.refused_;
    stats_.bytes_placed += lease.bytes_placed_;
    FenceToken token(std::move(lease.fence_), lease.generation_, lease.slot_);
    lease.fence_.reset();
    return token;
  }

  /// Ends a frame's recording as finish(lease) does, but the ring keeps the token: the slot
  /// becomes Ready at the first retire(completed) with completed >= `value` (the value the
  /// frame's submission signals on the owner's queue timeline). Errors as finish(lease).
  Expected<void, FinishError> finish(SlotLease&& lease, TimelineValue value) {
    const std::size_t index = lease.slot_;
    Expected<FenceToken, FinishError> token = finish(std::move(lease));
    if (!token) return unexpected(token.error());
    slots_[index].held = std::move(*token);
    slots_[index].value = value;
    return {};
  }

  /// The queue's timeline has reached `completed`: every slot finished with a value <= the
  /// highest completed value handed in so far becomes Ready. Returns how many did. A value below
  /// one seen before is treated as that higher one (the timeline never goes back), as
  /// ByteRing::retire() does. Slots finished with a FenceToken are the token's to fire; retire()
  /// does not touch them.
  std::size_t retire(TimelineValue completed) noexcept {
    completed_ = std::max(completed_, completed);
    std::size_t retired = 0;
    for (Slot& slot : slots_) {
      if (slot.held.pending() && slot.value <= completed_ && slot.held.signal()) ++retired;
    }
    return retired;
  }
  /// The submission meant to signal `value` will never happen: every slot finished with exactly
  /// that value becomes Abandoned (its buffer is replaced on the next pick). Returns how many.
  std::size_t abandon(TimelineValue value) noexcept {
    std::size_t abandoned = 0;
    for (Slot& slot : slots_) {
      if (slot.held.pending() && slot.value == value && slot.held.abandon()) ++abandoned;
    }
    return abandoned;
  }
  /// The device was lost: every slot finished with a value and not yet retired becomes Failed
  /// (replaced on the next pick). Returns how many.
  std::size_t fail_in_flight() noexcept {
    std::size_t failed = 0;
    for (Slot& slot : slots_) {
      if (slot.held.pending() && slot.held.fail()) ++failed;
    }
    return failed;
  }

  /// The buffer of the slot `lease` holds. Precondition: the lease is active and from this ring;
  /// aborts otherwise. The reference is valid until the lease is finished or dropped.
  [[nodiscard]] Buffer& buffer(const SlotLease& lease) {
    STAGING_ASSERT(
        lease.active() && lease.slot_ < slots_.size() && lease.fence_ == slots_[lease.slot_].fence,
        "buffer() needs an active lease of this ring");
    return *slots_[lease.slot_].buffer;
  }
  /// The buffer of slot `index`, or null when the slot has none (Empty, or Failed after a
  /// failed creation). Precondition: index < slot_count(); aborts otherwise. The pointer is valid
  /// until the next begin() (which may grow or replace the buffer).
  [[nodiscard]] const Buffer* buffer(std::size_t index) const {
    STAGING_ASSERT(index < slots_.size(), "slot index out of range");
    return slots_[index].buffer ? &*slots_[index].buffer : nullptr;
  }

  /// Number of slots (StagingRingConfig::slots).
  [[nodiscard]] std::size_t slot_count() const noexcept { return slots_.size(); }
  /// Slot `index`'s state now (a concurrent FenceToken may change it right after). Precondition:
  /// index < slot_count(); aborts otherwise.
  [[nodiscard]] SlotState state(std::size_t index) const {
    STAGING_ASSERT(index < slots_.size(), "slot index out of range");
    return slots_[index].fence->state();
  }
  /// Slot `index`'s buffer capacity in bytes (0 when it has no buffer). Precondition:
  /// index < slot_count(); aborts otherwise.
  [[nodiscard]] uint64_t capacity(std::size_t index) const {
    STAGING_ASSERT(index < slots_.size(), "slot index out of range");
    return slots_[index].capacity;
  }
  /// The configuration the ring was created with.
  [[nodiscard]] const StagingRingConfig& config() const noexcept { return config_; }
  /// What the ring has done so far. A diagnostic, never a decision input.
  [[nodiscard]] const StagingStats& stats() const noexcept { return stats_; }
  /// The allocator's error behind the last AllocationFailed refusal, if any (kept until the next
  /// one; a later success does not clear it).
  [[nodiscard]] std::optional<AllocError> last_alloc_error() const noexcept {
    return last_alloc_error_;
  }

 private:
  using Slot = detail::RingSlot<Buffer>;

  StagingRing(StagingAllocator<Buffer>& allocator, StagingRingConfig config)
      : allocator_(&allocator), config_(config), slots_(config.slots) {}

  // Steps 1–4 of the file comment. Reads each slot's state once, so a concurrent signal can only
  // make a later read see more Ready slots, never hand out a slot that is not Ready.
  std::optional<std::size_t> choose(uint64_t needed) const {
    std::optional<std::size_t> fit, grow, replace, empty;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      switch (s.fence->state()) {
        case SlotState::Ready:
          if (s.capacity >= needed) {
            if (!fit || s.capacity < slots_[*fit].capacity) fit = i;
          } else if (!grow || s.capacity > slots_[*grow].capacity) {
            grow = i;
          }
          break;
        case SlotState::Abandoned:
        case SlotState::Failed:
          if (!replace) replace = i;
          break;
        case SlotState::Empty:
          if (!empty) empty = i;
          break;
        case SlotState::Recording:
        case SlotState::InFlight:
          break;
      }
    }
    if (fit) return fit;
    if (grow) return grow;
    if (replace) return replace;
    return empty;
  }

  // Gives slot `index` a big-enough buffer if it needs one, then hands it to a frame.
  Expected<SlotLease, UploadError> take(std::size_t index, uint64_t wanted) {
    Slot& slot = slots_[index];
    SlotFence& fence = *slot.fence;
    const SlotState state = fence.state();  // not Recording/InFlight: only this thread moves it
    const uint64_t generation = fence.generation();
    if (state != SlotState::Ready || slot.capacity < wanted) {
      if (state == SlotState::Abandoned) ++stats_.abandoned_seen;
      if (state == SlotState::Failed) ++stats_.failed_seen;
      const uint64_t capacity =
          state == SlotState::Ready ? wanted : std::max(wanted, slot.capacity);
      Expected<Buffer, AllocError> made = allocator_->create(capacity);
      if (!made) {
        last_alloc_error_ = made.error();
        ++stats_.refusals_allocation_failed;
        if (state != SlotState::Ready) {  // creation or replacement failed: the slot is Failed
          drop_buffer(slot);
          fence.reset(generation, SlotState::Failed);
        }
        return unexpected(UploadError::AllocationFailed);
      }
      if (state == SlotState::Ready)
        ++stats_.slots_grown;
      else if (state == SlotState::Empty)
        ++stats_.slots_created;
      else
        ++stats_.slots_replaced;
      // The old buffer (if any) is released after the new one exists: both count toward the peak.
      stats_.peak_bytes_allocated =
          std::max(stats_.peak_bytes_allocated, stats_.bytes_allocated + capacity);
      drop_buffer(slot);
      slot.buffer.emplace(std::move(*made));
      slot.capacity = capacity;
      stats_.bytes_allocated += capacity;
    }
    const uint64_t next = generation + 1;
    fence.reset(next, SlotState::Recording);
    ++stats_.frames_begun;
    return SlotLease(slot.fence, next, index, slot.capacity);
  }

  void drop_buffer(Slot& slot) {
    stats_.bytes_allocated -= slot.capacity;
    slot.buffer.reset();
    slot.capacity = 0;
  }

  StagingAllocator<Buffer>* allocator_;
  StagingRingConfig config_;
  std::vector<Slot> slots_;
  StagingStats stats_;
  std::optional<AllocError> last_alloc_error_;
  TimelineValue completed_ = 0;  ///< the highest value retire() was handed
};

}  // namespace staging
