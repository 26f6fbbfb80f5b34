#include "frame_times.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>

namespace example {

Percentiles percentiles(const std::vector<FrameTime>& frames, bool streaming) {
  std::vector<double> v;
  for (const FrameTime& f : frames) {
    if (f.streaming == streaming) v.push_back(f.ms);
  }
  Percentiles p;
  p.frames = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.max = v.back();
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return p;
}

bool write_csv(const std::string& path, const std::vector<FrameTime>& frames) {
  std::ofstream out(path);
  out << "frame,ms,streaming\n";
  for (std::size_t i = 0; i < frames.size(); ++i) {
    out << i << ',' << frames[i].ms << ',' << (frames[i].streaming ? 1 : 0) << '\n';
  }
  return static_cast<bool>(out);
}

bool write_svg(const std::string& path, const std::vector<FrameTime>& frames,
               const Percentiles& with, const Percentiles& without) {
  const double w = 900, h = 320, left = 60, right = 20, top = 30, bottom = 40;
  double top_ms = 0.001;
  for (const FrameTime& f : frames)
    top_ms = std::max(top_ms, f.ms);
  top_ms *= 1.1;
  const double n = static_cast<double>(std::max<std::size_t>(frames.size(), 2) - 1);
  const auto x = [&](std::size_t i) {
    return left + (w - left - right) * static_cast<double>(i) / n;
  };
  const auto y = [&](double ms) { return top + (h - top - bottom) * (1.0 - ms / top_ms); };
  std::ofstream out(path);
  char buf[256];
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
         "fill='white'/>\n";
  // Streaming frames shaded.
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (!frames[i].streaming) continue;
    std::snprintf(buf, sizeof buf,
                  "<rect x='%.1f' y='%.1f' width='%.2f' height='%.1f' fill='#fde7c8'/>\n", x(i),
                  top, std::max(1.0, (w - left - right) / n), h - top - bottom);
    out << buf;
  }
  out << "<polyline fill='none' stroke='#1f5fa8' stroke-width='1' points='";
  for (std::size_t i = 0; i < frames.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(i), y(frames[i].ms));
    out << buf;
  }
  out << "'/>\n";
  const auto line = [&](double ms, const char* colour, const char* label) {
    if (ms <= 0) return;
    std::snprintf(buf, sizeof buf,
                  "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' "
                  "stroke-dasharray='4 3'/><text x='%.1f' y='%.1f' fill='%s'>%s %.3f ms</text>\n",
                  left, w - right, y(ms), y(ms), colour, left + 6, y(ms) - 4, colour, label, ms);
    out << buf;
  };
  line(with.p99, "#c0392b", "p99 streaming");
  line(without.p99, "#27ae60", "p99 not streaming");
  std::snprintf(buf, sizeof buf,
                "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='black'/>"
                "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='black'/>\n",
                left, w - right, h - bottom, h - bottom, left, left, top, h - bottom);
  out << buf;
  std::snprintf(buf, sizeof buf,
                "<text x='%.1f' y='%.1f'>frame</text><text x='4' y='%.1f'>%.2f ms</text>"
                "<text x='4' y='%.1f'>0</text>\n",
                w / 2, h - 10, top + 4, top_ms, h - bottom);
  out << buf;
  out << "<text x='" << left << "' y='18'>frame times (shaded: uploads in flight)</text>\n</svg>\n";
  return static_cast<bool>(out);
}

}  // namespace example
