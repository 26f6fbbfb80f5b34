// SlotLease: one frame's hold on one slot — the bump cursor its uploads are placed at.
//
// Every placement is aligned and overflow-checked; one that does not fit is refused (an error
// value), never written past the slot (invariant I4). The lease knows offsets, not memory: a
// backend's frame turns an offset into a pointer into the slot's mapped buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "staging/core/errors.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/slot_fence.hpp"

namespace staging {

/// Why a placement was refused. A refused placement leaves the cursor where it was; only
/// refused() counts it (except Inactive).
enum class PlaceError : uint8_t {
  /// size was 0: no copy API accepts an empty region, so an empty placement is a caller bug.
  ZeroSize,
  /// The aligned offset or offset + size does not fit in 64 bits.
  Overflow,
  /// The aligned placement would end past the slot's capacity.
  DoesNotFit,
  /// The lease was moved from or already finished.
  Inactive,
};

/// Names of PlaceError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<PlaceError>) noexcept {
  return std::to_array<std::string_view>({"ZeroSize", "Overflow", "DoesNotFit", "Inactive"});
}
static_assert(enum_names_complete<PlaceError>(), "PlaceError: a value has no name");

/// One frame's hold on one slot, from StagingRing::begin() to StagingRing::finish().
///
/// Ownership: move-only. While a lease is held its slot is Recording. Destroying a lease that was
/// not finished returns the slot to Ready — correct because no copy reads a slot before finish()
/// (backends record copies at finish). Finishing consumes the lease.
/// Threading: not synchronised; one thread uses a lease at a time. The lease may be used on a
/// different thread than the ring's (e.g. a worker filling a frame), as long as calls to it and
/// to the ring about it do not overlap.
/// Lifetime: may outlive its ring (it shares only the SlotFence); dropping it then affects no
/// ring.
class SlotLease {
 public:
  /// An inactive lease (every place() answers Inactive).
  SlotLease() = default;
  /// Takes `other`'s lease; `other` is left inactive.
  SlotLease(SlotLease&& other) noexcept;
  /// Releases a lease held by *this first (as the destructor does), then takes `other`'s.
  SlotLease& operator=(SlotLease&& other) noexcept;
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  /// Returns an unfinished slot to Ready.
  ~SlotLease();

  /// Places `size` bytes at the cursor rounded up to `alignment` (0 is treated as 1; any value,
  /// not only powers of two) and advances the cursor past them. Returns the offset in the slot.
  /// Errors: ZeroSize, Overflow, DoesNotFit, Inactive — the cursor is then unchanged.
  Expected<uint64_t, PlaceError> place(uint64_t size, uint64_t alignment) noexcept;

  /// True between begin() and finish() (or destruction, or being moved from).
  [[nodiscard]] bool active() const noexcept { return fence_ != nullptr; }
  /// The slot index; meaningless when inactive.
  [[nodiscard]] std::size_t slot() const noexcept { return slot_; }
  /// The slot buffer's capacity in bytes (>= the `needed` given to begin()); meaningless when
  /// inactive.
  [[nodiscard]] uint64_t capacity() const noexcept { return capacity_; }
  /// The bump cursor: the end of the last placement (including its alignment padding).
  [[nodiscard]] uint64_t cursor() const noexcept { return cursor_; }
  /// capacity() - cursor(): the most an unaligned placement can still take.
  [[nodiscard]] uint64_t remaining() const noexcept { return capacity_ - cursor_; }
  /// Number of placements made.
  [[nodiscard]] uint64_t placements() const noexcept { return placements_; }
  /// Number of placements refused (ZeroSize, Overflow, DoesNotFit; not Inactive).
  [[nodiscard]] uint64_t refused() const noexcept { return refused_; }
  /// Bytes placed, without alignment padding.
  [[nodiscard]] uint64_t bytes_placed() const noexcept { return bytes_placed_; }
  /// The frame generation this lease holds the slot for.
  [[nodiscard]] uint64_t generation() const noexcept { return generation_; }

 private:
  template <class Buffer>
  friend class StagingRing;
  SlotLease(std::shared_ptr<SlotFence> fence, uint64_t generation, std::size_t slot,
            uint64_t capacity) noexcept
      : fence_(std::move(fence)), generation_(generation), slot_(slot), capacity_(capacity) {}
  void release() noexcept;

  std::shared_ptr<SlotFence> fence_;
  uint64_t generation_ = 0;
  std::size_t slot_ = 0;
  uint64_t capacity_ = 0;
  uint64_t cursor_ = 0;
  uint64_t placements_ = 0;
  uint64_t refused_ = 0;
  uint64_t bytes_placed_ = 0;
};

}  // namespace staging
