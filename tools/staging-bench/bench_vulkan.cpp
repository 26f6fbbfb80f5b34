// staging-bench --backend vulkan: staging::vulkan on a real device (the H200; lavapipe for
// correctness). Scenarios (--scenario, default all; see each file's comment):
//   frame-small   vulkan_frame_small.cpp   CPU cost per upload: ring vs a staging buffer per upload
//                                          vs vkCmdUpdateBuffer; objects created in steady state
//   stream-large  vulkan_stream_large.cpp  1 GiB through a <= 64 MiB ring: GPU copy throughput
//                                          and end to end, against one large copy (the ceiling)
//   textures      vulkan_textures.cpp      mip chains (RGBA8, BC7, BC1) through the frame API
//   streamer      vulkan_streamer.cpp      1 GiB and mip chains from a pointer through a Streamer
//                                          (its queue and fill pool) against the copy ceiling
// --replay TRACE runs instead of the scenarios: vulkan_replay.cpp.
// The device set-up (queues, timestamps, the counting dispatch) is vulkan_context.cpp.
#include <algorithm>
#include <cstdio>
#include <regex>
#include <thread>

#include "bench.hpp"
#include "vulkan_replay.hpp"
#include "vulkan_scenarios.hpp"

namespace staging::bench {
namespace {

vk::VulkanOptions& vulkan_options() {
  static vk::VulkanOptions o;
  return o;
}

// The options that depend on each other (each alone is checked by its validator).
std::string check_vulkan() {
  const vk::VulkanOptions& o = vulkan_options();
  if (vk::replay_requested()) return vk::check_replay();
  const auto wanted = [&](const char* s) {
    return std::find(o.scenarios.begin(), o.scenarios.end(), s) != o.scenarios.end();
  };
  if (wanted("stream-large")) {
    if (o.ring_mib < 2 * o.chunk_mib) {
      return "--stream-ring-mib must be at least 2 x --stream-chunk-mib";
    }
    const bool slots =
        std::find(o.strategies.begin(), o.strategies.end(), "slots") != o.strategies.end();
    if (slots && (o.chunk_mib & (o.chunk_mib - 1)) != 0) {
      return "--strategies slots needs a power-of-two --stream-chunk-mib";
    }
  }
  return {};
}

int run_vulkan(const CommonOptions& common, Report& report) {
  const vk::VulkanOptions& o = vulkan_options();
  std::string why;
  auto vk = vk::Context::create({.validate = o.validate, .device_filter = o.device}, why);
  if (!vk) {
    std::fprintf(stderr, "staging-bench: no usable Vulkan device: %s\n", why.c_str());
    return kNoDevice;
  }
  const VkPhysicalDeviceLimits& limits = vk->properties().limits;
  report.context("device", vk->describe());
  report.context("driver", vk->driver());
  report.context("validation", vk->validation() ? "on (with synchronization validation)" : "off");
  report.context("cpus", std::thread::hardware_concurrency());
  report.context("queues", "graphics family " + std::to_string(vk->graphics().family) +
                               (vk->transfer() ? ", transfer-only family " +
                                                     std::to_string(vk->transfer()->family)
                                               : std::string(", no transfer-only family")));
  report.context("optimalBufferCopyOffsetAlignment", limits.optimalBufferCopyOffsetAlignment);
  report.context("nonCoherentAtomSize", limits.nonCoherentAtomSize);
  nlohmann::json types = nlohmann::json::array();
  for (uint32_t i = 0; i < vk->memory_properties().memoryTypeCount; ++i)
    types.push_back(vk->type_flags(i));
  report.context("memory_types", types);
  if (const auto t = vk->staging_type(false)) report.context("staging_memory", vk->type_flags(*t));

  int failures = 0;
  const auto wanted = [&](const char* s) {
    return std::find(o.scenarios.begin(), o.scenarios.end(), s) != o.scenarios.end();
  };
  if (vk::replay_requested()) {
    failures += vk::run_replay(*vk, report);
  } else {
    if (wanted("frame-small")) failures += vk::run_frame_small(*vk, common, o, report);
    if (wanted("stream-large")) failures += vk::run_stream_large(*vk, common, o, report);
    if (wanted("textures")) failures += vk::run_textures(*vk, common, o, report);
    if (wanted("streamer")) failures += vk::run_streamer(*vk, common, o, report);
  }
  if (vk->validation()) {
    const int messages = vk->validation_messages();
    report.target("validation: no message", messages == 0,
                  std::to_string(messages) + " validation messages (printed above)");
    if (messages != 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

Backend make_vulkan_backend() {
  Backend b;
  b.name = "vulkan";
  b.description = "staging::vulkan: frames of small uploads, 1 GiB streams, textures";
  b.add_options = [](CLI::App& app) {
    vk::VulkanOptions& o = vulkan_options();
    auto* g = app.add_option_group("vulkan", "options of --backend vulkan");
    const auto one_of = [](std::vector<std::string> names) { return CLI::IsMember(names); };
    const CLI::Validator workload(
        [](std::string& s) {
          static const std::regex re("[1-9][0-9]{0,6}x[1-9][0-9]{0,9}");
          return std::regex_match(s, re) ? std::string() : "expected COUNTxBYTES, not " + s;
        },
        "COUNTxBYTES");
    g->add_option("--scenario", o.scenarios,
                  "frame-small, stream-large, textures, streamer (default all)")
        ->delimiter(',')
        ->check(one_of({"frame-small", "stream-large", "textures", "streamer"}));
    g->add_option("--vk-device", o.device, "part of the Vulkan device name to use");
    g->add_flag("--validate", o.validate,
                "enable VK_LAYER_KHRONOS_validation with synchronization validation; any "
                "finding fails the run (correctness runs, not for timing)");
    g->add_option("--small-workloads", o.small_workloads,
                  "frame-small: COUNTxBYTES uploads per frame")
        ->delimiter(',')
        ->check(workload);
    g->add_option("--small-routes", o.small_routes,
                  "frame-small: ring-slots, ring-bytes, oneoff, update, handmade, shared")
        ->delimiter(',')
        ->check(one_of({"ring-slots", "ring-bytes", "oneoff", "update", "handmade", "shared"}));
    g->add_option("--small-writers", o.small_writers,
                  "frame-small, route shared: writer threads per frame (each uploads COUNT)")
        ->delimiter(',')
        ->check(CLI::Range(1u, 64u));
    g->add_option("--small-memory", o.small_memory,
                  "frame-small: staging memory of the ring routes: system, cached")
        ->delimiter(',')
        ->check(one_of({"system", "cached"}));
    g->add_option("--frames-in-flight", o.frames_in_flight, "frame-small: frames in flight")
        ->check(CLI::Range(1u, 64u));
    g->add_option("--small-byte-ring-frames", o.small_byte_ring_frames,
                  "frame-small: the byte ring's capacity in frames (0: frames in flight + 1)")
        ->check(CLI::Range(0u, 1024u));
    g->add_option("--stream-mib", o.stream_mib, "stream-large: bytes streamed, MiB")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
    g->add_option("--stream-ring-mib", o.ring_mib, "stream-large: the ring, MiB")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
    g->add_option("--stream-chunk-mib", o.chunk_mib,
                  "stream-large: bytes per frame (one copy each), MiB")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 16));
    g->add_option("--queues", o.queues, "stream-large: graphics, transfer")
        ->delimiter(',')
        ->check(one_of({"graphics", "transfer"}));
    g->add_option("--memory", o.memory,
                  "stream-large: system (HOST_VISIBLE|HOST_COHERENT), device "
                  "(DEVICE_LOCAL|HOST_VISIBLE), cached (HOST_VISIBLE|HOST_CACHED)")
        ->delimiter(',')
        ->check(one_of({"system", "device", "cached"}));
    g->add_option("--streamer-memory", o.streamer_memory,
                  "streamer: system (the built-in hook's choice), cached (HOST_VISIBLE|HOST_CACHED "
                  "through a MemoryHook)")
        ->delimiter(',')
        ->check(one_of({"system", "cached"}));
    g->add_option("--strategies", o.strategies, "stream-large: bytes, slots")
        ->delimiter(',')
        ->check(one_of({"bytes", "slots"}));
    g->add_flag("!--no-fill-rows", o.fill_rows, "stream-large: skip the CPU-only fill rows");
    g->add_flag("!--no-check", o.check, "skip the readback checks");
    g->add_option("--texture-size", o.texture_size, "textures: width and height, texels")
        ->check(CLI::Range(1u, 16384u));
    g->add_option("--formats", o.formats, "textures: rgba8, bc7, bc1")
        ->delimiter(',')
        ->check(one_of({"rgba8", "bc7", "bc1"}));
    vk::add_replay_options(*g);
  };
  b.check = check_vulkan;
  b.run = [](const CommonOptions& common, Report& report) { return run_vulkan(common, report); };
  return b;
}

}  // namespace staging::bench
