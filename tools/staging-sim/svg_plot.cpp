// The SVG plot of one run (--plot): held bytes, bytes in flight, capacity and cap over simulated
// time, queue stalls shaded, and below the chart one lane per policy event (waits, would-blocks,
// splits, fallbacks, grows/trims, timeouts, direct uploads, wraps, frame pacing), coloured by
// cause. Long runs are reduced to one value per pixel column (the column's maximum), so the file
// stays small and no peak is lost.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "reports.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

constexpr double kWidth = 1260;
constexpr double kLeft = 120;    // chart area
constexpr double kRight = 1190;  // chart area's right edge (lane counts to its right)
constexpr double kTop = 92;
constexpr double kChartHeight = 330;
constexpr double kLaneTop = kTop + kChartHeight + 58;
constexpr double kLaneHeight = 22;

constexpr const char* kHeld = "#1f5fbf";
constexpr const char* kInFlight = "#f4a259";
constexpr const char* kInFlightEdge = "#d9822b";
constexpr const char* kCapacity = "#333333";
constexpr const char* kCap = "#c1121f";
constexpr const char* kNeutral = "#6c757d";
constexpr const char* kCauseColour[3] = {"#f08c00", "#7b2cbf", "#c1121f"};  // InFlight, Frag, Cap

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// 1, 2 or 5 times a power of ten, so that `range` has about `target` steps.
double nice_step(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

std::string tick_label(double v, double step) {
  if (step >= 1) return fmt::format("{:.0f}", v);
  if (step >= 0.1) return fmt::format("{:.1f}", v);
  if (step >= 0.01) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

struct Lane {
  MarkKind kinds[2];
  int n_kinds;
  const char* label;
};

constexpr Lane kLanes[] = {
    {{MarkKind::Wait}, 1, "waits"},
    {{MarkKind::WouldBlock}, 1, "would-blocks"},
    {{MarkKind::Timeout, MarkKind::CapRefusal}, 2, "timeouts / cap"},
    {{MarkKind::Split}, 1, "splits"},
    {{MarkKind::Fallback}, 1, "fallbacks"},
    {{MarkKind::Grow, MarkKind::Trim}, 2, "grows / trims"},
    {{MarkKind::Direct}, 1, "direct (caller)"},
    {{MarkKind::Wrap}, 1, "wraps"},
    {{MarkKind::Pacing}, 1, "frame pacing"},
};

}  // namespace

std::string svg_plot(const RunResult& r) {
  const double chart_w = kRight - kLeft;
  const int columns = static_cast<int>(chart_w);
  const double lanes_h = std::size(kLanes) * kLaneHeight;
  const double height = kLaneTop + lanes_h + 50;

  // Time axis: seconds, or milliseconds for short runs.
  const Duration span = std::max(r.end, Duration{1000000});
  const double t_total = static_cast<double>(span.count());
  const bool in_ms = t_total < 2e9;
  const double unit = in_ms ? 1e6 : 1e9;
  const auto x_of = [&](Duration t) {
    return kLeft + chart_w * static_cast<double>(t.count()) / t_total;
  };

  // Bytes axis: MiB.
  uint64_t top_bytes = std::max({r.cap, r.peak_held, r.peak_in_flight, uint64_t{1}});
  const double mib = 1024.0 * 1024.0;
  const double y_max_raw = static_cast<double>(top_bytes) / mib * 1.08;
  const double y_step = nice_step(y_max_raw, 6);
  const double y_max = std::ceil(y_max_raw / y_step) * y_step;
  const auto y_of = [&](double bytes) {
    return kTop + kChartHeight - kChartHeight * (bytes / mib) / y_max;
  };

  // Per column maxima of held and in-flight bytes (step functions from the samples).
  std::vector<uint64_t> held(columns, 0), in_flight(columns, 0);
  {
    uint64_t cur_held = 0, cur_flight = 0;
    std::size_t i = 0;
    const std::vector<Sample>& s = r.samples;
    for (int c = 0; c < columns; ++c) {
      const double col_end = t_total * (c + 1) / columns;
      uint64_t mh = cur_held, mf = cur_flight;
      while (i < s.size() && static_cast<double>(s[i].time.count()) < col_end) {
        cur_held = s[i].held;
        cur_flight = s[i].in_flight;
        mh = std::max(mh, cur_held);
        mf = std::max(mf, cur_flight);
        ++i;
      }
      held[c] = mh;
      in_flight[c] = mf;
    }
  }

  std::string o;
  o += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 "
      "{:.0f} {:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
      "font-size=\"12\">\n",
      kWidth, height, kWidth, height);
  o += fmt::format("<rect width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", kWidth, height);

  // Title and key numbers.
  std::string title = "staging-sim — " + r.workload + " · " +
                      std::string(to_string(r.config.strategy)) + " ring, policy " +
                      policy_name(r.config.policy) + " · capacity " + format_bytes(r.capacity) +
                      ", cap " + format_bytes(r.cap) + " · delay " + r.delay + " · seed " +
                      std::to_string(r.config.seed);
  o += fmt::format("<text x=\"{:.0f}\" y=\"26\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
                   kLeft, escape(title).c_str());
  std::string sub = "peak held " + format_bytes(r.peak_held) + " · peak in flight " +
                    format_bytes(r.peak_in_flight) + " · " + format_count(r.waits) +
                    " waits (total " + format_duration(r.wait_total) + ", longest " +
                    format_duration(r.wait_longest) + ") · " +
                    format_count(r.would_block_causes.total()) + " would-blocks · " +
                    format_count(r.fallbacks) + " fallbacks · " + format_count(r.direct) +
                    " direct · invariant violations: " + std::to_string(r.invariant_violations());
  o += fmt::format("<text x=\"{:.0f}\" y=\"48\" font-size=\"12\" fill=\"#333\">{}</text>\n", kLeft,
                   escape(sub).c_str());

  // Stall windows (behind everything).
  for (const StallWindow& w : r.stalls) {
    const double x0 = x_of(w.at), x1 = std::min(x_of(w.at + w.length), kRight);
    if (x0 >= kRight) continue;
    o += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#adb5bd\" "
        "fill-opacity=\"0.35\"/>\n",
        x0, kTop, std::max(1.0, x1 - x0), kChartHeight);
    o += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#495057\">queue stalled</text>\n",
        x0 + 3, kTop + 12);
  }

  // Waits as translucent bands in the chart.
  for (const Mark& m : r.marks) {
    if (m.kind != MarkKind::Wait) continue;
    const double x0 = x_of(m.time), x1 = x_of(m.time + m.duration);
    o += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
        "fill-opacity=\"0.18\"/>\n",
        x0, kTop, std::max(0.8, x1 - x0), kChartHeight, kCauseColour[static_cast<int>(m.cause)]);
  }

  // Grid and axes.
  for (double v = 0; v <= y_max + 1e-9; v += y_step) {
    const double y = y_of(v * mib);
    o += fmt::format(
        "<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"#e9ecef\"/>\n",
        kLeft, y, kRight, y);
    o += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6,
                     y + 4, tick_label(v, y_step).c_str());
  }
  const double t_units = t_total / unit;
  const double x_step = nice_step(t_units, 10);
  for (double v = 0; v <= t_units + 1e-9; v += x_step) {
    const double x = kLeft + chart_w * v / t_units;
    o += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.0f}\" x2=\"{:.1f}\" y2=\"{:.0f}\" stroke=\"#e9ecef\"/>\n", x,
        kTop, x, kTop + kChartHeight);
    o += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.0f}\" x2=\"{:.1f}\" y2=\"{:.0f}\" stroke=\"#333\"/>\n", x,
        kTop + kChartHeight, x, kTop + kChartHeight + 5);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n", x,
                     kTop + kChartHeight + 18, tick_label(v, x_step).c_str());
  }
  o += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">simulated time ({})</text>\n",
      kLeft + chart_w / 2, kTop + kChartHeight + 36, in_ms ? "ms" : "s");
  o += fmt::format(
      "<text transform=\"translate({:.0f} {:.0f}) rotate(-90)\" text-anchor=\"middle\">staging "
      "memory (MiB)</text>\n",
      kLeft - 52, kTop + kChartHeight / 2);

  // In flight: filled steps.
  {
    std::string pts = fmt::format("{:.1f},{:.1f}", kLeft, y_of(0));
    for (int c = 0; c < columns; ++c) {
      const double y = y_of(static_cast<double>(in_flight[c]));
      pts += fmt::format(" {:.1f},{:.1f} {:.1f},{:.1f}", kLeft + c, y, kLeft + c + 1, y);
    }
    pts += fmt::format(" {:.1f},{:.1f}", kRight, y_of(0));
    o += "<polygon points=\"" + pts + "\" fill=\"" + kInFlight +
         "\" fill-opacity=\"0.55\" stroke=\"" + kInFlightEdge + "\" stroke-width=\"0.8\"/>\n";
  }
  // Held: a step line.
  {
    std::string pts;
    for (int c = 0; c < columns; ++c) {
      const double y = y_of(static_cast<double>(held[c]));
      pts += fmt::format("{}{:.1f},{:.1f} {:.1f},{:.1f}", c == 0 ? "" : " ", kLeft + c, y,
                         kLeft + c + 1, y);
    }
    o += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + kHeld +
         "\" stroke-width=\"2.2\"/>\n";
  }
  // Capacity and cap.
  const auto hline = [&](uint64_t bytes, const char* colour, const char* label, double dy) {
    const double y = y_of(static_cast<double>(bytes));
    o += fmt::format(
        "<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"1.4\" stroke-dasharray=\"7 4\"/>\n",
        kLeft, y, kRight, y, colour);
    o += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\" fill=\"{}\">{} "
        "{}</text>\n",
        kRight - 4, y + dy, colour, label, format_bytes(bytes).c_str());
  };
  hline(r.capacity, kCapacity, "capacity", r.cap == r.capacity ? 14 : -4);
  if (r.cap != r.capacity) hline(r.cap, kCap, "cap", -4);
  // Fallbacks: diamonds on the top edge of the chart.
  for (const Mark& m : r.marks) {
    if (m.kind != MarkKind::Fallback) continue;
    const double x = x_of(m.time), y = kTop + 6;
    o += fmt::format(
        "<path d=\"M{:.1f} {:.1f} l5 5 l-5 5 l-5 -5 z\" fill=\"{}\" stroke=\"#fff\" "
        "stroke-width=\"0.6\"/>\n",
        x, y - 5, kCauseColour[static_cast<int>(m.cause)]);
  }
  o += fmt::format(
      "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"none\" "
      "stroke=\"#333\"/>\n",
      kLeft, kTop, chart_w, kChartHeight);

  // Legend: one row between the title and the chart.
  {
    double x = kLeft;
    const double y = kTop - 14;
    const auto entry = [&](const std::string& swatch, const std::string& text) {
      o += swatch;
      o += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n", x + 24,
                       y + 4, escape(text).c_str());
      x += 24 + 6.0 * static_cast<double>(text.size()) + 18;
    };
    entry(fmt::format("<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                      "stroke-width=\"2.2\"/>\n",
                      x, y, x + 20, y, kHeld),
          "held bytes");
    entry(fmt::format("<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"20\" height=\"10\" fill=\"{}\" "
                      "fill-opacity=\"0.55\" stroke=\"{}\"/>\n",
                      x, y - 5, kInFlight, kInFlightEdge),
          "bytes in flight (not yet retired)");
    entry(fmt::format("<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                      "stroke-dasharray=\"7 4\"/>\n",
                      x, y, x + 20, y, kCapacity),
          "capacity");
    entry(fmt::format("<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                      "stroke-dasharray=\"7 4\"/>\n",
                      x, y, x + 20, y, kCap),
          "cap");
    entry(fmt::format("<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"20\" height=\"10\" fill=\"#adb5bd\" "
                      "fill-opacity=\"0.5\"/>\n",
                      x, y - 5),
          "queue stalled");
    entry(fmt::format("<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"20\" height=\"10\" fill=\"{}\" "
                      "fill-opacity=\"0.3\"/>\n",
                      x, y - 5, kCauseColour[0]),
          "wait");
    entry(fmt::format("<path d=\"M{:.0f} {:.1f} l5 5 l-5 5 l-5 -5 z\" fill=\"{}\"/>\n", x + 10,
                      y - 5, kCauseColour[0]),
          "fallback");
  }

  // Event lanes.
  o += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\" font-weight=\"bold\">policy events "
      "(count at the right)</text>\n",
      kLeft, kLaneTop - 8);
  {
    // The cause colours, on the lanes' heading line.
    double x = kLeft + 240;
    const double y = kLaneTop - 12;
    o += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"11\" font-weight=\"bold\">colour = "
        "cause:</text>\n",
        x, y + 4);
    x += 110;
    const char* names[4] = {"InFlight (the GPU still holds the bytes)",
                            "Fragmentation (free, not contiguous)", "Cap", "no cause (wrap, trim)"};
    const char* colours[4] = {kCauseColour[0], kCauseColour[1], kCauseColour[2], kNeutral};
    for (int c = 0; c < 4; ++c) {
      o += fmt::format("<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"14\" height=\"10\" fill=\"{}\"/>\n",
                       x, y - 5, colours[c]);
      o += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n", x + 18,
                       y + 4, names[c]);
      x += 18 + 6.0 * static_cast<double>(std::string_view(names[c]).size()) + 16;
    }
  }
  for (std::size_t li = 0; li < std::size(kLanes); ++li) {
    const Lane& lane = kLanes[li];
    const double y0 = kLaneTop + li * kLaneHeight;
    const double mid = y0 + kLaneHeight / 2;
    o += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"{}\"/>\n", kLeft,
        y0, chart_w, kLaneHeight, li % 2 == 0 ? "#f8f9fa" : "#ffffff");
    o += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\">{}</text>\n",
        kLeft - 6, mid + 4, lane.label);
    uint64_t count = 0;
    // One marker per (pixel column, cause, kind): dense events do not bloat the file.
    std::map<std::tuple<int, int, int>, bool> drawn;
    for (const Mark& m : r.marks) {
      bool mine = false;
      for (int k = 0; k < lane.n_kinds; ++k)
        mine = mine || m.kind == lane.kinds[k];
      if (!mine) continue;
      ++count;
      const double x = x_of(m.time);
      const bool neutral =
          m.kind == MarkKind::Wrap || m.kind == MarkKind::Trim || m.kind == MarkKind::Pacing;
      const char* colour = neutral ? kNeutral : kCauseColour[static_cast<int>(m.cause)];
      if (m.kind == MarkKind::Wait || m.kind == MarkKind::Pacing) {
        o += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"12\" fill=\"{}\"{}/>\n", x,
            mid - 6, std::max(1.0, x_of(m.time + m.duration) - x), colour,
            m.flag ? " stroke=\"#000\" stroke-width=\"0.8\"" : "");
        continue;
      }
      const auto key =
          std::tuple{static_cast<int>(x), static_cast<int>(m.cause), static_cast<int>(m.kind)};
      if (drawn[key]) continue;
      drawn[key] = true;
      switch (m.kind) {
        case MarkKind::Fallback:
          o += fmt::format("<path d=\"M{:.1f} {:.1f} l5 5 l-5 5 l-5 -5 z\" fill=\"{}\"/>\n", x,
                           mid - 5, colour);
          break;
        case MarkKind::Grow:
          o += fmt::format("<path d=\"M{:.1f} {:.1f} l5 9 l-10 0 z\" fill=\"{}\"/>\n", x, mid - 5,
                           "#2b9348");
          break;
        case MarkKind::Trim:
          o += fmt::format("<path d=\"M{:.1f} {:.1f} l5 -9 l-10 0 z\" fill=\"{}\"/>\n", x, mid + 5,
                           colour);
          break;
        case MarkKind::Timeout:
        case MarkKind::CapRefusal:
          o += fmt::format(
              "<path d=\"M{:.1f} {:.1f} l8 8 m0 -8 l-8 8\" stroke=\"{}\" stroke-width=\"2\"/>\n",
              x - 4, mid - 4, colour);
          break;
        case MarkKind::Direct:
          o += fmt::format(
              "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\"/>\n", x - 4,
              mid - 4, colour);
          break;
        default:
          o += fmt::format(
              "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
              "stroke-width=\"1.2\"/>\n",
              x, mid - 7, x, mid + 7, colour);
      }
    }
    o += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#333\">{}</text>\n",
                     kRight + 8, mid + 4, format_count(count).c_str());
  }
  o += fmt::format(
      "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"none\" "
      "stroke=\"#adb5bd\"/>\n",
      kLeft, kLaneTop, chart_w, lanes_h);
  o += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"10\" fill=\"#6c757d\">The GPU queue is "
      "simulated (virtual time); every byte count is the real core's. Waits are shaded in the "
      "chart; stalls in grey.</text>\n",
      kLeft, kLaneTop + lanes_h + 22);
  o += "</svg>\n";
  return o;
}

}  // namespace staging::sim
