// The Vulkan code docs/vulkan.md and docs/streaming.md show, compiled with the project's warnings
// (never run: each function is one snippet, its inputs the names the snippet uses). The marked
// regions are what the pages show, line for line (tests/docs/check_snippets.py checks it).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "staging/vulkan.hpp"

namespace docs {

// What a program has on hand around its frames (the snippets' inputs).
struct Material {
  VkImageView texture = VK_NULL_HANDLE;
};

void hand_to_owner(VkBuffer mesh, std::span<const std::byte> vertices);
void write_uniforms(std::span<std::byte> ubo);

inline staging::vulkan::Dispatch dispatch_two_ways(
    VkInstance instance, VkDevice device, PFN_vkGetInstanceProcAddr get_instance_proc_addr) {
  // [snippet:dispatch]
  using namespace staging::vulkan;
  // The system's Vulkan loader (libvulkan), opened at run time:
  Dispatch d = Dispatch::from_loader(instance, device);
  // or through any vkGetInstanceProcAddr (volk's, your own loader's):
  Dispatch e = Dispatch::load(get_instance_proc_addr, instance, device);
  // [snippet-end]
  return d.missing().empty() ? d : e;
}

inline void frame(VkPhysicalDevice physical_device, VkDevice device, VkInstance instance,
                  VkCommandBuffer cmd, VkBuffer vertex_buffer, std::span<const std::byte> vertices,
                  const staging::vulkan::BufferDestination& uniforms, VkImage texture,
                  std::span<const std::byte> texels) {
  using namespace staging::vulkan;
  // [snippet:frame]
  Ring ring =
      Ring::create({physical_device, device, Dispatch::from_loader(instance, device)}).value();

  const ImageRegion level0{.image = texture,
                           .format = VK_FORMAT_BC7_UNORM_BLOCK,
                           .mip_level = 0,
                           .extent = {256, 256, 1}};
  const uint64_t needed = ring.buffer_footprint(vertices.size()) + ring.buffer_footprint(256) +
                          ring.image_footprint(level0).value();
  StagingFrame frame = ring.begin(cmd, needed).value();  // Defer or Wait may refuse: check it

  frame.upload(vertex_buffer, 0, vertices).value();                    // copy from your memory
  std::span<std::byte> ubo = frame.reserve(uniforms, 0, 256).value();  // or write in place
  write_uniforms(ubo);
  frame.upload(level0, texels).value();  // a texture region, tightly packed

  // The copies and one barrier into cmd, for the stages that read the destinations.
  const Visibility readers{
      .stages =
          VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
      .access = VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT | VK_ACCESS_2_SHADER_SAMPLED_READ_BIT};
  RetirementPoint done = frame.finish(readers).value();
  VkSemaphoreSubmitInfo signal = done.submit_info();  // add to VkSubmitInfo2::pSignalSemaphoreInfos
  // [snippet-end]
  (void)signal;
}

inline void shared_frame(staging::vulkan::Ring& ring, VkCommandBuffer cmd, uint64_t needed,
                         VkBuffer mesh, std::span<const std::byte> vertices,
                         const staging::vulkan::Visibility& visibility) {
  using namespace staging::vulkan;
  // [snippet:shared]
  StagingFrame frame = ring.begin(cmd, needed).value();
  SharedUploads shared = frame.share(4 << 20).value();
  // any thread:
  SharedWriter w = shared.join().value();
  auto done = w.upload(mesh, 0, vertices);
  if (!done && done.error() == staging::UploadError::DoesNotFit)
    hand_to_owner(mesh, vertices);  // the owner uploads it through the frame itself
  w.leave();
  // owner:
  shared.seal();
  RetirementPoint point = frame.finish(visibility).value();
  // [snippet-end]
  (void)point;
}

inline void streamer(const staging::vulkan::Device& device,
                     const std::vector<VkQueueFamilyProperties>& families, uint32_t count,
                     VkQueue transfer_queue, uint32_t graphics_family, VkImage texture,
                     VkImageView texture_view, std::span<const std::byte> texels,
                     VkCommandBuffer cmd, std::vector<VkSemaphoreSubmitInfo>& waits,
                     Material& material) {
  // [snippet:streamer]
  using namespace staging;
  using namespace staging::vulkan;

  // The copy engine, where the device has one: create the device with a queue of this family.
  std::optional<uint32_t> transfer = transfer_only_family(families.data(), count);

  auto streamer = Streamer::create(device, {.queue = transfer_queue,
                                            .queue_family = *transfer,
                                            .consumer_family = graphics_family,
                                            .ring_bytes = 64 << 20})
                      .value();

  // Any thread: a whole mip chain, tightly packed, copied from our memory by the streamer.
  const ImageDestination target{.image = texture,
                                .format = VK_FORMAT_BC7_UNORM_BLOCK,
                                .extent = {2048, 2048, 1},
                                .mip_levels = 12};
  StreamTicket ticket = streamer->upload(target, {}, texels, StreamPriority::Prefetch).value();

  // The render thread: swap the texture in once its value is reached (once: one acquire).
  if (material.texture != texture_view && streamer->status(ticket) == StreamStatus::Complete) {
    waits.push_back(streamer->point(ticket)->submit_info(VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT));
    if (streamer->record_acquire(cmd, target, {}, VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
                                 VK_ACCESS_2_SHADER_SAMPLED_READ_BIT)) {
      material.texture = texture_view;
    }
  }
  // [snippet-end]
}

}  // namespace docs
