// staging-sim's capture import on the command line: --gfxr CAPTURE.jsonl [--gfxr-binary
// CAPTURE.gfxr] [--export-trace FILE.csv] [--import-stats FILE.json], with --ring-bytes (the
// ring the answer is given for: the simulation's --capacity), and --json, --trace, --plot,
// --compare as for any workload. docs/sim.md, "Sizing a ring for a captured application".
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "sim_config.hpp"

namespace staging::sim {

/// The import's options.
struct GfxrRequest {
  std::string capture;  ///< gfxrecon-convert's JSON Lines; empty: no import
  std::string binary;   ///< the uncompressed .gfxr, for its fill-memory commands
  std::string export_trace;
  std::string import_stats;
};

/// The run's outputs, as the command line gives them for every workload.
struct GfxrOutputs {
  std::string json;
  std::string trace;
  std::string plot;
  bool compare = false;
  bool markdown = false;
  bool quiet = false;
  bool no_progress = false;
};

/// Registers --gfxr, --gfxr-binary, --export-trace and --import-stats into `request`.
void add_gfxr_options(CLI::App& app, GfxrRequest& request);

/// Imports the capture, writes --export-trace and --import-stats, prints the import's summary
/// and the answer (gfxr_answer.hpp) — or, with --compare, the policy table too — and writes
/// --json (the answer under "gfxr"), --trace and --plot (the run under `config`). Returns the
/// exit status: 0, 1 (an invariant violated), 2 (a bad input or an unwritable output).
[[nodiscard]] int run_gfxr(const GfxrRequest& request, const SimConfig& config,
                           const GfxrOutputs& outputs);

}  // namespace staging::sim
