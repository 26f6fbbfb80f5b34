// Frame times of the example: percentiles per phase, a CSV of every frame, and an SVG plot of
// them (frame index against milliseconds, the streaming phase shaded).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace example {

/// One rendered frame.
struct FrameTime {
  double ms = 0;           ///< from this frame's start to the next's
  bool streaming = false;  ///< uploads were in flight while it was rendered
};

/// Percentiles of a set of frame times (milliseconds).
struct Percentiles {
  std::size_t frames = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

/// The percentiles of the frames with streaming == `streaming`.
[[nodiscard]] Percentiles percentiles(const std::vector<FrameTime>& frames, bool streaming);

/// Writes "frame,ms,streaming" lines. False when the file cannot be written.
bool write_csv(const std::string& path, const std::vector<FrameTime>& frames);

/// Writes an SVG plot of the frame times (streaming frames in another colour, p99 lines of
/// both phases). False when the file cannot be written.
bool write_svg(const std::string& path, const std::vector<FrameTime>& frames,
               const Percentiles& with, const Percentiles& without);

}  // namespace example
