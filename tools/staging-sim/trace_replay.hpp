// Upload traces: a user's captured uploads, replayed by the simulator (--replay FILE). Two
// spellings of one format, documented in docs/sim.md ("Trace replay"), with examples in
// tools/staging-sim/examples/:
//
//   CSV   a header naming the columns, then one upload per line; '#' starts a comment line.
//           time_us,size,alignment,kind,frame,granularity
//           0,65536,256,constants,0,1
//         time_us and size are required (time_ms or time_ns may replace time_us); alignment
//         (default 1), kind (default "upload"), frame (default -1, empty = -1: not tied to a
//         frame) and granularity (default 1) are optional. Unknown columns are an error.
//   JSON  {"uploads": [{"time_us": 0, "size": 65536, "alignment": 256, "kind": "constants",
//         "frame": 0}, ...], "stalls": [{"at_us": 2000000, "for_us": 250000}]} — the same keys;
//         a bare array of uploads is accepted too.
//
// Uploads are replayed in time order (ties keep the file's order).
#pragma once

#include <string>
#include <string_view>

#include "staging/core/errors.hpp"
#include "upload.hpp"

namespace staging::sim {

/// Reads a trace from `path`: JSON when the first non-blank character is '{' or '[', CSV
/// otherwise. Errors name the file, the line (CSV) or upload index (JSON), and what is wrong.
[[nodiscard]] Expected<Workload, std::string> read_trace(const std::string& path);

/// Parses trace text (what read_trace does after reading the file); `name` is used in messages.
[[nodiscard]] Expected<Workload, std::string> parse_trace(std::string_view text,
                                                          std::string_view name);

}  // namespace staging::sim
