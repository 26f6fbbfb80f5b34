#include "frame_times.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

namespace example {

void FrameClock::begin_block(bool streaming) {
  streaming_ = streaming;
  last_.reset();
  block_frames_ = 0;
}

void FrameClock::start_frame(Clock::time_point now) {
  if (last_) {
    frames_.push_back(
        {std::chrono::duration<double, std::milli>(now - *last_).count(), streaming_});
    ++block_frames_;
  }
  last_ = now;
}

Percentiles percentiles(const std::vector<FrameTime>& frames, bool streaming) {
  std::vector<double> v;
  for (const FrameTime& f : frames) {
    if (f.streaming == streaming) v.push_back(f.ms);
  }
  Percentiles p;
  p.frames = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {  // nearest rank: the smallest value with >= q of them at or below
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.max = v.back();
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return p;
}

std::vector<double> axis_ticks(double max, int target) {
  if (!(max > 0)) return {0, 1};
  const double raw = max / std::max(target, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * magnitude) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> ticks{0};
  while (ticks.back() < max * (1 - 1e-9))
    ticks.push_back(step * static_cast<double>(ticks.size()));
  return ticks;
}

std::string tick_label(double value, double step) {
  int decimals = 0;
  while (decimals < 6 && std::fabs(step * std::pow(10.0, decimals) -
                                   std::round(step * std::pow(10.0, decimals))) > 1e-6) {
    ++decimals;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

bool write_csv(const std::string& path, const std::vector<FrameTime>& frames) {
  std::ofstream out(path);
  out << "frame,ms,streaming\n";
  for (std::size_t i = 0; i < frames.size(); ++i) {
    out << i << ',' << frames[i].ms << ',' << (frames[i].streaming ? 1 : 0) << '\n';
  }
  return static_cast<bool>(out);
}

namespace {

// The chart's geometry: the plot area, and the two axes' ranges (frame index, milliseconds).
struct Chart {
  double width = 960, height = 400;
  double left = 76, right = 960 - 200, top = 64, bottom = 400 - 58;
  double frames = 1, top_ms = 1;
  [[nodiscard]] double x(double frame) const { return left + (right - left) * frame / frames; }
  [[nodiscard]] double y(double ms) const { return bottom - (bottom - top) * ms / top_ms; }
};

void append(std::string& out, const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  out += buf;
}

// Streaming blocks as shaded bands, then the frame times as one line.
void draw_data(std::string& out, const Chart& c, const std::vector<FrameTime>& frames) {
  for (std::size_t i = 0; i < frames.size();) {
    if (!frames[i].streaming) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < frames.size() && frames[end].streaming)
      ++end;
    append(out,
           "<rect class='streaming' x='%.1f' y='%.1f' width='%.2f' height='%.1f' "
           "fill='#f7c97e' fill-opacity='0.55'/>\n",
           c.x(static_cast<double>(i)), c.top,
           std::max(1.0, c.x(static_cast<double>(end)) - c.x(static_cast<double>(i))),
           c.bottom - c.top);
    i = end;
  }
  out += "<polyline fill='none' stroke='#1f5fa8' stroke-width='1.2' points='";
  for (std::size_t i = 0; i < frames.size(); ++i)
    append(out, "%.1f,%.1f ", c.x(static_cast<double>(i) + 0.5), c.y(frames[i].ms));
  out += "'/>\n";
}

// Grid lines, ticks and their labels on both axes, the axis titles.
void draw_axes(std::string& out, const Chart& c, const std::vector<double>& x_ticks,
               const std::vector<double>& y_ticks) {
  const double y_step = y_ticks.size() > 1 ? y_ticks[1] : 1;
  for (double v : y_ticks) {
    append(out,
           "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#e3e6ea'/>"
           "<text class='ytick' x='%.1f' y='%.1f' text-anchor='end'>%s</text>\n",
           c.left, c.right, c.y(v), c.y(v), c.left - 6, c.y(v) + 4, tick_label(v, y_step).c_str());
  }
  const double x_step = x_ticks.size() > 1 ? x_ticks[1] : 1;
  for (double v : x_ticks) {
    append(out,
           "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#333'/>"
           "<text class='xtick' x='%.1f' y='%.1f' text-anchor='middle'>%s</text>\n",
           c.x(v), c.x(v), c.bottom, c.bottom + 5, c.x(v), c.bottom + 18,
           tick_label(v, x_step).c_str());
  }
  append(out,
         "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#333'/>\n"
         "<text x='%.1f' y='%.1f' text-anchor='middle'>frame (in the order rendered)</text>\n"
         "<text transform='translate(%.1f %.1f) rotate(-90)' text-anchor='middle'>frame time "
         "(ms, start to next start)</text>\n",
         c.left, c.top, c.right - c.left, c.bottom - c.top, (c.left + c.right) / 2, c.bottom + 40,
         20.0, (c.top + c.bottom) / 2);
}

// The p99 lines across the chart, labelled right of it (moved apart when they would overlap).
void draw_p99(std::string& out, const Chart& c, const Percentiles& with,
              const Percentiles& without) {
  struct Mark {
    double ms;
    const char* colour;
    const char* label;
    double label_y;
  };
  std::vector<Mark> marks;
  if (with.frames > 0) marks.push_back({with.p99, "#c0392b", "p99 streaming", 0});
  if (without.frames > 0) marks.push_back({without.p99, "#1e8449", "p99 not streaming", 0});
  std::sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.ms > b.ms; });
  for (std::size_t i = 0; i < marks.size(); ++i) {
    marks[i].label_y = c.y(marks[i].ms) + 4;
    if (i > 0) marks[i].label_y = std::max(marks[i].label_y, marks[i - 1].label_y + 15);
  }
  for (const Mark& m : marks) {
    append(out,
           "<line class='p99' x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' "
           "stroke-width='1.5' stroke-dasharray='6 4'/>"
           "<text class='p99-label' x='%.1f' y='%.1f' fill='%s'>%s %.1f ms</text>\n",
           c.left, c.right + 4, c.y(m.ms), c.y(m.ms), m.colour, c.right + 8, m.label_y, m.colour,
           m.label, m.ms);
  }
}

void draw_legend(std::string& out, const Chart& c, std::size_t streaming, std::size_t quiet) {
  append(out,
         "<text x='%.1f' y='22' font-size='14' font-weight='bold'>Frame times: %zu frames "
         "streaming, %zu not streaming, in alternating blocks</text>\n",
         c.left, streaming, quiet);
  const double y = 44;
  append(out,
         "<rect x='%.1f' y='%.1f' width='18' height='10' fill='#f7c97e' fill-opacity='0.55'/>"
         "<text x='%.1f' y='%.1f'>streaming block (uploads in flight)</text>\n"
         "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#1f5fa8' stroke-width='1.2'/>"
         "<text x='%.1f' y='%.1f'>frame time</text>\n"
         "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#555' stroke-dasharray='6 4'/>"
         "<text x='%.1f' y='%.1f'>p99 of each phase</text>\n",
         c.left, y - 9, c.left + 24, y, c.left + 250, c.left + 270, y - 4, y - 4, c.left + 276, y,
         c.left + 360, c.left + 380, y - 4, y - 4, c.left + 386, y);
}

}  // namespace

std::string frame_times_svg(const std::vector<FrameTime>& frames, const Percentiles& with,
                            const Percentiles& without) {
  Chart c;
  double max_ms = 0;
  for (const FrameTime& f : frames)
    max_ms = std::max(max_ms, f.ms);
  const std::vector<double> y_ticks = axis_ticks(max_ms * 1.05, 6);
  // The x axis ends at the last frame; its ticks are those at or before it.
  c.frames = static_cast<double>(std::max<std::size_t>(frames.size(), 1));
  std::vector<double> x_ticks = axis_ticks(c.frames, 10);
  std::erase_if(x_ticks, [&](double v) { return v > c.frames; });
  c.top_ms = y_ticks.back();
  std::string out;
  append(out,
         "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' viewBox='0 0 %.0f "
         "%.0f' font-family='DejaVu Sans, Helvetica, Arial, sans-serif' font-size='12'>\n"
         "<rect width='100%%' height='100%%' fill='white'/>\n",
         c.width, c.height, c.width, c.height);
  draw_data(out, c, frames);
  draw_axes(out, c, x_ticks, y_ticks);
  draw_p99(out, c, with, without);
  draw_legend(out, c, with.frames, without.frames);
  return out + "</svg>\n";
}

bool write_svg(const std::string& path, const std::vector<FrameTime>& frames,
               const Percentiles& with, const Percentiles& without) {
  std::ofstream out(path);
  out << frame_times_svg(frames, with, without);
  return static_cast<bool>(out);
}

}  // namespace example
