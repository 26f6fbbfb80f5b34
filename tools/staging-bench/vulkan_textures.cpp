// textures: a full mip chain of a `texture_size` square texture per frame, through the frame API
// (StagingFrame::upload(ImageRegion) per level, one Ring of the slot strategy, 2 frames in
// flight, the graphics queue), for RGBA8 and block-compressed formats (BC7, BC1).
//
// Each frame uploads every level from UNDEFINED to SHADER_READ_ONLY_OPTIMAL for the fragment
// shader (declaring the earlier frames' copies and fragment reads as prior users). Reported per
// format: end-to-end MB/s (bytes / wall time of the measured frames, GPU included), the CPU time
// per frame from before begin() to after finish() (and the MB/s that CPU time alone allows), and
// the GPU's copy MB/s (timestamps around each frame's copies, union of the intervals). After the
// measured frames, one more frame with new data is uploaded and every level is read back
// (vkCmdCopyImageToBuffer) and compared byte for byte.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "vulkan_commands.hpp"
#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {
namespace {

using namespace staging::vulkan;

struct FormatChoice {
  std::string name;
  VkFormat format;
};

std::optional<FormatChoice> parse_format(const std::string& s) {
  if (s == "rgba8") return FormatChoice{s, VK_FORMAT_R8G8B8A8_UNORM};
  if (s == "bc7") return FormatChoice{s, VK_FORMAT_BC7_UNORM_BLOCK};
  if (s == "bc1") return FormatChoice{s, VK_FORMAT_BC1_RGBA_UNORM_BLOCK};
  return std::nullopt;
}

bool is_bc(VkFormat f) {
  return f >= VK_FORMAT_BC1_RGB_UNORM_BLOCK && f <= VK_FORMAT_BC7_SRGB_BLOCK;
}

constexpr uint32_t kFramesInFlight = 2;

class TextureBench {
 public:
  TextureBench(Context& vk, const CommonOptions& common, const VulkanOptions& options,
               Report& report)
      : vk_(vk), common_(common), o_(options), report_(report) {}

  ~TextureBench() {
    vkDeviceWaitIdle(vk_.device());
    for (VkCommandBuffer c : cmds_)
      vk_.free_commands(vk_.graphics(), c);
  }
  TextureBench(const TextureBench&) = delete;
  TextureBench& operator=(const TextureBench&) = delete;

  int run() {
    if (o_.texture_size == 0) {
      std::fprintf(stderr, "staging-bench: --texture-size must be > 0\n");
      return 1;
    }
    for (uint32_t i = 0; i < kFramesInFlight; ++i)
      cmds_.push_back(vk_.allocate_commands(vk_.graphics()));
    if (vk_.host_query_reset() && vk_.graphics().timestamp_bits != 0) {
      queries_ = vk_.make_query_pool(2 * kFramesInFlight);
    }
    report_.context("texture_size", o_.texture_size);
    for (const std::string& name : o_.formats) {
      const auto f = parse_format(name);
      if (!f) {
        std::fprintf(stderr, "staging-bench: unknown --formats entry '%s' (rgba8, bc7, bc1)\n",
                     name.c_str());
        return 1;
      }
      if ((is_bc(f->format) && !vk_.bc_supported()) || !vk_.image_format_ok(f->format)) {
        report_.note("textures: " + name + " is not supported for copies here; skipped");
        continue;
      }
      if (int rc = format_rows(*f); rc != 0) return rc;
    }
    return failures_;
  }

 private:
  // One format's full mip chain: the image, each level's region and where its data starts.
  struct Chain {
    Image image;
    uint32_t mips = 1;
    std::vector<ImageRegion> regions;
    std::vector<uint64_t> offsets;  // of each level in the chain's data
    uint64_t bytes = 0, needed = 0;
    std::vector<std::byte> data;
  };

  // Frames of one chain on one ring, kFramesInFlight at a time, with their CPU times and (where
  // timestamps work) the GPU intervals of the measured ones.
  class FrameLoop {
   public:
    FrameLoop(TextureBench& bench, Ring& ring, const Chain& chain)
        : b_(bench),
          ring_(ring),
          chain_(chain),
          ts_bits_(bench.queries_ != VK_NULL_HANDLE ? bench.vk_.graphics().timestamp_bits : 0),
          points_(kFramesInFlight),
          gate_(bench.vk_.make_timeline()),
          gate_wait_{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                     .semaphore = gate_,
                     .value = 1,
                     .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT} {}

