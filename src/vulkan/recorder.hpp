// Internal: records a finished frame's commands into its command buffer — the barrier before the
// copies (prior users, layout transitions), the copies batched per source and destination, the
// vkCmdUpdateBuffer commands, and the one barrier that makes everything visible to the
// consumers. Knows nothing of strategies or retirement. Keeps its scratch vectors between
// frames (no allocation in steady state). Not installed.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "frame_state.hpp"
#include "staging/vulkan/dispatch.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan::detail {

class CopyRecorder {
 public:
  explicit CopyRecorder(const Dispatch& dispatch) noexcept : vk_(&dispatch) {}

  /// The barrier before the copies: from `vis.prior_*` (when set) to the copies, with the image
  /// layout transitions the copies need. Records nothing when nothing needs it.
  void barrier_before(const FrameState& f, const Visibility& vis, Stats& counters);
  /// The copies (sorted and batched: one command per source and destination, regions that
  /// continue each other merged) and the update commands.
  void copies(FrameState& f, Stats& counters);
  /// The one barrier from the copies to `vis`'s consumers, with the final image layouts.
  void barrier_after(const FrameState& f, const Visibility& vis, Stats& counters);

 private:
  void buffer_copies(FrameState& f, Stats& counters);
  void image_copies(FrameState& f, Stats& counters);
  void buffer_barrier(const BufferDest& d, VkPipelineStageFlags2 src_stages,
                      VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                      VkAccessFlags2 dst_access);
  void image_barriers(const ImageDest& d, VkPipelineStageFlags2 src_stages,
                      VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                      VkAccessFlags2 dst_access, VkImageLayout from, VkImageLayout to);
  void record_barrier(VkCommandBuffer cmd, Stats& counters);

  const Dispatch* vk_;
  std::vector<VkBufferCopy> buffer_regions_;
  std::vector<VkBufferImageCopy> image_regions_;
  std::vector<VkBufferMemoryBarrier2> buffer_barriers_;
  std::vector<VkImageMemoryBarrier2> image_barriers_;
  std::vector<std::pair<uint32_t, uint32_t>> layers_;
};

/// The layout the copies write an image in: GENERAL stays GENERAL, anything else is moved to
/// TRANSFER_DST_OPTIMAL first.
[[nodiscard]] inline VkImageLayout copy_layout(VkImageLayout old_layout) noexcept {
  return old_layout == VK_IMAGE_LAYOUT_GENERAL ? VK_IMAGE_LAYOUT_GENERAL
                                               : VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
}

}  // namespace staging::vulkan::detail
