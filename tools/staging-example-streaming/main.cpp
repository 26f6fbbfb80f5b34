// staging-example-streaming: what a renderer developer does with a Streamer.
//
// A scene of textured meshes is rendered offscreen, frame after frame, on the graphics queue.
// Meanwhile producer threads hand the scene's assets — generated RGBA8 mip chains and vertex/index
// buffers, several rounds of them (a new version of every object per round, as a level's LODs
// would stream in) — to a Streamer, which copies them on a transfer queue of its own (the
// graphics queue, under a lock, where the device has no transfer-only family). The render loop
// swaps each object's texture and mesh in on the frame after the streamer's timeline reaches
// their values: that frame waits on the value (already reached: no stall) and records the
// ownership acquire. Streaming and quiet alternate in blocks: a block streams new versions of
// every object (--rounds of them) while the scene renders, then the scene renders as many frames
// again without streaming; blocks repeat until each phase has --min-frames frames, and the two
// phases' frame times are compared like with like.
//
// Output (--out, default out/streaming): last_frame.png, frame_times.csv, frame_times.svg,
// summary.json; a summary on stdout. --check verifies every streamed texture and mesh byte for
// byte against its source and fails on any validation message (the CTest run). --big is the
// H200 scene: 48 objects with 2048² textures and 256² vertex grids, about 1.1 GiB per round.
//
// Exit status: 0 done; 1 a check failed (or an unexpected error); 2 bad options or an output folder
// that cannot be created or written (checked before anything starts); 77 no suitable Vulkan
// device.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "assets.hpp"
#include "cli.hpp"
#include "exception_exit.hpp"
#include "frame_times.hpp"
#include "io_paths.hpp"
#include "png.hpp"
#include "scene.hpp"
#include "staging/vulkan.hpp"
#include "streaming_device.hpp"
#include "vulkan_commands.hpp"