    const std::vector<Interval>& intervals() const { return intervals_; }
    const std::vector<double>& cpu_s() const { return cpu_s_; }
    const std::string& error() const { return error_; }

    // One frame on slot `n % kFramesInFlight`; returns false on failure.
    bool frame_on(uint64_t n, bool measured) {
      const std::size_t slot = n % kFramesInFlight;
      if (n >= kFramesInFlight) open_gate();
      if (!retire(slot)) return false;
      VkCommandBuffer cmd = b_.cmds_[slot];
      Context::begin(cmd);
      const auto t0 = Clock::now();
      auto frame = ring_.begin(cmd, chain_.needed);
      if (!frame) {
        error_ = "begin: " + std::string(to_string(frame.error()));
        return false;
      }
      if (!upload_levels(*frame)) return false;
      const auto q = static_cast<uint32_t>(2 * slot);
      if (ts_bits_) vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, b_.queries_, q);
      auto point = frame->finish(kVisibility);
      const double cpu = seconds_since(t0);
      if (!point) {
        error_ = "finish: " + std::string(to_string(point.error()));
        return false;
      }
      if (ts_bits_) {
        vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_BOTTOM_OF_PIPE_BIT, b_.queries_, q + 1);
      }
      const VkSemaphoreSubmitInfo signal = point->submit_info();
      b_.vk_.submit(b_.vk_.graphics(), cmd, &signal, gate_open_ ? nullptr : &gate_wait_);
      points_[slot] = *point;
      b_.measured_slot_[slot] = measured;
      if (measured) cpu_s_.push_back(cpu);
      return true;
    }

    // Waits for every frame in flight, keeping the measured ones' GPU intervals.
    bool drain() {
      open_gate();
      for (std::size_t slot = 0; slot < kFramesInFlight; ++slot) {
        if (points_[slot].semaphore == VK_NULL_HANDLE) continue;
        if (!ring_.wait(points_[slot], std::chrono::seconds(30))) return false;
        if (ts_bits_ && b_.measured_slot_[slot]) {
          if (auto t =
                  read_intervals(b_.vk_, b_.queries_, static_cast<uint32_t>(slot), 1, ts_bits_))
            intervals_.insert(intervals_.end(), t->begin(), t->end());
        }
        points_[slot] = {};
      }
      return true;
    }

   private:
    static constexpr Visibility kVisibility{
        .stages = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
        .access = VK_ACCESS_2_SHADER_SAMPLED_READ_BIT,
        .prior_stages =
            VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
        .prior_access = VK_ACCESS_2_TRANSFER_WRITE_BIT};

    // The first kFramesInFlight warm-up frames wait on the GPU for a gate the host opens once
    // they are all submitted: the ring makes all its slots during the warm-up.
    void open_gate() {
      if (!gate_open_) b_.vk_.signal(gate_, 1);
      gate_open_ = true;
    }

    // Waits for the frame that last used `slot` (keeping its GPU interval if it was measured)
    // and resets the slot's timestamps.
    bool retire(std::size_t slot) {
      if (points_[slot].semaphore != VK_NULL_HANDLE) {
        if (!ring_.wait(points_[slot], std::chrono::seconds(30))) {
          error_ = "a frame did not finish in 30 s";
          return false;
        }
        if (ts_bits_) {
          if (auto t =
                  read_intervals(b_.vk_, b_.queries_, static_cast<uint32_t>(slot), 1, ts_bits_);
              t && b_.measured_slot_[slot]) {
            intervals_.insert(intervals_.end(), t->begin(), t->end());
          }
          vkResetQueryPool(b_.vk_.device(), b_.queries_, static_cast<uint32_t>(2 * slot), 2);
        }
        points_[slot] = {};
      } else if (ts_bits_) {
        vkResetQueryPool(b_.vk_.device(), b_.queries_, static_cast<uint32_t>(2 * slot), 2);
      }
      return true;
    }

