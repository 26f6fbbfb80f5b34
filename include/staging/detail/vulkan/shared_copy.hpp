// What one shared placement of a Vulkan frame records at finish() (the SharedFrame payload of
// StagingFrame::share()'s space), and the shared state's forward declaration.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>

namespace staging::vulkan::detail {
struct SharedState;
/// What one shared placement records at finish() (the SharedFrame payload). Every upload of every
/// writer writes one, so it is kept to 16 bytes: a buffer upload names its destination and offset;
/// an image upload (buffer null) the index of its copy in the space's table of image copies
/// (SharedState::images), which its writer appended under that table's lock.
/// A writer's buffer uploads that continue each other in one destination (and, back to back, in
/// staging memory) are joined into one placement: one copy, and one entry for finish() to visit.
struct SharedCopy {
  VkBuffer buffer = VK_NULL_HANDLE;  // buffer destination (or null: an image)
  uint64_t at = 0;                   // buffer: the destination offset; image: the table index

  /// True when `next` continues the `first_size` bytes recorded with `first` in the same buffer
  /// (SharedFrame's joined placements); never for images.
  static bool joins(const SharedCopy& first, uint64_t first_size, const SharedCopy& next) noexcept {
    return first.buffer != VK_NULL_HANDLE && next.buffer == first.buffer &&
           next.at == first.at + first_size;
  }
};
}  // namespace staging::vulkan::detail
