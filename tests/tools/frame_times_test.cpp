// staging-example-streaming's frame-time module: the blocks' frame counting, the percentiles, the
// plot's axis ticks and labels, and what the SVG shows (label tools).
#include "frame_times.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace {

using example::FrameTime;
using Clock = example::FrameClock::Clock;

std::vector<std::string> matches(const std::string& text, const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1].str());
  return out;
}

TEST(FrameClock, ABlockOfNPlusOneStartsGivesNFramesAndNothingBetweenBlocksCounts) {
  example::FrameClock clock;
  const Clock::time_point t0{};
  clock.begin_block(true);
  for (int i = 0; i <= 3; ++i)
    clock.start_frame(t0 + std::chrono::milliseconds(10 * i));
  EXPECT_EQ(clock.block_frames(), 3u);
  clock.begin_block(false);  // a second later: the gap is no frame
  for (int i = 0; i <= 3; ++i)
    clock.start_frame(t0 + std::chrono::seconds(1) + std::chrono::milliseconds(20 * i));
  ASSERT_EQ(clock.frames().size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(clock.frames()[i].ms, i < 3 ? 10.0 : 20.0);
    EXPECT_EQ(clock.frames()[i].streaming, i < 3);
  }
}

TEST(Percentiles, NearestRankOverOnePhaseOnly) {
  std::vector<FrameTime> frames;
  for (int i = 1; i <= 100; ++i) {
    frames.push_back({static_cast<double>(i), true});
    frames.push_back({1000.0 + i, false});
  }
  const example::Percentiles p = example::percentiles(frames, true);
  EXPECT_EQ(p.frames, 100u);
  EXPECT_DOUBLE_EQ(p.p50, 50);
  EXPECT_DOUBLE_EQ(p.p99, 99);
  EXPECT_DOUBLE_EQ(p.max, 100);
}

TEST(AxisTicks, NiceStepsFromZeroPastTheMaximum) {
  EXPECT_EQ(example::axis_ticks(200.77, 6), (std::vector<double>{0, 50, 100, 150, 200, 250}));
  EXPECT_EQ(example::axis_ticks(230, 10), (std::vector<double>{0, 50, 100, 150, 200, 250}));
  EXPECT_EQ(example::axis_ticks(95, 10),
            (std::vector<double>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(example::axis_ticks(0.9, 4), (std::vector<double>{0, 0.5, 1.0}));
  EXPECT_EQ(example::axis_ticks(0, 6), (std::vector<double>{0, 1}));
}

TEST(AxisTicks, LabelsHaveTheDecimalsTheStepNeeds) {
  EXPECT_EQ(example::tick_label(150, 50), "150");
  EXPECT_EQ(example::tick_label(2.5, 0.5), "2.5");
  EXPECT_EQ(example::tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(example::tick_label(0, 0.2), "0.0");
}

// 230 frames in alternating blocks, one slow outlier: the plot has ticks on both axes, axis
// titles with units, and both p99 labels right of the chart, apart from each other.
TEST(FrameTimesSvg, HasTicksOnBothAxesAndP99LabelsOutsideTheData) {
  std::vector<FrameTime> frames;
  for (int i = 0; i < 230; ++i)
    frames.push_back({i == 20 ? 200.77 : 10.0 + (i % 7), (i / 10) % 2 == 0});
  const auto with = example::percentiles(frames, true);
  const auto without = example::percentiles(frames, false);
  const std::string svg = example::frame_times_svg(frames, with, without);
  const auto y_ticks = matches(svg, "class='ytick'[^>]*>([^<]*)<");
  const auto x_ticks = matches(svg, "class='xtick'[^>]*>([^<]*)<");
  EXPECT_EQ(y_ticks, (std::vector<std::string>{"0", "50", "100", "150", "200", "250"}));
  ASSERT_GE(x_ticks.size(), 5u);
  EXPECT_EQ(x_ticks.front(), "0");
  EXPECT_NE(svg.find("frame time (ms"), std::string::npos);
  EXPECT_NE(svg.find(">frame (in the order rendered)<"), std::string::npos);
  // The chart's right edge is the last x tick's position; the labels start beyond it.
  const auto tick_x = matches(svg, "<line x1='([0-9.]+)'[^>]*/><text class='xtick'");
  ASSERT_FALSE(tick_x.empty());
  const double right = std::stod(tick_x.back());
  const auto label_x = matches(svg, "<text class='p99-label' x='([0-9.]+)'");
  const auto label_y = matches(svg, "<text class='p99-label' x='[0-9.]+' y='([0-9.]+)'");
  ASSERT_EQ(label_x.size(), 2u);
  for (const std::string& x : label_x)
    EXPECT_GT(std::stod(x), right);
  EXPECT_GE(std::abs(std::stod(label_y[0]) - std::stod(label_y[1])), 14.0);
  EXPECT_EQ(matches(svg, "(class='streaming')").size(), 12u);  // blocks 0, 2, ..., 22
}

}  // namespace
