// staging-bench --replay: the destinations, the source and the read-back check
// (vulkan_replay_targets.hpp).
#include "vulkan_replay_targets.hpp"

#include <algorithm>
#include <cstring>

#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {

void ReplayTargets::release() {
  vk_.destroy(device_);
  vk_.destroy(host_);
  vk_.destroy(readback_);
  for (Image& i : images_)
    vk_.destroy(i);
  images_.clear();
}

std::string ReplayTargets::make(uint64_t seed) {
  vkDeviceWaitIdle(vk_.device());
  release();
  source_.resize(plan_.source_bytes);
  fill_random(source_.data(), source_.size(), seed);
  const uint64_t buffer_bytes = std::max<uint64_t>(plan_.buffer_bytes, 256);
  uint64_t image_bytes = 0;
  for (const PlannedImage& p : plan_.images) {
    images_.push_back(vk_.make_image(VK_FORMAT_R8G8B8A8_UNORM, p.width, p.height, 1));
    if (images_.back().image == VK_NULL_HANDLE) {
      return "cannot make a " + std::to_string(p.width) + "x" + std::to_string(p.height) +
             " R8G8B8A8 image";
    }
    image_bytes += uint64_t{p.width} * p.height * 4;
  }
  constexpr VkBufferUsageFlags kBoth =
      VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  device_ = vk_.make_buffer(buffer_bytes, kBoth, Memory::DeviceLocal);
  host_ = vk_.make_buffer(buffer_bytes, kBoth, Memory::Staging);
  readback_ = vk_.make_buffer(std::max(buffer_bytes, image_bytes), kBoth, Memory::Readback);
  if (device_.buffer == VK_NULL_HANDLE || host_.mapped == nullptr || readback_.mapped == nullptr) {
    return "cannot make the destination buffers (" + std::to_string(buffer_bytes) + " bytes)";
  }
  return {};
}

std::string ReplayTargets::compare(const std::byte* got, const PlannedUpload& u,
                                   const char* where) const {
  const auto diff = first_difference(got, source(u), u.size, 1);
  if (!diff) return {};
  return std::string(to_string(u.kind)) + " upload of " + std::to_string(u.size) + " bytes: byte " +
         std::to_string(*diff) + " differs (" + where + ")";
}

// Copies every image, packed one after the other, into the readback buffer; `offsets` gets
// where each one starts.
bool ReplayTargets::read_images(std::vector<uint64_t>& offsets) {
  std::memset(readback_.mapped, 0, readback_.size);
  return vk_.run_once(vk_.graphics(), [&](VkCommandBuffer cmd) {
    uint64_t offset = 0;
    for (std::size_t i = 0; i < images_.size(); ++i) {
      const PlannedImage& p = plan_.images[i];
      const VkBufferImageCopy region{.bufferOffset = offset,
                                     .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                     .imageExtent = {p.width, p.height, 1}};
      vkCmdCopyImageToBuffer(cmd, images_[i].image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                             readback_.buffer, 1, &region);
      offsets.push_back(offset);
      offset += uint64_t{p.width} * p.height * 4;
    }
  });
}

std::map<std::string, std::string> ReplayTargets::check(
    bool host_writes_in_host_buffer,
    const std::function<std::string(const PlannedUpload&)>& route_of) {
  std::map<std::string, std::string> wrong;
  const auto note = [&](const PlannedUpload& u, const std::byte* got, const char* where) {
    const std::string route = route_of(u);
    if (wrong.count(route) != 0) return;
    std::string what = compare(got, u, where);
    if (!what.empty()) wrong[route] = std::move(what);
  };
  const auto in_host = [&](const PlannedUpload& u) {
    return host_writes_in_host_buffer && u.kind == ReplayKind::HostWrite;
  };
  // The buffers, one after the other through the readback buffer.
  for (const bool host : {false, true}) {
    const Buffer& from = host ? host_ : device_;
    std::memset(readback_.mapped, 0, readback_.size);
    if (!vk_.run_once(vk_.graphics(), [&](VkCommandBuffer cmd) {
          const VkBufferCopy region{0, 0, from.size};
          vkCmdCopyBuffer(cmd, from.buffer, readback_.buffer, 1, &region);
        })) {
      return {{"read-back", "the read-back copy failed"}};
    }
    for (const auto& frame : plan_.frames) {
      for (const PlannedUpload& u : frame) {
        if (u.kind == ReplayKind::ImageCopy || in_host(u) != host) continue;
        note(u, readback_.mapped + u.dst_offset,
             host ? "host-visible buffer" : "device-local buffer");
      }
    }
  }
  std::vector<uint64_t> offsets;
  if (!read_images(offsets)) return {{"read-back", "the image read-back failed"}};
  for (const auto& frame : plan_.frames) {
    for (const PlannedUpload& u : frame) {
      if (u.kind == ReplayKind::ImageCopy) note(u, readback_.mapped + offsets[u.image], "image");
    }
  }
  return wrong;
}

}  // namespace staging::bench::vk
