// staging-bench --replay: what a trace (docs/sim.md, "Trace replay"; parsed by staging-sim's
// trace_replay) becomes on a device, decided before any device is touched. Pure: no Vulkan.
//
// Frames: consecutive uploads of one frame (frame >= 0) form one frame; an upload not tied to a
// frame (frame -1) is a frame of its own. Kinds as an imported capture records them: buffer_copy,
// image_copy, update, host_write; any other kind (a hand-written trace's "constants", "texture")
// is replayed as buffer_copy. An image_copy is an R8G8B8A8 image of granularity / 4 texels by
// size / granularity rows when that divides (else a buffer copy); an update is vkCmdUpdateBuffer
// when it is legal (at most 65536 bytes, a multiple of 4; else a buffer copy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "staging/core/errors.hpp"
#include "upload.hpp"

namespace staging::bench {

/// How the application issued an upload (the trace's kind, after the legality checks above).
enum class ReplayKind : uint8_t { BufferCopy, ImageCopy, Update, HostWrite };

/// "buffer_copy", "image_copy", "update", "host_write".
[[nodiscard]] const char* to_string(ReplayKind kind) noexcept;

/// One upload as the replay issues it.
struct PlannedUpload {
  ReplayKind kind = ReplayKind::BufferCopy;
  uint64_t size = 0;
  /// Where its bytes start in the replay's source (random bytes, never all zeros).
  uint64_t source_offset = 0;
  /// Where it lands in the destination buffer (256-byte aligned); unused for an image.
  uint64_t dst_offset = 0;
  /// Index into ReplayPlan::images for an image_copy, else -1.
  int image = -1;
  /// Larger than the frame budget: the ring replay gives it to the Streamer.
  bool streamed = false;
};

/// An R8G8B8A8 image one image_copy fills completely.
struct PlannedImage {
  uint32_t width = 0;
  uint32_t height = 0;
};

struct ReplayPlan {
  /// In trace order; each frame's uploads in one command buffer.
  std::vector<std::vector<PlannedUpload>> frames;
  std::vector<PlannedImage> images;
  uint64_t uploads = 0;
  uint64_t source_bytes = 0;
  /// Bytes of the destination buffer (buffer uploads at their dst_offset).
  uint64_t buffer_bytes = 0;
  /// Frames in the trace (before --frames).
  uint64_t trace_frames = 0;
  /// What was replayed differently from the trace, one line each.
  std::vector<std::string> notes;
};

/// Limits of the plan.
struct PlanLimits {
  /// Uploads larger than this go through the Streamer in the ring replay (> 0).
  uint64_t frame_budget = uint64_t{4} << 20;
  /// Replay only the first N frames (0: all).
  uint64_t max_frames = 0;
  /// The device's maxImageDimension2D.
  uint32_t max_image_dimension = 16384;
};

/// Plans the replay of `trace`. Pure; any thread. Errors: an empty trace (after max_frames).
[[nodiscard]] Expected<ReplayPlan, std::string> plan_replay(const sim::Workload& trace,
                                                            const PlanLimits& limits);

}  // namespace staging::bench
