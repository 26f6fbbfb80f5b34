// The example's renderer: a grid of textured meshes drawn offscreen (dynamic rendering) into one
// colour image, two frames in flight on the graphics queue, paced by a timeline semaphore. Each
// object draws whatever texture and mesh it is given now; the caller swaps them as the streamer
// completes uploads, adding the waits and acquires those uploads need to the frame.
#pragma once

#include <volk.h>  // Vulkan, loaded at run time

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "streaming_device.hpp"

namespace example {

/// What one object draws now.
struct Drawable {
  VkImageView texture = VK_NULL_HANDLE;
  VkBuffer mesh = VK_NULL_HANDLE;  ///< vertices from 0, indices from index_offset
  uint64_t index_offset = 0;
  uint32_t index_count = 0;
  float tint[4] = {1, 1, 1, 1};
};

class Scene {
 public:
  /// Makes the colour target (width × height RGBA8), pipeline, sampler and per-frame state for
  /// `objects` objects. ok() false (why() set) on failure.
  Scene(StreamingDevice& device, uint32_t width, uint32_t height, uint32_t objects);
  ~Scene();
  Scene(const Scene&) = delete;
  Scene& operator=(const Scene&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const std::string& why() const { return why_; }
  [[nodiscard]] uint32_t objects() const { return static_cast<uint32_t>(drawables_.size()); }

  /// Object `i` draws `d` from the next frame on.
  void set(uint32_t i, const Drawable& d);

  /// Renders one frame: waits (host) until the frame two back has finished, records
  /// `before_draws` (acquire barriers) and the draws, and submits, waiting on `waits`. Returns
  /// the frame's value on the scene's timeline.
  uint64_t render(std::span<const VkSemaphoreSubmitInfo> waits,
                  const std::function<void(VkCommandBuffer)>& before_draws);
  /// True once the frame with `value` has finished on the device.
  [[nodiscard]] bool finished(uint64_t value) const;
  /// Waits for every frame, then reads the colour image back (RGBA8, rows top to bottom).
  std::vector<uint8_t> read_back();

 private:
  bool init();
  bool init_target();
  bool init_descriptors();
  bool init_pipeline();
  void init_commands();
  // Points this slot's descriptor sets at the objects' textures where they changed.
  void update_descriptors(uint32_t slot);
  // Records the frame's rendering: the target cleared, every object drawn.
  void record_draws(VkCommandBuffer cmd, uint32_t slot);
  // Submits the frame's commands on the graphics queue, waiting on `waits`, signalling `value`.
  void submit(VkCommandBuffer cmd, std::span<const VkSemaphoreSubmitInfo> waits, uint64_t value);
  StreamingDevice& d_;
  uint32_t width_, height_;
  bool ok_ = false;
  std::string why_;
  std::vector<Drawable> drawables_;
  // Per object and frame slot: the view its descriptor set holds (to update only on change).
  std::vector<VkImageView> bound_[2];
  std::vector<VkDescriptorSet> sets_[2];
  staging::vulkan::support::Image color_;
  VkImageView color_view_ = VK_NULL_HANDLE;
  VkSampler sampler_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkCommandPool commands_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_[2] = {};
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t frame_ = 0;
};

}  // namespace example
