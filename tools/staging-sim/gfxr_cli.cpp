#include "gfxr_cli.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "compare.hpp"
#include "gfxr_answer.hpp"
#include "gfxr_import.hpp"
#include "progress.hpp"
#include "reports.hpp"
#include "simulator.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

using nlohmann::ordered_json;

constexpr int kExitViolation = 1;
constexpr int kExitUsage = 2;

int fail(const std::string& message) {
  fmt::print(stderr, "staging-sim: {}\n", message);
  return kExitUsage;
}

bool write(const std::string& path, const std::string& text) {
  std::string error;
  if (path.empty() || write_file(path, text, &error)) return true;
  fmt::print(stderr, "staging-sim: {}\n", error);
  return false;
}

// An output we cannot create is a usage error before any work.
bool writable(const std::string& path) {
  if (path.empty()) return true;
  std::ofstream probe(path, std::ios::app);
  if (probe) return true;
  fmt::print(stderr, "staging-sim: {}: cannot write\n", path);
  return false;
}

std::string import_summary(const GfxrImport& g) {
  const ImportStats& s = g.stats;
  std::string out = fmt::format("{}: {}\n", g.workload.name, g.workload.description);
  for (std::size_t i = 0; i < kCopyCommandNames.size(); ++i) {
    out += fmt::format("  {:<24} {:>8} commands {:>10}   imported {:>8} uploads {:>10}\n",
                       kCopyCommandNames[i], format_count(s.commands[i]), format_bytes(s.bytes[i]),
                       format_count(s.imported_uploads[i]), format_bytes(s.imported_bytes[i]));
  }
  out +=
      fmt::format("  {:<24} {:>8} writes   {:>10}   imported {:>8} uploads {:>10}\n", "host writes",
                  format_count(s.host_writes), format_bytes(s.host_write_bytes),
                  format_count(s.imported_host_writes), format_bytes(s.imported_host_write_bytes));
  out += fmt::format(
      "  {} uploads, {} submissions, {} frames; completion learned for {} (lag p50 {} / p99 {} / "
      "max {} frames); delay model {}\n",
      format_count(g.workload.uploads.size()), format_count(s.submissions), format_count(s.frames),
      format_count(s.completions_learned), s.lag_frames[0], s.lag_frames[1], s.lag_frames[2],
      g.workload.default_delay ? g.workload.default_delay->text : "the simulator's default");
  if (!s.skipped.empty()) {
    out += "  skipped:";
    for (const auto& [reason, n] : s.skipped)
      out += fmt::format(" {} {}", reason, format_count(n));
    out += "\n";
  }
  return out + "\n";
}

}  // namespace

void add_gfxr_options(CLI::App& app, GfxrRequest& r) {
  CLI::Option* gfxr = app.add_option(
      "--gfxr", r.capture,
      "import a GFXReconstruct capture (gfxrecon-convert's JSON Lines) and size a ring for it");
  gfxr->excludes("--workload")->excludes("--replay");
  app.add_option("--gfxr-binary", r.binary,
                 "--gfxr: the uncompressed .gfxr too, for the host writes into mapped memory")
      ->needs(gfxr);
  app.add_option("--export-trace", r.export_trace,
                 "--gfxr: write the imported uploads as a trace CSV (--replay reads it)")
      ->needs(gfxr);
  app.add_option("--import-stats", r.import_stats, "--gfxr: write the import's counts as JSON")
      ->needs(gfxr);
}

int run_gfxr(const GfxrRequest& q, const SimConfig& config, const GfxrOutputs& o) {
  for (const std::string* path : {&q.export_trace, &q.import_stats, &o.json, &o.trace, &o.plot}) {
    if (!writable(*path)) return kExitUsage;
  }
  auto imported = import_gfxr(q.capture, q.binary);
  if (!imported) return fail(imported.error());
  const GfxrImport& g = *imported;
  if (!write(q.export_trace, trace_csv(g.workload)) ||
      !write(q.import_stats, import_stats_json(g.stats).dump(1) + "\n")) {
    return kExitUsage;
  }
  if (g.workload.uploads.empty()) {
    return fail(
        fmt::format("{}: no uploads imported (--import-stats lists what was skipped)", q.capture));
  }
  if (!o.quiet) std::fputs(import_summary(g).c_str(), stdout);
  ProgressBar bar(!o.no_progress);
  const auto tell = [&](std::size_t done, std::size_t total, const std::string& l) {
    bar.update(done, total, l);
  };
  ordered_json report;
  uint64_t violations = 0;
  if (o.compare) {
    auto rows = run_compare(config, {g.workload}, tell);
    if (!rows) return fail(rows.error());
    if (!o.quiet) std::fputs(compare_table(*rows, o.markdown).c_str(), stdout);
    report = compare_json(config, *rows);
    violations += report["invariant_violations"].get<uint64_t>();
  } else {
    auto run = simulate(config, g.workload);
    if (!run) return fail(run.error());
    report = result_json(*run);
    violations += run->invariant_violations();
    if (!write(o.trace, o.trace.empty() ? "" : chrome_trace(*run).dump(1) + "\n") ||
        !write(o.plot, o.plot.empty() ? "" : svg_plot(*run))) {
      return kExitUsage;
    }
  }
  auto answer = size_ring(config, g.workload, g.stats.app_staging_peak_bytes, tell);
  bar.clear();
  if (!answer) return fail(answer.error());
  if (!o.quiet) std::fputs(answer_table(*answer, o.markdown).c_str(), stdout);
  for (const PolicyAnswer& a : answer->rows)
    violations += a.invariant_violations;
  report["gfxr"] = {{"import", import_stats_json(g.stats)}, {"answer", answer_json(*answer)}};
  if (!o.json.empty() && !write(o.json, report.dump(1) + "\n")) return kExitUsage;
  if (violations == 0) return 0;
  fmt::print(stderr, "staging-sim: {} invariant violations\n", violations);
  return kExitViolation;
}

}  // namespace staging::sim
