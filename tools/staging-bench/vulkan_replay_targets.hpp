// staging-bench --replay: the destinations one replay method writes (a device-local buffer for
// the buffer uploads, a host-visible one for the application's host writes, one R8G8B8A8 image
// per image_copy), the random source bytes, the read-back check, and what each method measures.
// Made afresh for every method with a new seed, so a method is never credited with bytes an
// earlier one wrote. Threading: the benchmark's driver thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "replay_plan.hpp"
#include "vulkan_context.hpp"

namespace staging::bench::vk {

/// What one route of a method did (a route: "ring", "streamer", "app/staging-buffer", ...).
struct RouteStats {
  uint64_t uploads = 0;
  uint64_t bytes = 0;
  /// CPU time issuing the uploads on the issuing thread.
  double cpu_s = 0;
  /// Bytes copied by the GPU and the time from submission to completion; for host writes the
  /// memcpy (no GPU copy).
  uint64_t copy_bytes = 0;
  double copy_s = 0;
};

/// A method's routes by name, and whether it failed before the check (a Vulkan error).
struct MethodResult {
  std::map<std::string, RouteStats> routes;
  std::vector<std::string> notes;
  std::string error;
};

class ReplayTargets {
 public:
  ReplayTargets(Context& vk, const ReplayPlan& plan) : vk_(vk), plan_(plan) {}
  ~ReplayTargets() { release(); }
  ReplayTargets(const ReplayTargets&) = delete;
  ReplayTargets& operator=(const ReplayTargets&) = delete;

  /// Makes every destination afresh and fills the source with random bytes from `seed`.
  /// Empty on success, else what could not be made.
  std::string make(uint64_t seed);
  /// Reads every destination back (on the graphics queue, after everything submitted there)
  /// and compares every byte with the source. `host_writes_in_host_buffer`: host_write uploads
  /// landed in the host-visible buffer (the application's way), else in the device buffer.
  /// Returns, per route (`route_of` names an upload's), the first upload that differs; a failed
  /// read-back is reported under the route "read-back".
  std::map<std::string, std::string> check(
      bool host_writes_in_host_buffer,
      const std::function<std::string(const PlannedUpload&)>& route_of);

  [[nodiscard]] const std::byte* source(const PlannedUpload& u) const {
    return source_.data() + u.source_offset;
  }
  [[nodiscard]] VkBuffer device_buffer() const { return device_.buffer; }
  /// The device buffer as a Streamer's uploads describe it.
  [[nodiscard]] staging::vulkan::BufferDestination device_destination() const {
    return {device_.buffer, device_.size};
  }
  [[nodiscard]] std::byte* host_mapped() const { return host_.mapped; }
  [[nodiscard]] VkImage image(const PlannedUpload& u) const { return images_[u.image].image; }
  [[nodiscard]] const PlannedImage& image_size(const PlannedUpload& u) const {
    return plan_.images[u.image];
  }

 private:
  void release();
  std::string compare(const std::byte* got, const PlannedUpload& u, const char* where) const;
  bool read_images(std::vector<uint64_t>& offsets);

  Context& vk_;
  const ReplayPlan& plan_;
  std::vector<std::byte> source_;
  Buffer device_;
  Buffer host_;
  Buffer readback_;
  std::vector<Image> images_;
};

/// The replay methods (vulkan_replay_ring.cpp, vulkan_replay_app.cpp): every upload of `plan`,
/// frame by frame, into `targets`.
MethodResult replay_ring(Context& vk, const ReplayPlan& plan, ReplayTargets& targets);
MethodResult replay_app(Context& vk, const ReplayPlan& plan, ReplayTargets& targets);
/// The route (RouteStats' name) each method sends an upload through.
std::string ring_route(const PlannedUpload& u);
std::string app_route(const PlannedUpload& u);

}  // namespace staging::bench::vk
