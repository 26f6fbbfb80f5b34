// What the simulator replays: a list of uploads in time order (a built-in workload or a user's
// trace), plus the queue stalls that go with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "delay_spec.hpp"
#include "staging/core/timeline.hpp"

namespace staging::sim {

/// A payload size stated relative to the ring at the moment the upload is made (the sizes-edge
/// workload: "smaller than, equal to and larger than the contiguous free region"). The byte ring's
/// contiguous free region is ByteRing::largest_free(); the slot ring's is its largest slot.
enum class RelativeSize : uint8_t {
  None,             ///< Upload::size is the size
  FreeMinusOne,     ///< contiguous free region - 1 (at least 1)
  Free,             ///< exactly the contiguous free region (at least 1)
  FreePlusOne,      ///< contiguous free region + 1
  Capacity,         ///< the ring's capacity
  CapacityPlusOne,  ///< the ring's capacity + 1
  TwiceCapacity,    ///< twice the capacity
};

/// One upload: `size` bytes at `alignment`, arriving at `time`.
struct Upload {
  /// When the caller wants to upload it (virtual time since the start).
  Duration time{0};
  /// Payload bytes (> 0), unless `relative` says otherwise.
  uint64_t size = 0;
  /// Offset alignment (>= 1; any value, not only powers of two).
  uint64_t alignment = 1;
  /// Index into Workload::kinds (the stream it belongs to: "buffer", "texture", "chunk", ...).
  uint32_t kind = 0;
  /// The frame it belongs to (>= 0), or -1 when it is not tied to a frame (streaming). Uploads of
  /// one frame that follow each other go into one submission; a streaming upload is submitted on
  /// its own.
  int64_t frame = -1;
  /// Split: chunks are multiples of this (a texture's row pitch); 1 for buffers.
  uint64_t granularity = 1;
  RelativeSize relative = RelativeSize::None;
};

/// The queue stops completing anything at `at` for `length` (then resumes: FakeQueue::release).
struct StallWindow {
  Duration at{0};
  Duration length{0};
};

/// A whole scenario.
struct Workload {
  std::string name;
  /// One line: what it models.
  std::string description;
  /// Names of the upload kinds (Upload::kind indexes this).
  std::vector<std::string> kinds;
  /// In non-decreasing time order.
  std::vector<Upload> uploads;
  std::vector<StallWindow> stalls;
  /// The delay model the workload is meant for (used unless --delay is given).
  std::optional<DelaySpec> default_delay;

  /// The index of kind `kind` in `kinds`, added when new. Constant time (a trace may have a
  /// million kinds).
  uint32_t kind_id(std::string_view kind) {
    const auto [it, added] =
        kind_ids_.try_emplace(std::string(kind), static_cast<uint32_t>(kinds.size()));
    if (added) kinds.emplace_back(kind);
    return it->second;
  }

 private:
  std::unordered_map<std::string, uint32_t> kind_ids_;
};

}  // namespace staging::sim
