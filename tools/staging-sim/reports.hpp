// The simulator's outputs for one run: the summary table (text), the JSON report (--json), the
// Chrome trace-event file (--trace, opens in Perfetto / chrome://tracing) and the SVG plot
// (--plot). Each writer reads a RunResult and nothing else.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "run_result.hpp"

namespace staging::sim {

/// The readable summary: configuration, workload, what the ring did, every cause count, the
/// checker's verdict. Several lines, ending with a newline.
[[nodiscard]] std::string summary_text(const RunResult& r);

/// Every stat, the cause counts and "invariant_violations" (with the messages, at most 100).
[[nodiscard]] nlohmann::ordered_json result_json(const RunResult& r);

/// Chrome trace-event JSON: each reservation a span ("X") from reserve to retire with its offset
/// and size, waits as spans, wraps, splits, grows, trims, fallbacks, would-blocks, timeouts and
/// cap refusals as instant events with their cause, submissions as spans on a queue track, and
/// counters of held and in-flight bytes. Needs config.record_timeline.
[[nodiscard]] nlohmann::ordered_json chrome_trace(const RunResult& r);

/// An SVG of held bytes, bytes in flight, capacity and cap over time, with waits, would-blocks,
/// splits, fallbacks, grows, timeouts and direct uploads marked in lanes below. Needs
/// config.record_timeline.
[[nodiscard]] std::string svg_plot(const RunResult& r);

/// Writes `text` to `path`. False (with `error` set) when it cannot.
bool write_file(const std::string& path, const std::string& text, std::string* error);

}  // namespace staging::sim
