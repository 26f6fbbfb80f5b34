#include "recorder.hpp"

#include <algorithm>
#include <functional>

namespace staging::vulkan::detail {
namespace {

constexpr VkPipelineStageFlags2 kCopyStages = VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
constexpr VkAccessFlags2 kCopyAccess = VK_ACCESS_2_TRANSFER_WRITE_BIT;

// The [begin, end) layer ranges a destination's boxes cover, merged.
void merged_layers(const ImageDest& dest, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  out.clear();
  for (const ImageBox& b : dest.boxes)
    out.emplace_back(b.layer_begin, b.layer_end);
  std::sort(out.begin(), out.end());
  std::size_t n = 0;
  for (const auto& r : out) {
    if (n > 0 && r.first <= out[n - 1].second) {
      out[n - 1].second = std::max(out[n - 1].second, r.second);
    } else {
      out[n++] = r;
    }
  }
  out.resize(n);
}

}  // namespace

void CopyRecorder::record_barrier(VkCommandBuffer cmd, Stats& counters) {
  if (buffer_barriers_.empty() && image_barriers_.empty()) return;
  const VkDependencyInfo dep{
      .sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
      .bufferMemoryBarrierCount = static_cast<uint32_t>(buffer_barriers_.size()),
      .pBufferMemoryBarriers = buffer_barriers_.data(),
      .imageMemoryBarrierCount = static_cast<uint32_t>(image_barriers_.size()),
      .pImageMemoryBarriers = image_barriers_.data(),
  };
  vk_->vkCmdPipelineBarrier2(cmd, &dep);
  ++counters.barriers;
}

void CopyRecorder::buffer_barrier(const BufferDest& d, VkPipelineStageFlags2 src_stages,
                                  VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                  VkAccessFlags2 dst_access) {
  const uint64_t lo = d.ranges.front().first;
  const uint64_t hi = d.ranges.back().second;
  buffer_barriers_.push_back(VkBufferMemoryBarrier2{
      .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
      .srcStageMask = src_stages,
      .srcAccessMask = src_access,
      .dstStageMask = dst_stages,
      .dstAccessMask = dst_access,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .buffer = d.buffer,
      .offset = lo,
      .size = hi - lo,
  });
}

void CopyRecorder::image_barriers(const ImageDest& d, VkPipelineStageFlags2 src_stages,
                                  VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                  VkAccessFlags2 dst_access, VkImageLayout from, VkImageLayout to) {
  merged_layers(d, layers_);
  for (const auto& [first, end] : layers_) {
    image_barriers_.push_back(VkImageMemoryBarrier2{
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
        .srcStageMask = src_stages,
        .srcAccessMask = src_access,
        .dstStageMask = dst_stages,
        .dstAccessMask = dst_access,
        .oldLayout = from,
        .newLayout = to,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = d.image,
        .subresourceRange = {d.barrier_aspect, d.mip, 1, first, end - first},
    });
  }
}

void CopyRecorder::barrier_before(const FrameState& f, const Visibility& vis, Stats& counters) {
  const bool prior = vis.prior_stages != 0;
  buffer_barriers_.clear();
  image_barriers_.clear();
  for (const BufferDest& d : f.buffer_dests) {
    if (prior && !d.ranges.empty())
      buffer_barrier(d, vis.prior_stages, vis.prior_access, kCopyStages, kCopyAccess);
  }
  for (const ImageDest& d : f.image_dests) {
    if (!d.boxes.empty() && (prior || d.old_layout != copy_layout(d.old_layout))) {
      image_barriers(d, prior ? vis.prior_stages : VK_PIPELINE_STAGE_2_NONE,
                     prior ? vis.prior_access : VK_ACCESS_2_NONE, kCopyStages, kCopyAccess,
                     d.old_layout, copy_layout(d.old_layout));
    }
  }
  record_barrier(f.cmd, counters);
}

void CopyRecorder::copies(FrameState& f, Stats& counters) {
  buffer_copies(f, counters);
  image_copies(f, counters);
  for (const UpdateCmd& u : f.updates) {
    vk_->vkCmdUpdateBuffer(f.cmd, u.dst, u.offset, u.size, u.data);
    ++counters.update_commands;
  }
}

// One command per (source, destination); regions that continue each other in both buffers
// (consecutive uploads placed back to back) are merged into one.
void CopyRecorder::buffer_copies(FrameState& f, Stats& counters) {
  std::vector<BufferCopyCmd>& all = f.buffer_copies;
  const auto by_buffers = [](const BufferCopyCmd& a, const BufferCopyCmd& b) {
    std::less<> less;
    return a.src != b.src ? less(a.src, b.src) : less(a.dst, b.dst);
  };
  // Most frames copy from one staging buffer to a few destinations in order: no sort then.
  if (!std::is_sorted(all.begin(), all.end(), by_buffers))
    std::stable_sort(all.begin(), all.end(), by_buffers);
  for (std::size_t i = 0; i < all.size();) {
    const BufferCopyCmd& first = all[i];
    buffer_regions_.clear();
    std::size_t j = i;
    for (; j < all.size() && all[j].src == first.src && all[j].dst == first.dst; ++j) {
      const VkBufferCopy& r = all[j].region;
      if (!buffer_regions_.empty()) {
        VkBufferCopy& last = buffer_regions_.back();
        if (last.srcOffset + last.size == r.srcOffset &&
            last.dstOffset + last.size == r.dstOffset) {
          last.size += r.size;
          continue;
        }
      }
      buffer_regions_.push_back(r);
    }
    vk_->vkCmdCopyBuffer(f.cmd, first.src, first.dst, static_cast<uint32_t>(buffer_regions_.size()),
                         buffer_regions_.data());
    ++counters.copy_commands;
    counters.copy_regions += buffer_regions_.size();
    i = j;
  }
}

// One command per (source, destination, layout).
void CopyRecorder::image_copies(FrameState& f, Stats& counters) {
  std::vector<ImageCopyCmd>& all = f.image_copies;
  std::stable_sort(all.begin(), all.end(), [](const ImageCopyCmd& a, const ImageCopyCmd& b) {
    std::less<> less;
    if (a.src != b.src) return less(a.src, b.src);
    if (a.dst != b.dst) return less(a.dst, b.dst);
    return a.layout < b.layout;
  });
  for (std::size_t i = 0; i < all.size();) {
    const ImageCopyCmd& first = all[i];
    image_regions_.clear();
    std::size_t j = i;
    for (; j < all.size() && all[j].src == first.src && all[j].dst == first.dst &&
           all[j].layout == first.layout;
         ++j) {
      image_regions_.push_back(all[j].region);
    }
    vk_->vkCmdCopyBufferToImage(f.cmd, first.src, first.dst, first.layout,
                                static_cast<uint32_t>(image_regions_.size()),
                                image_regions_.data());
    ++counters.copy_commands;
    counters.copy_regions += image_regions_.size();
    i = j;
  }
}

void CopyRecorder::barrier_after(const FrameState& f, const Visibility& vis, Stats& counters) {
  buffer_barriers_.clear();
  image_barriers_.clear();
  for (const BufferDest& d : f.buffer_dests) {
    if (!d.ranges.empty()) buffer_barrier(d, kCopyStages, kCopyAccess, vis.stages, vis.access);
  }
  for (const ImageDest& d : f.image_dests) {
    if (!d.boxes.empty()) {
      image_barriers(d, kCopyStages, kCopyAccess, vis.stages, vis.access, copy_layout(d.old_layout),
                     d.new_layout);
    }
  }
  record_barrier(f.cmd, counters);
}

}  // namespace staging::vulkan::detail
