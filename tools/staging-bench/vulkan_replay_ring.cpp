// staging-bench --replay, the library's way: each trace frame is one staging::vulkan::Ring frame
// (a slot ring, the default configuration) recorded into one command buffer, submitted on
// the graphics queue, and waited for through the ring (Ring::wait, which retires it: the ring
// reclaims its slot); an upload larger than the frame budget goes through a Streamer on the same
// queue instead (StreamPriority::Now, waited for at once). CPU time: begin() to finish() of each
// frame, less its streamer calls, per ring upload; the Streamer's upload() calls per streamed
// upload. Copy time: submission to completion of each frame; upload() to the ticket's
// completion for the streamer (its fill threads included). The trace is replayed twice and only
// the second pass is measured (the first creates and grows the ring's slots).
#include <chrono>
#include <cinttypes>
#include <memory>
#include <mutex>

#include "vulkan_replay_targets.hpp"
#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {
namespace {

using namespace staging::vulkan;
constexpr auto kTimeout = std::chrono::seconds(60);

class RingReplay {
 public:
  RingReplay(Context& vk, const ReplayPlan& plan, ReplayTargets& targets)
      : vk_(vk), plan_(plan), targets_(targets) {}
  ~RingReplay() {
    streamer_.reset();
    if (cmd_ != VK_NULL_HANDLE) {
      vkDeviceWaitIdle(vk_.device());
      vk_.free_commands(vk_.graphics(), cmd_);
    }
  }
  RingReplay(const RingReplay&) = delete;
  RingReplay& operator=(const RingReplay&) = delete;

  // Two passes over the trace: the first warms the ring up (its slots are created and grown to
  // the trace's frames, as in an application past its first frames) and is not counted; the
  // second is measured. Both write the same bytes, so the byte check reads the second.
  MethodResult run() {
    if (!make()) return std::move(result_);
    for (int pass = 0; pass < 2; ++pass) {
      result_.routes.clear();
      for (const auto& frame : plan_.frames) {
        if (!replay_frame(frame)) return std::move(result_);
      }
    }
    const Stats s = ring_->stats();
    const auto& slots = std::get<staging::StagingStats>(s.strategy);  // the default: a slot ring
    result_.notes.push_back("ring: staging slots created " + std::to_string(slots.slots_created) +
                            ", grown " + std::to_string(slots.slots_grown) + ", replaced " +
                            std::to_string(slots.slots_replaced));
    if (const uint64_t fell = s.oneoff_uploads + s.update_buffer_uploads; fell != 0) {
      result_.notes.push_back("ring: " + std::to_string(fell) +
                              " uploads took the ring's fallback route (the slot had no room)");
    }
    return std::move(result_);
  }

 private:
  bool fail(std::string what) {
    result_.error = std::move(what);
    return false;
  }

  bool make() {
    auto ring = Ring::create(vk_.staging_device(), RingConfig{});
    if (!ring) return fail("Ring::create: " + std::string(to_string(ring.error())));
    ring_ = std::make_unique<Ring>(std::move(*ring));
    StreamerConfig c;
    c.queue = vk_.graphics().queue;
    c.queue_family = vk_.graphics().family;
    c.consumer_family = vk_.graphics().family;
    c.queue_mutex = &queue_mutex_;
    c.fill_threads = 1;
    auto s = Streamer::create(vk_.staging_device(), c);
    if (!s) return fail("Streamer::create: " + std::string(to_string(s.error())));
    streamer_ = std::move(*s);
    cmd_ = vk_.allocate_commands(vk_.graphics());
    if (cmd_ == VK_NULL_HANDLE) return fail("cannot allocate a command buffer");
    return true;
  }

