// Internal: StrategyEngine, the narrow interface between a Ring's frames and the core strategy that
// holds their staging bytes. The frame recorder (frame.cpp, recorder.cpp) and the retirement step
// (retirement.cpp) talk to a StrategyEngine only; which one placed a frame's bytes they never know.
//
//   begin(frame, needed)           a frame opens (the slot strategy takes a slot or refuses)
//   place(frame, size, alignment)  bytes for one upload, or a miss (the frame falls back)
//   flush(frame)                   the frame's writes made visible to the device
//   end(frame)                     the frame was recorded: its bytes are the GPU's now
//   release(frame, how, completed) its bytes are no longer read; `completed` is the frame
//                                  sequence's completed value (every frame <= it is released)
//
// Frames are named by their number on the ring's frame sequence (1, 2, ... in begin order).
// Threading: the ring's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "staging/core/byte_ring.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/detail/vulkan/ring_inspect.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan::detail {

/// Why the ring released a frame's staging memory (reported as EventKind::FrameRelease).
enum class Release : uint8_t {
  /// Its point was reached (or superseded by a later value on the same semaphore).
  Retired,
  /// Reported with Ring::abandon().
  Abandoned,
  /// The device was lost.
  Failed,
  /// The frame was destroyed unfinished (nothing was recorded).
  Dropped,
};

/// Where one placement's bytes are.
struct Staged {
  VkBuffer buffer = VK_NULL_HANDLE;  ///< the staging buffer
  uint64_t capacity = 0;             ///< its size
  uint64_t offset = 0;               ///< the placement's offset in it
  std::byte* ptr = nullptr;          ///< the placement's mapped address
};

/// What place() answered.
struct PlaceResult {
  /// Why nothing was placed.
  enum class Miss : uint8_t {
    /// An offset or size computation overflows.
    Overflow,
    /// The strategy has no room for it now (the ring's policy decides what happens).
    NoRoom,
  };
  /// The bytes, or none (then `miss` says why).
  std::optional<Staged> staged;
  Miss miss = Miss::NoRoom;
  /// The strategy learned that frames completed while placing (it waited, or looked at the
  /// queue): the ring releases them before the placed bytes are written.
  bool completion_advanced = false;
};

class StrategyEngine {
 public:
  virtual ~StrategyEngine() = default;
  /// Frame `frame` opens and will place at most `needed` bytes (padding included).
  virtual Expected<void, UploadError> begin(uint64_t frame, uint64_t needed) = 0;
  /// Places `size` (> 0) bytes aligned to `alignment` for open frame `frame`.
  virtual PlaceResult place(uint64_t frame, uint64_t size, uint64_t alignment) = 0;
  /// Flushes what open frame `frame` wrote (non-coherent memory). Errors: the first failed
  /// flush's (the frame stays open).
  virtual Expected<void, AllocError> flush(uint64_t frame) = 0;
  /// Open frame `frame` was recorded; its bytes are read until release().
  virtual void end(uint64_t frame) = 0;
  /// Frame `frame` (open or ended; or one this strategy never saw) no longer holds its bytes,
  /// for reason `how`; the frame sequence has completed through `completed`.
  virtual void release(uint64_t frame, Release how, TimelineValue completed) noexcept = 0;

  /// Adds the strategy's counters to `stats` (Stats::strategy: its own alternative).
  virtual void add_stats(Stats& stats) const = 0;
  /// The largest placement the strategy could ever make (the largest slot, the byte ring's
  /// cap): an upload above it never fits, in any frame.
  [[nodiscard]] virtual uint64_t largest_placement() const noexcept = 0;
  /// Slot `index`'s state and capacity; none for the byte strategy or an index out of range.
  [[nodiscard]] virtual std::optional<SlotInfo> slot(std::size_t index) const = 0;
  /// Number of slots (0 for the byte strategy).
  [[nodiscard]] virtual std::size_t slot_count() const noexcept = 0;
  /// The byte ring (null for the slot strategy).
  [[nodiscard]] virtual const ByteRing* byte_ring() const noexcept = 0;
  /// The byte ring's answer behind the last NoRoom (none for the slot strategy).
  [[nodiscard]] virtual const std::optional<ReserveError>& last_refusal() const noexcept = 0;
};

}  // namespace staging::vulkan::detail
