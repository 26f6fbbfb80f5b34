// SlotFence and FenceToken: one slot's state, shared between the ring and whoever learns that the
// GPU has finished reading it: the completion signal is the slot's fence.
//
// A SlotFence holds the slot's SlotState and a generation number in one atomic word. Every time
// a frame takes the slot, the generation advances; a FenceToken or SlotLease carries the
// generation it was issued for, so a late or duplicate signal from an older frame can never flip
// a newer frame's slot. This is the retirement model of timeline.hpp with a timeline of one step.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "staging/core/slot_ring.hpp"

namespace staging {

template <class Buffer>
class StagingRing;
class SlotLease;

/// One slot's state and generation, shared (through std::shared_ptr) by the ring, the slot's
/// current lease and its FenceToken. Created by StagingRing; changed only by the ring, the
/// slot's SlotLease (Recording -> Ready when dropped) and its FenceToken (InFlight -> Ready,
/// Abandoned or Failed). Everyone else may only read it. Not copyable or movable.
///
/// Threading: every member is safe from any thread (one atomic word, acquire/release ordering:
/// a signal() that makes the slot Ready happens-before the ring's next write into the slot).
class SlotFence {
 public:
  SlotFence() = default;
  SlotFence(const SlotFence&) = delete;
  SlotFence& operator=(const SlotFence&) = delete;

  /// The slot's state now. May change concurrently by a signal from another thread.
  [[nodiscard]] SlotState state() const noexcept { return unpack_state(word_.load(acquire)); }
  /// The generation of the frame that last took the slot (0 before the first frame). 56 bits:
  /// it wraps after 2^56 frames of one slot (never, in practice).
  [[nodiscard]] uint64_t generation() const noexcept { return word_.load(acquire) >> 8; }

 private:
  template <class Buffer>
  friend class StagingRing;
  friend class SlotLease;
  friend class FenceToken;

  static constexpr std::memory_order acquire = std::memory_order_acquire;
  static constexpr uint64_t pack(uint64_t gen, SlotState s) noexcept {
    return (gen << 8) | static_cast<uint64_t>(s);
  }
  static constexpr SlotState unpack_state(uint64_t w) noexcept {
    return static_cast<SlotState>(w & 0xff);
  }

  /// Atomically moves (gen, from) to (gen, to); false when the slot is no longer at (gen, from).
  bool transition(uint64_t gen, SlotState from, SlotState to) noexcept;
  /// Unconditionally sets (gen, state); only the ring's thread calls this, and only for a slot no
  /// lease or pending token can touch (Empty, Ready, Abandoned, Failed).
  void reset(uint64_t gen, SlotState state) noexcept;

  std::atomic<uint64_t> word_{pack(0, SlotState::Empty)};
};

/// The one-shot signal a slot in flight is waiting for, returned by StagingRing::finish().
///
/// Whoever learns that the GPU has finished the frame's copies calls signal() (a backend's poll,
/// a map callback, a CUDA host function); the slot becomes Ready. Move-only.
///
/// Destroying (or assigning over) a token that has not fired abandons its slot, as abandon()
/// does: work dropped rather than submitted drops its signal with it. The slot becomes
/// Abandoned, and the next time it is picked its buffer is replaced: a fresh one is created and
/// the old one released (its Buffer destroyed, see StagingAllocator). The ring cannot tell
/// whether the GPU still reads that old buffer, so a backend lets a token go unfired only for a
/// frame nothing submitted reads (its encoder or command buffer dropped, not submitted), or
/// where its Buffer's release is deferred until the GPU is done with it (as WebGPU's is: the
/// runtime keeps a dropped buffer alive until every submission naming it has retired). A
/// backend whose submitted frame may still be read, and whose release is immediate, keeps the
/// token until the frame is done and fires it then; it calls abandon() or fail() early only
/// when nothing reads the slot.
///
/// Threading: the token object itself is not synchronised (one thread uses a given token at a
/// time), but it may be fired from any thread, concurrently with the ring's own calls.
/// Lifetime: may outlive the ring (it shares the SlotFence); firing it then changes only the
/// orphaned fence (the call may still return true) and affects no ring.
class FenceToken {
 public:
  /// An empty token: pending() is false and every firing call returns false.
  FenceToken() = default;
  /// Takes `other`'s signal; `other` is left empty (not pending).
  FenceToken(FenceToken&& other) noexcept;
  /// Abandons a still-pending token held by *this first (as on destruction), then takes
  /// `other`'s.
  FenceToken& operator=(FenceToken&& other) noexcept;
  FenceToken(const FenceToken&) = delete;
  FenceToken& operator=(const FenceToken&) = delete;
  /// Abandons the slot if the token is still pending: its buffer is replaced on the next pick
  /// (see above for when that is safe).
  ~FenceToken();

  /// The GPU has finished reading the slot: InFlight → Ready. Returns false (and changes no
  /// slot) when the token is empty, already fired, or stale (the slot is no longer InFlight for
  /// this token's generation). Either way the token is spent: pending() is false afterwards.
  bool signal() noexcept;
  /// The frame's work will never run (command buffer dropped, never submitted): InFlight →
  /// Abandoned. The buffer is replaced on the next pick (the old one released), so call it only
  /// when no copy of the frame reads the slot, or when the backend's release of a buffer is
  /// deferred until the GPU is done with it. Returns false as signal() does.
  bool abandon() noexcept;
  /// The device was lost or the slot's re-mapping failed: InFlight → Failed. Replaced on the
  /// next pick. Returns false as signal() does.
  bool fail() noexcept;

  /// True until the token is fired (signal, abandon, fail), moved from, or destroyed.
  [[nodiscard]] bool pending() const noexcept { return fence_ != nullptr; }
  /// The slot index this token signals; meaningless for an empty token.
  [[nodiscard]] std::size_t slot() const noexcept { return slot_; }
  /// The frame generation this token was issued for.
  [[nodiscard]] uint64_t generation() const noexcept { return generation_; }

 private:
  template <class Buffer>
  friend class StagingRing;
  FenceToken(std::shared_ptr<SlotFence> fence, uint64_t generation, std::size_t slot) noexcept
      : fence_(std::move(fence)), generation_(generation), slot_(slot) {}
  bool fire(SlotState to) noexcept;

  std::shared_ptr<SlotFence> fence_;
  uint64_t generation_ = 0;
  std::size_t slot_ = 0;
};

}  // namespace staging
