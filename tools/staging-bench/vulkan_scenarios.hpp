// staging-bench --backend vulkan: the scenarios (vulkan_frame_small.cpp, vulkan_stream_large.cpp,
// vulkan_textures.cpp, vulkan_streamer.cpp), their options, and the helpers they share
// (vulkan_common.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "vulkan_context.hpp"

namespace staging::bench::vk {

/// Options of --backend vulkan (defaults: the H200 run).
struct VulkanOptions {
  std::vector<std::string> scenarios{"frame-small", "stream-large", "textures", "streamer"};
  std::string device;
  bool validate = false;

  // frame-small
  /// COUNTxBYTES: uploads per frame and bytes per upload.
  std::vector<std::string> small_workloads{"6x65536", "64x4096", "1000x256"};
  /// ring-slots, ring-bytes, oneoff (a staging buffer per upload), update (vkCmdUpdateBuffer),
  /// handmade, shared (writer threads through StagingFrame::share()).
  std::vector<std::string> small_routes{"ring-slots", "ring-bytes", "oneoff",
                                        "update",     "handmade",   "shared"};
  /// Route shared: writer threads per frame, one row each; every writer uploads the workload's
  /// COUNT uploads of BYTES (a frame of N writers holds N × COUNT uploads).
  std::vector<unsigned> small_writers{1, 2, 4, 8, 16};
  /// Staging memory of the ring routes: system (what DefaultMemory picks: HOST_VISIBLE|
  /// HOST_COHERENT, write-combined where offered) and/or cached (HOST_VISIBLE|HOST_CACHED, where
  /// the device has such a type apart from the system one); rows of the latter are labelled
  /// "<route>/cached".
  std::vector<std::string> small_memory{"system", "cached"};
  unsigned frames_in_flight = 3;
  // frame-small, ring-bytes: the byte ring's capacity in frames (0: frames in flight + 1, the
  // footprint the slot ring cycles through; never the limit, see vulkan_frame_small.cpp).
  unsigned small_byte_ring_frames = 0;

  // stream-large
  uint64_t stream_mib = 1024;
  uint64_t ring_mib = 64;
  uint64_t chunk_mib = 8;
  /// graphics (the universal queue family) and/or transfer (a transfer-only family).
  std::vector<std::string> queues{"graphics"};
  /// system (HOST_VISIBLE|HOST_COHERENT, what DefaultMemory picks), device
  /// (DEVICE_LOCAL|HOST_VISIBLE) and/or cached (HOST_VISIBLE|HOST_CACHED system memory), where
  /// the device has them.
  std::vector<std::string> memory{"system", "device"};
  /// streamer: staging memory of the streamer's ring, per pointer row: system (the built-in
  /// hook's choice) and/or cached (HOST_VISIBLE|HOST_CACHED system memory, through a MemoryHook).
  std::vector<std::string> streamer_memory{"system"};
  /// bytes (the byte ring) and/or slots (the slot ring).
  std::vector<std::string> strategies{"bytes"};
  /// CPU-only rows: N threads filling mapped staging memory without the GPU (what bounds the
  /// end-to-end rows).
  bool fill_rows = true;
  /// Read every destination back after each configuration and compare every byte.
  bool check = true;

  // textures
  uint32_t texture_size = 2048;
  std::vector<std::string> formats{"rgba8", "bc7", "bc1"};
};

using Clock = std::chrono::steady_clock;
constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Fills `n` bytes with a pseudo-random pattern from `seed` (never all zeros).
void fill_random(std::byte* out, uint64_t n, uint64_t seed);
/// Fills `n` bytes with `threads` threads (large buffers: pre-touching pages quickly).
void fill_random_parallel(std::byte* out, uint64_t n, uint64_t seed, unsigned threads);
/// Compares `n` bytes with `threads` threads; the first differing offset, or none.
std::optional<uint64_t> first_difference(const std::byte* a, const std::byte* b, uint64_t n,
                                         unsigned threads);

/// The median (by value) of `v`; 0 when empty.
double median(std::vector<double> v);

/// What the GPU's timestamps say about a set of [start, end] pairs.
struct GpuTimes {
  /// Time covered by the union of the intervals: the GPU had one of them under way.
  double busy_s = 0;
  /// From the earliest start to the latest end.
  double span_s = 0;
};

/// One [start, end] pair of GPU timestamps, in ticks (masked to the valid bits).
struct Interval {
  uint64_t start = 0;
  uint64_t end = 0;
};

/// Reads timestamp pairs first_pair .. first_pair + pairs - 1 (queries 2i, 2i + 1) from `pool`,
/// waiting for them, masked to `valid_bits`. None
/// when the queue has no timestamps (valid_bits 0) or the read fails.
std::optional<std::vector<Interval>> read_intervals(Context& vk, VkQueryPool pool,
                                                    uint32_t first_pair, uint32_t pairs,
                                                    uint32_t valid_bits);
/// The union and the span of a set of intervals, with `period_ns` nanoseconds per tick.
GpuTimes union_of(std::vector<Interval> spans, double period_ns);

/// Reads `pairs` timestamp pairs (queries 2i, 2i + 1) from `pool` (waiting for them), masks them
/// to `valid_bits` and converts them with the device's timestampPeriod. None when the queue has
/// no timestamps (valid_bits 0) or the read fails.
std::optional<GpuTimes> read_timestamps(Context& vk, VkQueryPool pool, uint32_t pairs,
                                        uint32_t valid_bits);

/// The scenarios. Each adds rows and target lines to `report` and returns the number of failures
/// (a byte mismatch, a Vulkan error, a validation message counts in bench_vulkan.cpp).
int run_frame_small(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                    Report& report);
int run_stream_large(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                     Report& report);
int run_textures(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                 Report& report);
int run_streamer(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                 Report& report);

}  // namespace staging::bench::vk
