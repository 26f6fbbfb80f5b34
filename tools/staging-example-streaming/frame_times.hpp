// Frame times of the example: measured in alternating blocks (frames while uploads stream, then
// as many frames without), percentiles per phase, a CSV of every frame, and an SVG plot of them
// (frame index against milliseconds, streaming blocks shaded, both phases' p99 marked).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace example {

/// One rendered frame.
struct FrameTime {
  double ms = 0;           ///< from this frame's start to the next's
  bool streaming = false;  ///< rendered in a streaming block (uploads in flight)
};

/// Collects frame times block by block. A block's frame times are the gaps between its
/// consecutive frame starts, so a block of n + 1 starts gives n frames and nothing done between
/// blocks (creating the next round's resources) is counted. Not thread-safe.
class FrameClock {
 public:
  using Clock = std::chrono::steady_clock;
  /// Starts a block of the given phase (the previous block's last start only closes it).
  void begin_block(bool streaming);
  /// A frame starts now (in the current block).
  void start_frame(Clock::time_point now = Clock::now());
  /// Frames measured in the current block so far.
  [[nodiscard]] std::size_t block_frames() const { return block_frames_; }
  /// Every frame measured, in order.
  [[nodiscard]] const std::vector<FrameTime>& frames() const { return frames_; }

 private:
  std::vector<FrameTime> frames_;
  std::optional<Clock::time_point> last_;
  bool streaming_ = false;
  std::size_t block_frames_ = 0;
};

/// Percentiles of a set of frame times (milliseconds).
struct Percentiles {
  std::size_t frames = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

/// The percentiles of the frames with streaming == `streaming` (nearest rank).
[[nodiscard]] Percentiles percentiles(const std::vector<FrameTime>& frames, bool streaming);

/// Axis ticks from 0 up to at least `max`: 1, 2 or 5 times a power of ten apart, about `target`
/// of them (at least two: 0 and one above `max`; max <= 0 gives 0 and 1).
[[nodiscard]] std::vector<double> axis_ticks(double max, int target);

/// A tick's label: no more decimals than the tick step needs ("0", "50", "2.5", "0.25").
[[nodiscard]] std::string tick_label(double value, double step);

/// Writes "frame,ms,streaming" lines. False when the file cannot be written.
bool write_csv(const std::string& path, const std::vector<FrameTime>& frames);

/// The SVG plot: frame times against the frame index, streaming blocks shaded, nice ticks and
/// titles on both axes, the p99 of both phases as dashed lines labelled right of the chart (where
/// they cover no data), a legend.
[[nodiscard]] std::string frame_times_svg(const std::vector<FrameTime>& frames,
                                          const Percentiles& with, const Percentiles& without);

/// Writes frame_times_svg() to `path`. False when the file cannot be written.
bool write_svg(const std::string& path, const std::vector<FrameTime>& frames,
               const Percentiles& with, const Percentiles& without);

}  // namespace example