    template <class Frame>
    bool upload_levels(Frame& frame) {
      const Chain& c = chain_;
      for (uint32_t m = 0; m < c.mips; ++m) {
        const uint64_t level_bytes = (m + 1 < c.mips ? c.offsets[m + 1] : c.bytes) - c.offsets[m];
        auto up = frame.upload(c.regions[m], std::span(c.data.data() + c.offsets[m], level_bytes));
        if (!up) {
          error_ = "upload: " + std::string(to_string(up.error()));
          return false;
        }
      }
      return true;
    }

    TextureBench& b_;
    Ring& ring_;
    const Chain& chain_;
    const uint32_t ts_bits_;
    std::vector<RetirementPoint> points_;
    std::vector<Interval> intervals_;
    std::vector<double> cpu_s_;
    std::string error_;
    VkSemaphore gate_;
    bool gate_open_ = false;
    const VkSemaphoreSubmitInfo gate_wait_;
  };

  // Makes the format's image (a full mip chain, `c`) and a ring whose slots hold the whole chain.
  // Nothing on failure.
  std::optional<Ring> make_chain(const FormatChoice& f, Chain& c) {
    const uint32_t size = o_.texture_size;
    while ((size >> c.mips) != 0)
      ++c.mips;
    c.image = vk_.make_image(f.format, size, size, c.mips);
    if (c.image.image == VK_NULL_HANDLE) {
      std::fprintf(stderr, "staging-bench: cannot make a %ux%u %s image\n", size, size,
                   f.name.c_str());
      return std::nullopt;
    }
    // The ring: slots large enough for a whole chain.
    staging::vulkan::RingConfig config;
    config.policy = staging::ExhaustionPolicy::Defer;
    auto made = Ring::create(vk_.staging_device(), config);
    if (!made) return std::nullopt;
    Ring probe = std::move(*made);
    for (uint32_t m = 0; m < c.mips; ++m) {
      const uint32_t w = std::max(1u, size >> m);
      c.regions.push_back({.image = c.image.image,
                           .format = f.format,
                           .mip_level = m,
                           .extent = {w, w, 1},
                           .old_layout = VK_IMAGE_LAYOUT_UNDEFINED,
                           .new_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL});
      c.offsets.push_back(c.bytes);
      c.bytes += probe.image_data_size(c.regions.back()).value();
      c.needed += probe.image_footprint(c.regions.back()).value();
    }
    auto& slots = std::get<staging::StagingRingConfig>(config.strategy);
    slots.max_slot_bytes =
        std::max<uint64_t>(slots.max_slot_bytes, uint64_t{1} << (64 - __builtin_clzll(c.needed)));
    made = Ring::create(vk_.staging_device(), config);
    if (!made) return std::nullopt;
    c.data.resize(c.bytes);
    fill_random(c.data.data(), c.bytes, 21);
    return std::move(*made);
  }

  int format_rows(const FormatChoice& f) {
    Chain chain;
    std::optional<Ring> ring = make_chain(f, chain);
    if (!ring) return 1;
    Buffer readback =
        vk_.make_buffer(chain.bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, Memory::Readback);
    if (readback.mapped == nullptr) return 1;
    FrameLoop loop(*this, *ring, chain);
    bool ok = true;
    uint64_t n = 0;
    for (; n < kFramesInFlight + 1 && ok; ++n)  // warm-up: the slots' buffers are made
      ok = loop.frame_on(n, false);
    const ObjectCounts before = Context::counts();
    const auto t0 = Clock::now();
    uint64_t frames = 0;
    while (ok && frames < common_.max_reps &&
           (frames < common_.min_reps || seconds_since(t0) < common_.min_seconds)) {
      ok = loop.frame_on(n++, true);
      ++frames;
    }
    ok = ok && loop.drain();
    const double wall = seconds_since(t0);
    const ObjectCounts after = Context::counts();
    if (!ok) {
      std::fprintf(stderr, "staging-bench: textures %s: %s\n", f.name.c_str(),
                   loop.error().c_str());
      vkDeviceWaitIdle(vk_.device());
      vk_.destroy(readback);
      vk_.destroy(chain.image);
      return 1;
    }
    // The check: new data, one frame, every level read back.
    fill_random(chain.data.data(), chain.bytes, 22);
    bool equal = loop.frame_on(n++, false) && loop.drain() &&
                 readback_levels(chain.image, f, chain.regions, chain.offsets, readback);
    equal = equal && std::memcmp(readback.mapped, chain.data.data(), chain.bytes) == 0;
    add_row(f, chain, loop, frames, wall, after, before, equal);
    if (!equal) {
      std::fprintf(stderr, "staging-bench: textures %s: read back differs\n", f.name.c_str());
      ++failures_;
    }
    vkDeviceWaitIdle(vk_.device());
    vk_.destroy(readback);
    vk_.destroy(chain.image);
    return 0;
  }

  // The format's row: end-to-end, CPU and GPU MB/s, objects the measured frames created, the
  // check.
  void add_row(const FormatChoice& f, const Chain& c, const FrameLoop& loop, uint64_t frames,
               double wall, const ObjectCounts& after, const ObjectCounts& before, bool equal) {
    const std::vector<double>& cpu_s = loop.cpu_s();
    const uint64_t bytes = c.bytes;
    const uint32_t size = o_.texture_size;
    const GpuTimes gpu = union_of(loop.intervals(), vk_.timestamp_period());
    const double cpu_med = median(cpu_s);
    Row row;
    row.section = "textures";
    row.bytes = bytes;
    row.reps = static_cast<unsigned>(frames);
    row.gbps = static_cast<double>(bytes) * static_cast<double>(frames) / wall / 1e9;
    const double best = cpu_s.empty() ? 0 : *std::min_element(cpu_s.begin(), cpu_s.end());
    row.gbps_best = row.gbps;
    row.fields["format"] = f.name;
    row.fields["size"] = std::to_string(size) + "x" + std::to_string(size);
    row.fields["mips"] = c.mips;
    row.fields["mbps"] = row.gbps * 1e3;
    row.fields["cpu_us"] = cpu_med * 1e6;
    row.fields["cpu_us_best"] = best * 1e6;
    row.fields["cpu_mbps"] = cpu_med > 0 ? static_cast<double>(bytes) / cpu_med / 1e6 : 0.0;
    row.fields["gpu_mbps"] =
        gpu.busy_s > 0 ? static_cast<double>(bytes) * static_cast<double>(frames) / gpu.busy_s / 1e6
                       : 0.0;
    row.fields["objects_created"] =
        (after.buffers - before.buffers) + (after.memories - before.memories);
    row.fields["check"] = equal ? "ok (every level)" : "MISMATCH";
    report_.add(std::move(row));
  }

  // Copies every level (left in SHADER_READ_ONLY_OPTIMAL by the frame) into `readback`, tightly
  // packed at `offsets`, and returns the image to SHADER_READ_ONLY_OPTIMAL.
  bool readback_levels(const Image& image, const FormatChoice&,
                       const std::vector<ImageRegion>& regions,
                       const std::vector<uint64_t>& offsets, const Buffer& readback) {
    const auto mips = static_cast<uint32_t>(regions.size());
    std::vector<VkBufferImageCopy> copies;
    for (uint32_t m = 0; m < mips; ++m) {
      copies.push_back({.bufferOffset = offsets[m],
                        .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, m, 0, 1},
                        .imageExtent = regions[m].extent});
    }
    return vk_.run_once(vk_.graphics(), [&](VkCommandBuffer cmd) {
      constexpr support::Scope kSampling{VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT, VK_ACCESS_2_NONE};
      support::record_image_readback(cmd, image.image, mips,
                                     VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, support::kAnyWrite,
                                     kSampling, copies, readback.buffer);
    });
  }

  Context& vk_;
  const CommonOptions& common_;
  const VulkanOptions& o_;
  Report& report_;
  std::vector<VkCommandBuffer> cmds_;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  bool measured_slot_[kFramesInFlight] = {};
  int failures_ = 0;
};

}  // namespace

int run_textures(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                 Report& report) {
  TextureBench bench(vk, common, options, report);
  return bench.run();
}

}  // namespace staging::bench::vk
