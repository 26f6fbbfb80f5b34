// The SVG plot of one run (--plot): held bytes, bytes in flight, capacity and cap over simulated
// time, queue stalls shaded, and below the chart one lane per policy event (waits, would-blocks,
// splits, fallbacks, grows/trims, timeouts, direct uploads, wraps, frame pacing), coloured by
// cause. Long runs are reduced to one value per pixel column (the column's maximum), so the file
// stays small and no peak is lost. Held bytes are drawn thick under the capacity's dashes, so both
// show where a ring holds exactly its capacity; events closer than a marker's width are spread
// apart in their lane, so each one stays visible.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <set>
#include <tuple>
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
constexpr double kBottom = kTop + kChartHeight;
constexpr double kLaneTop = kBottom + 58;
constexpr double kLaneHeight = 22;

constexpr const char* kHeld = "#1f5fbf";
constexpr const char* kInFlight = "#f4a259";
constexpr const char* kInFlightEdge = "#d9822b";
constexpr const char* kCapacity = "#333333";
constexpr const char* kCap = "#c1121f";
constexpr const char* kNeutral = "#6c757d";
constexpr const char* kStall = "#adb5bd";
constexpr const char* kCauseColour[3] = {"#f08c00", "#7b2cbf", "#c1121f"};  // InFlight, Frag, Cap
constexpr const char* kDiamond = "l5 5 l-5 5 l-5 -5 z";
constexpr double kMarkerGap = 4;    // the least distance between two markers of one lane
constexpr double kMinWaitBand = 3;  // the narrowest wait band in the chart, pixels
constexpr double kHeldWidth = 4;
constexpr const char* kLimitDash = "10 6";
constexpr const char* kHalo = R"(stroke="#fff" stroke-width="3" paint-order="stroke")";

std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    out += c == '&'   ? "&amp;"
           : c == '<' ? "&lt;"
           : c == '>' ? "&gt;"
           : c == '"' ? "&quot;"
                      : std::string(1, c);
  }
  return out;
}

// An SVG document being written, one element per line.
struct Svg {
  std::string out;
  template <class... Args>
  void add(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
    out += '\n';
  }
  void rect(double x, double y, double w, double h, std::string_view style) {
    add(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.2f}" height="{:.1f}" {}/>)", x, y, w, h, style);
  }
  void line(double x1, double y1, double x2, double y2, std::string_view style) {
    add(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" {}/>)", x1, y1, x2, y2, style);
  }
  void path(double x, double y, std::string_view shape, std::string_view style) {
    add(R"(<path d="M{:.1f} {:.1f} {}" {}/>)", x, y, shape, style);
  }
  void text(double x, double y, std::string_view style, std::string_view content) {
    add(R"(<text x="{:.1f}" y="{:.1f}" {}>{}</text>)", x, y, style, escape(content));
  }
};

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
  return fmt::format("{:.{}f}", v, step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3);
}

struct Lane {
  MarkKind first, second;  // the marks it shows (second == first: one kind)
  const char* label;
};
constexpr Lane kLanes[] = {
    {MarkKind::Wait, MarkKind::Wait, "waits"},
    {MarkKind::WouldBlock, MarkKind::WouldBlock, "would-blocks"},
    {MarkKind::Timeout, MarkKind::CapRefusal, "timeouts / cap"},
    {MarkKind::Split, MarkKind::Split, "splits"},
    {MarkKind::Fallback, MarkKind::Fallback, "fallbacks"},
    {MarkKind::Grow, MarkKind::Trim, "grows / trims"},
    {MarkKind::Direct, MarkKind::Direct, "direct (caller)"},
    {MarkKind::Wrap, MarkKind::Wrap, "wraps"},
    {MarkKind::Pacing, MarkKind::Pacing, "frame pacing"},
};

// Per pixel column, the highest held and in-flight bytes (step functions from the samples).
std::pair<std::vector<uint64_t>, std::vector<uint64_t>> column_maxima(const RunResult& r,
                                                                      int columns, double total) {
  std::vector<uint64_t> held(columns, 0), in_flight(columns, 0);
  uint64_t cur_held = 0, cur_flight = 0;
  std::size_t i = 0;
  for (int c = 0; c < columns; ++c) {
    held[c] = cur_held;
    in_flight[c] = cur_flight;
    for (; i < r.samples.size() &&
           static_cast<double>(r.samples[i].time.count()) < total * (c + 1) / columns;
         ++i) {
      cur_held = r.samples[i].held;
      cur_flight = r.samples[i].in_flight;
      held[c] = std::max(held[c], cur_held);
      in_flight[c] = std::max(in_flight[c], cur_flight);
    }
  }
  return {held, in_flight};
}