  // One upload through the streamer, waited for; false on failure.
  bool stream(const PlannedUpload& u, double& cpu_s) {
    const std::span<const std::byte> data(targets_.source(u), u.size);
    const auto t0 = Clock::now();
    Expected<StreamTicket, UploadError> ticket = unexpected(UploadError::ZeroSize);
    if (u.kind == ReplayKind::ImageCopy) {
      const PlannedImage& p = targets_.image_size(u);
      ticket = streamer_->upload(ImageDestination{.image = targets_.image(u),
                                                  .format = VK_FORMAT_R8G8B8A8_UNORM,
                                                  .extent = {p.width, p.height, 1}},
                                 {.new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL}, data,
                                 StreamPriority::Now);
    } else {
      ticket =
          streamer_->upload(targets_.device_destination(), u.dst_offset, data, StreamPriority::Now);
    }
    const double issue_s = seconds_since(t0);
    if (!ticket) return fail("Streamer::upload: " + std::string(to_string(ticket.error())));
    if (streamer_->wait(*ticket, kTimeout) != StreamStatus::Complete) {
      return fail("a streamed upload did not complete");
    }
    RouteStats& r = result_.routes["streamer"];
    r.uploads += 1;
    r.bytes += u.size;
    r.cpu_s += issue_s;
    r.copy_bytes += u.size;
    r.copy_s += seconds_since(t0);
    cpu_s += issue_s;
    return true;
  }

  // One ring upload into the open frame.
  bool place(StagingFrame& frame, const PlannedUpload& u) {
    const std::span<const std::byte> data(targets_.source(u), u.size);
    if (u.kind == ReplayKind::ImageCopy) {
      const PlannedImage& p = targets_.image_size(u);
      const ImageRegion region{.image = targets_.image(u),
                               .format = VK_FORMAT_R8G8B8A8_UNORM,
                               .extent = {p.width, p.height, 1},
                               .new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL};
      if (auto up = frame.upload(region, data); !up) {
        return fail("image upload: " + std::string(to_string(up.error())));
      }
      return true;
    }
    if (auto up = frame.upload(targets_.device_buffer(), u.dst_offset, data); !up) {
      return fail("upload: " + std::string(to_string(up.error())));
    }
    return true;
  }

  bool replay_frame(const std::vector<PlannedUpload>& uploads) {
    uint64_t needed = 0, ring_uploads = 0, ring_bytes = 0;
    for (const PlannedUpload& u : uploads) {
      if (u.streamed) continue;
      needed += ring_->buffer_footprint(u.size) + 256;  // (images: the texel alignment)
      ++ring_uploads;
      ring_bytes += u.size;
    }
    Context::begin(cmd_);
    double streamed_s = 0;
    const auto t0 = Clock::now();
    auto frame = ring_->begin(cmd_, needed);
    if (!frame) return fail("Ring::begin: " + std::string(to_string(frame.error())));
    for (const PlannedUpload& u : uploads) {
      if (!(u.streamed ? stream(u, streamed_s) : place(*frame, u))) return false;
    }
    auto point = frame->finish();
    const double cpu_s = seconds_since(t0) - streamed_s;
    if (!point) return fail("finish: " + std::string(to_string(point.error())));
    const VkSemaphoreSubmitInfo signal = point->submit_info();
    const auto t_submit = Clock::now();
    {
      const std::lock_guard lock(queue_mutex_);
      vk_.submit(vk_.graphics(), cmd_, &signal);
    }
    if (!ring_->wait(*point, kTimeout)) return fail("a ring frame did not complete");
    RouteStats& r = result_.routes["ring"];
    r.uploads += ring_uploads;
    r.bytes += ring_bytes;
    r.cpu_s += cpu_s;
    r.copy_bytes += ring_bytes;
    r.copy_s += seconds_since(t_submit);
    return true;
  }

  Context& vk_;
  const ReplayPlan& plan_;
  ReplayTargets& targets_;
  MethodResult result_;
  std::mutex queue_mutex_;
  std::unique_ptr<Ring> ring_;
  std::unique_ptr<Streamer> streamer_;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
};

}  // namespace

std::string ring_route(const PlannedUpload& u) {
  return u.streamed ? "streamer" : "ring";
}

MethodResult replay_ring(Context& vk, const ReplayPlan& plan, ReplayTargets& targets) {
  RingReplay replay(vk, plan, targets);
  return replay.run();
}

}  // namespace staging::bench::vk