namespace {

using namespace staging;
using namespace staging::vulkan;
using Clock = std::chrono::steady_clock;
using example::AssetResources;
using example::AssetSource;

struct Options {
  uint32_t objects = 12;
  uint32_t texture_size = 128;
  uint32_t mesh_grid = 32;
  uint32_t rounds = 2;
  uint32_t width = 640;
  uint32_t height = 360;
  uint32_t ring_mib = 8;
  uint32_t producers = 4;
  uint32_t min_frames = 100;  // frames of each phase, at least (blocks repeat until then)
  std::string out = "out/streaming";
  std::string device;
  bool check = false;
  bool big = false;
};

// One object's version in one round: its device resources and the streamer's tickets.
struct Version {
  AssetResources resources;
  StreamTicket texture, mesh;
  bool arrived = false;
};
// One streaming block's versions: [round][object]. A block's resources are destroyed once the
// frames that drew them have finished.
using Block = std::vector<std::vector<Version>>;
// At most this many streaming blocks (a device that streams a block within a frame or two would
// otherwise need hundreds to reach --min-frames).
constexpr uint32_t kMaxBlocks = 200;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Reads every level of a streamed texture (in SHADER_READ_ONLY_OPTIMAL, owned by the graphics
// family) and its mesh back and compares them with the source.
bool verify(example::StreamingDevice& d, const Version& v, const AssetSource& s) {
  example::HostBuffer back =
      d.make_host_buffer(s.texels.size() + s.mesh.size(), VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  if (back.mapped == nullptr) return false;
  const std::vector<VkBufferImageCopy> levels =
      support::packed_mip_copies(s.texture_size, s.texture_size, s.levels, /*texel_bytes=*/4);
  const bool copied = d.run_once([&](VkCommandBuffer cmd) {
    // After the frames that sampled it: every level out, and back to SHADER_READ_ONLY; the mesh.
    support::record_image_readback(
        cmd, v.resources.texture.image, s.levels, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
        support::kAnyWrite,
        {VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT}, levels,
        back.buffer);
    const VkBufferCopy mesh_region{0, s.texels.size(), s.mesh.size()};
    vkCmdCopyBuffer(cmd, v.resources.mesh.buffer, back.buffer, 1, &mesh_region);
  });
  const bool same = copied && std::memcmp(back.mapped, s.texels.data(), s.texels.size()) == 0 &&
                    std::memcmp(back.mapped + s.texels.size(), s.mesh.data(), s.mesh.size()) == 0;
  d.destroy(back);
  return same;
}

// The assets' sources, generated on the producer threads before the clock starts (a loader
// would have read and decompressed them by now).
std::vector<AssetSource> generate_sources(const Options& o) {
  std::vector<AssetSource> sources(o.objects);
  std::atomic<uint32_t> next{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < o.producers; ++t) {
    threads.emplace_back([&] {
      for (uint32_t i = next++; i < o.objects; i = next++)
        sources[i].generate(i, o.texture_size, o.mesh_grid);
    });
  }
  for (auto& t : threads)
    t.join();
  return sources;
}

// The streamer on the device's transfer queue, or null (with a message) when it cannot be made.
std::unique_ptr<Streamer> make_streamer(example::StreamingDevice& device, const Options& o) {
  StreamerConfig config;
  config.queue = device.transfer;
  config.queue_family = device.transfer_family;
  config.consumer_family = device.graphics_family;
  config.queue_mutex = device.dedicated_transfer() ? nullptr : &device.graphics_mutex;
  config.ring_bytes = uint64_t{o.ring_mib} << 20;
  auto made = Streamer::create(device.staging_device(), config);
  if (!made) {
    std::printf("Streamer::create failed: %s\n", std::string(to_string(made.error())).c_str());
    return nullptr;
  }
  return std::move(*made);
}

// What the render loop and the streaming blocks share: the scene, the streamer, the waits and
// acquires the next frame records, and the frame times.
struct Session {
  Session(const Options& options, example::StreamingDevice& d, Streamer& st, example::Scene& sc,
          const std::vector<AssetSource>& src)
      : o(options), device(d), streamer(st), scene(sc), sources(src) {}

  const Options& o;
  example::StreamingDevice& device;
  Streamer& streamer;
  example::Scene& scene;
  const std::vector<AssetSource>& sources;
  std::vector<VkSemaphoreSubmitInfo> waits;
  std::vector<const Version*> acquires;
  // Frame times, block by block: from one frame's start to the next's within a block.
  example::FrameClock clock;
  std::atomic<int> refused{0};  // producer waits for room in the queue that timed out
  double stream_s = 0;          // the blocks' streaming time, first upload to last arrival

  // A block's versions, one per round and object; created between blocks (not timed).
  bool make_block(Block& block) {
    block.assign(o.rounds, std::vector<Version>(o.objects));
    for (auto& round : block) {
      for (uint32_t i = 0; i < o.objects; ++i) {
        if (!round[i].resources.create(device, sources[i])) {
          std::printf("could not create the resources of object %u\n", i);
          return false;
        }
      }
    }
    return true;
  }

  void destroy_block(Block& block) {
    for (auto& round : block) {
      for (auto& v : round)
        v.resources.destroy(device);
    }
    block.clear();
  }

  // Shows version v on object i from the next frame, which waits for it and acquires it.
  void swap_in(uint32_t i, Version& v, float tint) {
    scene.set(i, {v.resources.view,
                  v.resources.mesh.buffer,
                  v.resources.vertex_bytes,
                  v.resources.index_count,
                  {tint, tint, tint, 1.0f}});
    waits.push_back(
        streamer.point(v.texture)->submit_info(VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT));
    waits.push_back(streamer.point(v.mesh)->submit_info(VK_PIPELINE_STAGE_2_VERTEX_INPUT_BIT));
    acquires.push_back(&v);
  }

  void record_acquires(VkCommandBuffer cmd) const {
    for (const Version* v : acquires) {
      // The destinations were checked by upload(): these cannot fail.
      streamer
          .record_acquire(cmd, v->resources.texture_target, {},
                          VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
                          VK_ACCESS_2_SHADER_SAMPLED_READ_BIT)
          .value();
      streamer
          .record_acquire(cmd, v->resources.mesh_target, 0,
                          v->resources.vertex_bytes + uint64_t{v->resources.index_count} * 4,
                          VK_PIPELINE_STAGE_2_VERTEX_INPUT_BIT,
                          VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT)
          .value();
    }
  }

  uint64_t frame(bool measured) {
    if (measured) clock.start_frame();
    const uint64_t value =
        scene.render(waits, [this](VkCommandBuffer cmd) { record_acquires(cmd); });
    waits.clear();
    acquires.clear();
    return value;
  }

  // Placeholders until an object's first version arrives: a tiny grey texture and a quad,
  // acquired once; every object shows it (dimmed) until its first version.
  void show_placeholder(Version& placeholder, AssetSource& placeholder_source) {
    placeholder_source.generate(0, 2, 2);
    std::fill(placeholder_source.texels.begin(), placeholder_source.texels.end(), std::byte{110});
    placeholder.resources.create(device, placeholder_source);
    placeholder.texture = streamer
                              .upload(placeholder.resources.texture_target, {},
                                      placeholder_source.texels, StreamPriority::Now)
                              .value();
    placeholder.mesh = streamer
                           .upload(placeholder.resources.mesh_target, 0, placeholder_source.mesh,
                                   StreamPriority::Now)
                           .value();
    streamer.wait(placeholder.texture, std::chrono::seconds(60));
    streamer.wait(placeholder.mesh, std::chrono::seconds(60));
    swap_in(0, placeholder, 0.5f);
    for (uint32_t i = 1; i < o.objects; ++i) {
      scene.set(i, {placeholder.resources.view,
                    placeholder.resources.mesh.buffer,
                    placeholder.resources.vertex_bytes,
                    placeholder.resources.index_count,
                    {0.5f, 0.5f, 0.5f, 1.0f}});
    }
  }

  // Uploads bytes (every level of a texture, or a mesh from offset 0), waiting for room in the
  // queue a second at a time (backpressure).
  template <typename Destination>
  StreamTicket upload_when_room(const Destination& destination, std::span<const std::byte> bytes,
                                StreamPriority p) {
    for (;;) {
      auto ticket = [&] {
        if constexpr (std::is_same_v<Destination, staging::vulkan::ImageDestination>) {
          return streamer.upload(destination, {}, bytes, p, std::chrono::seconds(1));
        } else {
          return streamer.upload(destination, 0, bytes, p, std::chrono::seconds(1));
        }
      }();
      if (ticket) return *ticket;
      ++refused;
    }
  }

  // A producer thread: hands versions of `block` to the streamer, round by round (round 0 is
  // needed now, later rounds are prefetches), taking the next from `next`.
  void produce(Block& block, std::atomic<uint32_t>& next) {
    for (uint32_t k = next++; k < o.rounds * o.objects; k = next++) {
      const uint32_t r = k / o.objects, i = k % o.objects;
      Version& v = block[r][i];
      const StreamPriority p = r == 0 ? StreamPriority::Now : StreamPriority::Prefetch;
      v.texture = upload_when_room(v.resources.texture_target, sources[i].texels, p);
      v.mesh = upload_when_room(v.resources.mesh_target, sources[i].mesh, p);
    }
  }

  // Swaps in the versions of `block` that have completed since the last call (unless a later
  // round's version is shown already); `shown` is the round each object shows. Returns how many
  // arrived.
  uint32_t swap_in_arrivals(Block& block, std::vector<uint32_t>& shown) {
    uint32_t arrived = 0;
    for (uint32_t r = 0; r < o.rounds; ++r) {
      for (uint32_t i = 0; i < o.objects; ++i) {
        Version& v = block[r][i];
        if (v.arrived || !v.texture || !v.mesh) continue;
        if (streamer.status(v.texture) != StreamStatus::Complete ||
            streamer.status(v.mesh) != StreamStatus::Complete) {
          continue;
        }
        v.arrived = true;
        ++arrived;
        if (shown[i] != UINT32_MAX && shown[i] > r) continue;  // a later version is shown
        swap_in(i, v, 1.0f);
        shown[i] = r;
      }
    }
    return arrived;
  }

  // One streaming block: producers hand every version of `block` to the streamer; the render
  // loop swaps versions in as they complete, until every one has. Returns the value of the
  // block's last frame, the first to draw none of the previous versions.
  uint64_t stream_block(Block& block) {
    std::atomic<uint32_t> next{0};
    std::vector<std::thread> producers;
    const auto t_stream = Clock::now();
    for (uint32_t t = 0; t < o.producers; ++t)
      producers.emplace_back([&] { produce(block, next); });
    std::vector<uint32_t> shown(o.objects, UINT32_MAX);  // the round each object shows
    uint32_t pending = o.rounds * o.objects;
    clock.begin_block(true);
    for (;;) {
      pending -= swap_in_arrivals(block, shown);
      if (pending == 0) stream_s += seconds(Clock::now() - t_stream);
      const uint64_t value = frame(true);  // (after the last arrival: closes the block)
      if (pending == 0) {
        for (auto& p : producers)
          p.join();
        return value;
      }
    }
  }
};

// The streamed versions still on the device: the current block's, and earlier blocks' with the
// value of the last frame that may draw them.
struct Blocks {
  Block current;
  std::vector<std::pair<uint64_t, Block>> retired;
  uint32_t count = 0;
};

// Blocks: streaming, then as many frames without; the previous block's versions are destroyed
// once the frames before this block's last swap-in have finished. False when a block's resources
// could not be created.
bool run_blocks(Session& s, Blocks& blocks) {
  std::size_t streaming_frames = 0;
  while (blocks.count == 0 || (streaming_frames < s.o.min_frames && blocks.count < kMaxBlocks)) {
    Block block;
    if (!s.make_block(block)) return false;
    const uint64_t swapped = s.stream_block(block);
    blocks.retired.emplace_back(swapped - 1, std::move(blocks.current));
    blocks.current = std::move(block);
    ++blocks.count;
    const std::size_t n = s.clock.block_frames();
    streaming_frames += n;
    s.clock.begin_block(false);
    for (std::size_t f = 0; f <= n; ++f)
      s.frame(true);
    std::erase_if(blocks.retired, [&](auto& r) {
      if (!s.scene.finished(r.first)) return false;
      s.destroy_block(r.second);
      return true;
    });
  }
  return true;
}

// --check: every object's last version against its source, and no validation message. Counts
// the objects verified in `verified`.
bool check_streamed(Session& s, const Block& current, uint32_t& verified) {
  bool ok = true;
  for (uint32_t i = 0; i < s.o.objects; ++i) {
    if (!verify(s.device, current[s.o.rounds - 1][i], s.sources[i])) {
      std::printf("check: object %u's texture or mesh differs from its source\n", i);
      ok = false;
    } else {
      ++verified;
    }
  }
  if (s.device.validation_messages() > 0) {
    std::printf("check: %d validation messages\n", s.device.validation_messages());
    ok = false;
  }
  return ok;
}

// What a run measured, for the summary on stdout and summary.json.
struct Totals {
  uint32_t blocks = 0;
  uint64_t streamed_bytes = 0;
  double gbps = 0;
  example::Percentiles with, without;
};

void print_summary(const Session& s, const Totals& t) {
  const Options& o = s.o;
  const StreamerStats stats = s.streamer.stats();
  std::printf(
      "streamed %.1f MiB (%u objects x %u rounds x %u blocks) through %u MiB of staging from %u "
      "threads in %.3f s: %.2f GB/s while rendering\n",
      static_cast<double>(t.streamed_bytes) / (1 << 20), o.objects, o.rounds, t.blocks, o.ring_mib,
      o.producers, s.stream_s, t.gbps);
  std::printf(
      "  %llu submissions, %llu pieces, %llu batches waited for staging room, %d "
      "producer waits timed out\n",
      static_cast<unsigned long long>(stats.submissions),
      static_cast<unsigned long long>(stats.stream.pieces),
      static_cast<unsigned long long>(stats.stream.ring_full), s.refused.load());
  std::printf(
      "frame times (ms), %u blocks of streaming frames, each followed by as many without:\n",
      t.blocks);
  std::printf("                    frames     p50     p90     p99     max\n");
  std::printf("  streaming       %8zu %7.3f %7.3f %7.3f %7.3f\n", t.with.frames, t.with.p50,
              t.with.p90, t.with.p99, t.with.max);
  std::printf("  not streaming   %8zu %7.3f %7.3f %7.3f %7.3f\n", t.without.frames, t.without.p50,
              t.without.p90, t.without.p99, t.without.max);
  std::printf("  p99 streaming / not streaming: %.2f\n",
              t.without.p99 > 0 ? t.with.p99 / t.without.p99 : 0.0);
  if (s.device.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    std::printf(
        "  (a CPU device: rendering and copies run on the host's cores, so these are CPU "
        "times shared with the producers, not a GPU's)\n");
  }
}

void write_summary_json(const Session& s, const Totals& t) {
  const Options& o = s.o;
  const example::Percentiles& with = t.with;
  const example::Percentiles& without = t.without;
  std::ofstream json(o.out + "/summary.json");
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"device\": \"%s\", \"cpu_device\": %s, \"dedicated_transfer_queue\": %s, "
                "\"objects\": %u, \"rounds\": %u, \"blocks\": %u, \"streamed_bytes\": %llu, "
                "\"stream_seconds\": %.6f, "
                "\"stream_gbps\": %.3f, \"ring_mib\": %u, \"producers\": %u,\n"
                " \"streaming\": {\"frames\": %zu, \"p50_ms\": %.4f, \"p90_ms\": %.4f, "
                "\"p99_ms\": %.4f, \"max_ms\": %.4f},\n"
                " \"not_streaming\": {\"frames\": %zu, \"p50_ms\": %.4f, \"p90_ms\": %.4f, "
                "\"p99_ms\": %.4f, \"max_ms\": %.4f},\n"
                " \"p99_ratio\": %.4f, \"validation_messages\": %d}\n",
                s.device.properties.deviceName,
                s.device.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? "true" : "false",
                s.device.dedicated_transfer() ? "true" : "false", o.objects, o.rounds, t.blocks,
                static_cast<unsigned long long>(t.streamed_bytes), s.stream_s, t.gbps, o.ring_mib,
                o.producers, with.frames, with.p50, with.p90, with.p99, with.max, without.frames,
                without.p50, without.p90, without.p99, without.max,
                without.p99 > 0 ? with.p99 / without.p99 : 0.0, s.device.validation_messages());
  json << buf;
}

// The outputs: last_frame.png, frame_times.csv and .svg, the --check, the summary on stdout and
// summary.json. False when the image could not be written or the check failed.
bool report(Session& s, const Blocks& blocks, uint64_t round_bytes) {
  const Options& o = s.o;
  const auto image = s.scene.read_back();
  const bool png = example::write_png(o.out + "/last_frame.png", o.width, o.height, image);
  const std::vector<example::FrameTime>& frames = s.clock.frames();
  Totals t;
  t.with = example::percentiles(frames, true);
  t.without = example::percentiles(frames, false);
  example::write_csv(o.out + "/frame_times.csv", frames);
  example::write_svg(o.out + "/frame_times.svg", frames, t.with, t.without);

  bool ok = png;
  uint32_t verified = 0;
  if (o.check) ok = check_streamed(s, blocks.current, verified) && ok;
  t.blocks = blocks.count;
  t.streamed_bytes = round_bytes * o.rounds * blocks.count;
  t.gbps = static_cast<double>(t.streamed_bytes) / s.stream_s / 1e9;
  print_summary(s, t);
  if (o.check) std::printf("check: %u of %u objects verified byte for byte\n", verified, o.objects);
  std::printf("wrote %s/last_frame.png, frame_times.csv, frame_times.svg, summary.json\n",
              o.out.c_str());
  write_summary_json(s, t);
  return ok;
}

int run(const Options& o) {
  example::StreamingDevice device(o.device);
  if (!device.ok()) {
    std::printf("no suitable Vulkan device: %s\n", device.why().c_str());
    return 77;
  }
  std::printf("device: %s\n", device.describe().c_str());
  if (std::error_code ec; !std::filesystem::create_directories(o.out, ec) && ec) {
    std::fprintf(stderr, "staging-example-streaming: --out '%s': %s\n", o.out.c_str(),
                 ec.message().c_str());
    return 2;
  }
  const std::vector<AssetSource> sources = generate_sources(o);
  uint64_t round_bytes = 0;
  for (const auto& s : sources)
    round_bytes += s.bytes();

  std::unique_ptr<Streamer> streamer = make_streamer(device, o);
  if (!streamer) return 1;
  example::Scene scene(device, o.width, o.height, o.objects);
  if (!scene.ok()) {
    std::printf("scene: %s\n", scene.why().c_str());
    return 1;
  }
  Session session(o, device, *streamer, scene, sources);
  AssetSource placeholder_source;
  Version placeholder;
  session.show_placeholder(placeholder, placeholder_source);
  for (int i = 0; i < 10; ++i)  // warm-up (not measured)
    session.frame(false);

  Blocks blocks;
  if (!run_blocks(session, blocks)) return 1;
  const bool ok = report(session, blocks, round_bytes);

  streamer.reset();  // waits for its last submission
  vkDeviceWaitIdle(device.device);
  session.destroy_block(blocks.current);
  for (auto& [value, block] : blocks.retired)
    session.destroy_block(block);
  placeholder.resources.destroy(device);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  CLI::App app{"staging-example-streaming: render while a Streamer loads the scene's assets",
               "staging-example-streaming"};
  app.add_option("--objects", o.objects, "objects in the scene")->check(CLI::Range(1u, 4096u));
  app.add_option("--texture-size", o.texture_size, "texture edge in texels")
      ->check(CLI::Range(2u, 16384u));
  app.add_option("--mesh-grid", o.mesh_grid, "mesh vertices per side")
      ->check(CLI::Range(2u, 4096u));
  app.add_option("--rounds", o.rounds, "versions of every object streamed in each streaming block")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--width", o.width, "frame width")->check(CLI::Range(16u, 8192u));
  app.add_option("--height", o.height, "frame height")->check(CLI::Range(16u, 8192u));
  app.add_option("--ring-mib", o.ring_mib, "the streamer's staging memory, MiB")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--producers", o.producers, "producer threads")->check(CLI::Range(1u, 256u));
  app.add_option("--min-frames", o.min_frames,
                 "frames of each phase, at least: streaming blocks repeat until the streaming "
                 "frames reach it, each followed by as many frames without streaming")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--out", o.out, "output folder (created if missing)")
      ->check(staging::tools::writable_folder());
  app.add_option("--device", o.device, "a substring of the device name to use");
  app.add_flag("--check", o.check,
               "verify every streamed byte and fail on validation messages (the CTest run)");
  app.add_flag("--big", o.big,
               "the large scene: 48 objects, 2048^2 textures, 256^2 grids (about 1.1 GiB a "
               "round), 4 rounds, 64 MiB of staging, 8 producers, 1920x1080");
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;
  if (const auto error = staging::tools::output_folder_error(o.out)) {  // (the default, too)
    return staging::tools::usage_error(app, "--out: " + *error);
  }
  if (o.big) {
    const auto set = [&](const char* name, uint32_t& field, uint32_t value) {
      if (app.count(name) == 0) field = value;
    };
    set("--objects", o.objects, 48);
    set("--texture-size", o.texture_size, 2048);
    set("--mesh-grid", o.mesh_grid, 256);
    set("--rounds", o.rounds, 4);
    set("--ring-mib", o.ring_mib, 64);
    set("--producers", o.producers, 8);
    set("--width", o.width, 1920);
    set("--height", o.height, 1080);
  }
  return run(o);
} catch (...) {
  return staging::tools::exception_exit("staging-example-streaming");
}