// A lane's marker for mark `m` at x (waits and pacing are drawn as spans by the caller).
void marker(Svg& svg, const Mark& m, double x, double mid, const char* colour) {
  switch (m.kind) {
    case MarkKind::Fallback:
      return svg.path(x, mid - 5, kDiamond, fmt::format(R"(fill="{}")", colour));
    case MarkKind::Grow:
      return svg.path(x, mid - 5, "l5 9 l-10 0 z", R"(fill="#2b9348")");
    case MarkKind::Trim:
      return svg.path(x, mid + 5, "l5 -9 l-10 0 z", fmt::format(R"(fill="{}")", colour));
    case MarkKind::Timeout:
    case MarkKind::CapRefusal:
      return svg.path(x - 4, mid - 4, "l8 8 m0 -8 l-8 8",
                      fmt::format(R"(stroke="{}" stroke-width="2")", colour));
    case MarkKind::Direct:
      return svg.rect(x - 4, mid - 4, 8, 8, fmt::format(R"(fill="{}")", colour));
    default:
      return svg.line(x, mid - 7, x, mid + 7,
                      fmt::format(R"(stroke="{}" stroke-width="1.2")", colour));
  }
}

const char* cause_colour(BlockCause c) {
  return kCauseColour[static_cast<int>(c)];
}

// One lane's markers, in time order, in a <g class="lane"> whose children are exactly its
// markers, and its count at the right. Where there is room for every marker, one closer than
// kMarkerGap to the previous (or overlapping the previous span) moves right until it is not, so
// each event stays visible; a lane too dense for that draws one marker per (pixel column, cause,
// kind).
void draw_lane(Svg& svg, const RunResult& r, const Lane& lane, double mid,
               const std::function<double(Duration)>& x_of) {
  std::vector<const Mark*> marks;
  for (const Mark& m : r.marks) {
    if (m.kind == lane.first || m.kind == lane.second) marks.push_back(&m);
  }
  std::stable_sort(marks.begin(), marks.end(),
                   [](const Mark* a, const Mark* b) { return a->time < b->time; });
  const bool spread = static_cast<double>(marks.size()) * kMarkerGap <= kRight - kLeft;
  svg.text(kLeft - 6, mid + 4, R"(text-anchor="end" font-size="11")", lane.label);
  svg.add(R"(<g class="lane" data-lane="{}" data-count="{}">)", lane.label, marks.size());
  double next_free = kLeft;
  std::set<std::tuple<int, int, int>> drawn;  // dense lanes: one per (pixel column, cause, kind)
  for (const Mark* m : marks) {
    const bool neutral =
        m->kind == MarkKind::Wrap || m->kind == MarkKind::Trim || m->kind == MarkKind::Pacing;
    const char* colour = neutral ? kNeutral : cause_colour(m->cause);
    const bool span = m->kind == MarkKind::Wait || m->kind == MarkKind::Pacing;
    double x = x_of(m->time);
    const double w = span ? std::max(1.5, x_of(m->time + m->duration) - x) : 0;
    if (spread) {
      x = std::max(x, next_free);
      next_free = x + (span ? w + 1.5 : kMarkerGap);
    } else if (!span && !drawn
                             .insert({static_cast<int>(x), static_cast<int>(m->cause),
                                      static_cast<int>(m->kind)})
                             .second) {
      continue;
    }
    if (span) {
      svg.rect(x, mid - 6, w, 12,
               fmt::format(R"(fill="{}"{})", colour,
                           m->flag ? R"( stroke="#000" stroke-width="0.8")" : ""));
    } else {
      marker(svg, *m, x, mid, colour);
    }
  }
  svg.add("</g>");
  svg.text(kRight + 8, mid + 4, R"(font-size="11" fill="#333")", format_count(marks.size()));
}
constexpr double kChartWidth = kRight - kLeft;
constexpr double kMiB = 1024.0 * 1024.0;

// The chart's axes: time across (seconds, or milliseconds for short runs), MiB up.
struct Axes {
  double t_total = 0;
  bool in_ms = false;
  double y_step = 0, y_max = 0;

  double x(Duration t) const {
    return kLeft + kChartWidth * static_cast<double>(t.count()) / t_total;
  }
  double y(double bytes) const { return kBottom - kChartHeight * (bytes / kMiB) / y_max; }
};

Axes axes_of(const RunResult& r) {
  Axes a;
  a.t_total = static_cast<double>(std::max(r.end, Duration{1000000}).count());
  a.in_ms = a.t_total < 2e9;
  const double y_max_raw =
      static_cast<double>(std::max({r.cap, r.peak_held, r.peak_in_flight, uint64_t{1}})) / kMiB *
      1.15;
  a.y_step = nice_step(y_max_raw, 6);
  a.y_max = std::ceil(y_max_raw / a.y_step) * a.y_step;
  return a;
}

// Title and key numbers.
void draw_title(Svg& svg, const RunResult& r) {
  svg.text(kLeft, 26, R"(font-size="16" font-weight="bold")",
           fmt::format("staging-sim — {} · {} ring, policy {} · capacity {}, cap {} · delay {} · "
                       "seed {}",
                       r.workload, to_string(r.config.strategy), policy_name(r.config.policy),
                       format_bytes(r.capacity), format_bytes(r.cap), r.delay, r.config.seed));
  svg.text(
      kLeft, 48, R"(font-size="12" fill="#333")",
      fmt::format("peak held {} · peak in flight {} · {} waits (total {}, longest {}) · {} "
                  "would-blocks · {} fallbacks · {} direct · invariant violations: {}",
                  format_bytes(r.peak_held), format_bytes(r.peak_in_flight), format_count(r.waits),
                  format_duration(r.wait_total), format_duration(r.wait_longest),
                  format_count(r.would_block_causes.total()), format_count(r.fallbacks),
                  format_count(r.direct), r.invariant_violations()));
}

// Stall windows (behind everything), then waits as translucent bands.
void draw_bands(Svg& svg, const RunResult& r, const Axes& a) {
  for (const StallWindow& w : r.stalls) {
    const double x0 = a.x(w.at), x1 = std::min(a.x(w.at + w.length), kRight);
    if (x0 >= kRight) continue;
    svg.rect(x0, kTop, std::max(1.0, x1 - x0), kChartHeight,
             fmt::format(R"(fill="{}" fill-opacity="0.35")", kStall));
    svg.text(x0 + 3, kTop + 12, R"(font-size="10" fill="#495057")", "queue stalled");
  }
  for (const Mark& m : r.marks) {
    if (m.kind != MarkKind::Wait) continue;
    const double w = std::max(kMinWaitBand, a.x(m.time + m.duration) - a.x(m.time));
    svg.rect(
        a.x(m.time), kTop, w, kChartHeight,
        fmt::format(R"(class="wait-band" fill="{}" fill-opacity="0.45")", cause_colour(m.cause)));
  }
}

// Grid and axes.
void draw_grid(Svg& svg, const Axes& a) {
  for (double v = 0; v <= a.y_max + 1e-9; v += a.y_step) {
    const double y = a.y(v * kMiB);
    svg.line(kLeft, y, kRight, y, R"(stroke="#e9ecef")");
    svg.text(kLeft - 6, y + 4, R"(text-anchor="end")", tick_label(v, a.y_step));
  }
  const double t_units = a.t_total / (a.in_ms ? 1e6 : 1e9);
  const double x_step = nice_step(t_units, 10);
  for (double v = 0; v <= t_units + 1e-9; v += x_step) {
    const double x = kLeft + kChartWidth * v / t_units;
    svg.line(x, kTop, x, kBottom, R"(stroke="#e9ecef")");
    svg.line(x, kBottom, x, kBottom + 5, R"(stroke="#333")");
    svg.text(x, kBottom + 18, R"(text-anchor="middle")", tick_label(v, x_step));
  }
  svg.text(kLeft + kChartWidth / 2, kBottom + 36, R"(text-anchor="middle")",
           fmt::format("simulated time ({})", a.in_ms ? "ms" : "s"));
  svg.add(R"x(<text transform="translate({:.0f} {:.0f}) rotate(-90)" text-anchor="middle">)x"
          R"(staging memory (MiB)</text>)",
          kLeft - 52, kTop + kChartHeight / 2);
}

// A limit (capacity or cap) as a dashed line across the chart, labelled at its right end.
void draw_limit(Svg& svg, const Axes& a, uint64_t bytes, const char* colour, const char* cls,
                const char* label) {
  const double y = a.y(static_cast<double>(bytes));
  // A white edge under each dash, so the dashes cut a line lying under them into segments.
  svg.line(kLeft, y, kRight, y,
           fmt::format(R"(stroke="#fff" stroke-width="5" stroke-dasharray="{}")", kLimitDash));
  svg.line(kLeft, y, kRight, y,
           fmt::format(R"(class="{}" stroke="{}" stroke-width="1.6" stroke-dasharray="{}")", cls,
                       colour, kLimitDash));
  svg.text(kRight - 4, y - 5,
           fmt::format(R"(text-anchor="end" font-size="11" fill="{}" {})", colour, kHalo),
           fmt::format("{} {}", label, format_bytes(bytes)));
}

// In flight as filled steps, held as a step line, capacity and cap as dashed lines, fallbacks
// as diamonds on the top edge, and the chart's frame.
void draw_bytes(Svg& svg, const RunResult& r, const Axes& a) {
  const int columns = static_cast<int>(kChartWidth);
  const auto [held, in_flight] = column_maxima(r, columns, a.t_total);
  std::string flight_pts = fmt::format("{:.1f},{:.1f}", kLeft, a.y(0)), held_pts;
  for (int c = 0; c < columns; ++c) {
    const double yf = a.y(static_cast<double>(in_flight[c]));
    const double yh = a.y(static_cast<double>(held[c]));
    flight_pts += fmt::format(" {:.1f},{:.1f} {:.1f},{:.1f}", kLeft + c, yf, kLeft + c + 1, yf);
    held_pts += fmt::format("{}{:.1f},{:.1f} {:.1f},{:.1f}", c == 0 ? "" : " ", kLeft + c, yh,
                            kLeft + c + 1, yh);
  }
  svg.add(R"(<polygon points="{} {:.1f},{:.1f}" fill="{}" fill-opacity="0.55" stroke="{}" )"
          R"(stroke-width="0.8"/>)",
          flight_pts, kRight, a.y(0), kInFlight, kInFlightEdge);
  // Held bytes thick and solid, then the limits dashed on top: where the ring holds exactly its
  // capacity, the blue line shows between the capacity's dashes.
  svg.add(R"(<polyline class="held" points="{}" fill="none" stroke="{}" stroke-width="{}"/>)",
          held_pts, kHeld, kHeldWidth);
  draw_limit(svg, a, r.capacity, kCapacity, "capacity", "capacity");
  if (r.cap != r.capacity) draw_limit(svg, a, r.cap, kCap, "cap", "cap");
  // The held line's own label at its right end, below it (above it when it ends at the bottom).
  const uint64_t held_end = held.empty() ? 0 : held.back();
  const double y_held = a.y(static_cast<double>(held_end));
  svg.text(kRight - 4, y_held + 15 > kBottom - 2 ? y_held - 5 : y_held + 15,
           fmt::format(R"(text-anchor="end" font-size="11" fill="{}" {})", kHeld, kHalo),
           fmt::format("held bytes {}{}", format_bytes(held_end),
                       held_end == r.capacity ? " (= capacity)" : ""));
  for (const Mark& m : r.marks) {  // fallbacks: diamonds on the chart's top edge
    if (m.kind != MarkKind::Fallback) continue;
    svg.path(a.x(m.time), kTop + 1, kDiamond,
             fmt::format(R"(fill="{}" stroke="#fff" stroke-width="0.6")", cause_colour(m.cause)));
  }
  svg.rect(kLeft, kTop, kChartWidth, kChartHeight, R"(class="chart" fill="none" stroke="#333")");
}

// Legend: one row between the title and the chart.
void draw_legend(Svg& svg) {
  double lx = kLeft;
  const double ly = kTop - 14;
  const auto entry = [&](const std::string& swatch, std::string_view label) {
    svg.out += swatch + "\n";
    svg.text(lx + 24, ly + 4, R"(font-size="11")", label);
    lx += 24 + 6.0 * static_cast<double>(label.size()) + 18;
  };
  const auto swatch_line = [&](const char* colour, const char* style) {
    return fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" {}/>)",
                       lx, ly, lx + 20, ly, colour, style);
  };
  const auto swatch_box = [&](const char* colour, const char* style) {
    return fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="20" height="10" fill="{}" {}/>)", lx,
                       ly - 5, colour, style);
  };
  entry(swatch_line(kHeld, R"(stroke-width="4")"), "held bytes");
  entry(swatch_box(kInFlight,
                   fmt::format(R"(fill-opacity="0.55" stroke="{}")", kInFlightEdge).c_str()),
        "bytes in flight (not yet retired)");
  entry(swatch_line(kCapacity, R"(stroke-width="1.6" stroke-dasharray="6 3")"), "capacity");
  entry(swatch_line(kCap, R"(stroke-width="1.6" stroke-dasharray="6 3")"), "cap");
  entry(swatch_box(kStall, R"(fill-opacity="0.5")"), "queue stalled");
  entry(swatch_box(kCauseColour[0], R"(fill-opacity="0.45")"), "wait");
  entry(fmt::format(R"(<path d="M{:.1f} {:.1f} {}" fill="{}"/>)", lx + 10, ly - 5, kDiamond,
                    kCauseColour[0]),
        "fallback");
}

// Event lanes: a heading with the cause colours, then one lane per kind of mark.
void draw_lanes(Svg& svg, const RunResult& r, const Axes& a) {
  const double lanes_h = std::size(kLanes) * kLaneHeight;
  svg.text(kLeft, kLaneTop - 8, R"(font-size="12" font-weight="bold")",
           "policy events (count at the right)");
  svg.text(kLeft + 240, kLaneTop - 8, R"(font-size="11" font-weight="bold")", "colour = cause:");
  double cx = kLeft + 350;
  for (const auto& [colour, name] :
       {std::pair{kCauseColour[0], "InFlight (the GPU still holds the bytes)"},
        std::pair{kCauseColour[1], "Fragmentation (free, not contiguous)"},
        std::pair{kCauseColour[2], "Cap"}, std::pair{kNeutral, "no cause (wrap, trim)"}}) {
    svg.rect(cx, kLaneTop - 17, 14, 10, fmt::format(R"(fill="{}")", colour));
    svg.text(cx + 18, kLaneTop - 8, R"(font-size="11")", name);
    cx += 18 + 6.0 * static_cast<double>(std::string_view(name).size()) + 16;
  }
  const auto x_of = [&a](Duration t) { return a.x(t); };
  for (std::size_t li = 0; li < std::size(kLanes); ++li) {
    const double y0 = kLaneTop + static_cast<double>(li) * kLaneHeight;
    svg.rect(kLeft, y0, kChartWidth, kLaneHeight,
             li % 2 == 0 ? R"(fill="#f8f9fa")" : R"(fill="#ffffff")");
    draw_lane(svg, r, kLanes[li], y0 + kLaneHeight / 2, x_of);
  }
  svg.rect(kLeft, kLaneTop, kChartWidth, lanes_h, R"(fill="none" stroke="#adb5bd")");
  svg.text(kLeft, kLaneTop + lanes_h + 22, R"(font-size="10" fill="#6c757d")",
           "The GPU queue is simulated (virtual time); every byte count is the real core's. Waits "
           "are shaded in the chart; stalls in grey.");
}

}  // namespace

std::string svg_plot(const RunResult& r) {
  const double height = kLaneTop + std::size(kLanes) * kLaneHeight + 50;
  const Axes axes = axes_of(r);
  Svg svg;
  svg.add(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" )"
          R"(viewBox="0 0 {0:.0f} {1:.0f}" font-family="DejaVu Sans, Helvetica, Arial, )"
          R"(sans-serif" font-size="12">)",
          kWidth, height);
  svg.rect(0, 0, kWidth, height, R"(fill="#ffffff")");
  draw_title(svg, r);
  draw_bands(svg, r, axes);
  draw_grid(svg, axes);
  draw_bytes(svg, r, axes);
  draw_legend(svg);
  draw_lanes(svg, r, axes);
  return svg.out + "</svg>\n";
}

}  // namespace staging::sim
