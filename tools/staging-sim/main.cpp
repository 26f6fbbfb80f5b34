// staging-sim: runs the real staging core (byte ring or slot ring, any policy) against a simulated
// GPU queue, deterministically, and reports what happened: a summary, JSON stats, a Chrome trace,
// an SVG plot, and — with --compare — the policy table. docs/sim.md is the manual.
//
// Exit status: 0 ok; 1 an invariant was violated (the violation is named); 2 bad usage, a bad
// input or an input the simulator refuses, or an input/output error (the files named on the
// command line are checked before the run starts), or an unexpected error; 3 the simulator's
// observed counts disagree with the ring's own stats.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "compare.hpp"
#include "exception_exit.hpp"
#include "gfxr_cli.hpp"
#include "io_paths.hpp"
#include "progress.hpp"
#include "reports.hpp"
#include "simulator.hpp"
#include "soak.hpp"
#include "trace_replay.hpp"
#include "units.hpp"
#include "workloads.hpp"

namespace {

using namespace staging::sim;
using staging::Expected;
using staging::unexpected;

constexpr int kExitViolation = 1;
constexpr int kExitUsage = 2;
constexpr int kExitStatsMismatch = 3;

// What the command line asks for besides the simulation's configuration.
struct Request {
  std::vector<std::string> workloads;
  std::string replay;
  std::string json;
  std::string trace;
  std::string plot;
  bool compare = false;
  bool markdown = false;
  bool quiet = false;
  bool no_progress = false;
  bool list = false;
  std::optional<staging::Duration> soak;
  GfxrRequest gfxr;
};

int fail(const std::string& message) {
  fmt::print(stderr, "staging-sim: {}\n", message);
  return kExitUsage;
}

std::optional<uint64_t> integer(std::string_view text, uint64_t max) {
  if (text.find('.') != text.npos) return std::nullopt;
  return parse_scaled(text, 1, max, /*round=*/false);
}

// The option's value converted by `parse` into `out`; a value `parse` refuses is a usage error
// that names the option and says what was expected.
// What an option's value is: its name in --help and what the error says was expected.
struct ValueKind {
  const char* type;
  const char* expected;
};
constexpr ValueKind kBytes{"BYTES", "a byte count (e.g. 32MiB)"};
constexpr ValueKind kDuration{"DURATION",
                              "a duration with a unit: h, min, s, ms, us or ns (e.g. "
                              "100ms, 1.5s, 1h)"};

template <class T, class Parse>
CLI::Option* value(CLI::App& app, const char* flags, T& out, Parse parse, ValueKind kind,
                   const char* help, const char* default_text = nullptr) {
  const std::string name = std::string(flags).substr(0, std::string_view(flags).find(','));
  CLI::Option* option = app.add_option_function<std::string>(
      flags,
      [&out, parse, expected = kind.expected, name](const std::string& text) {
        const auto v = parse(text);
        if (!v) {
          throw CLI::ValidationError(
              fmt::format("{}: expected {}, not {}", name, expected, quote(text)));
        }
        out = static_cast<T>(*v);
      },
      help);
  option->type_name(kind.type);
  if (default_text != nullptr) option->default_str(default_text);
  return option;
}

// What runs: the workload or trace, the strategy and policy, the ring, the queue's model.
void add_run_options(CLI::App& app, SimConfig& c, Request& q) {
  const auto bytes = [](const std::string& t) { return parse_bytes(t); };
  const auto duration = [](const std::string& t) { return parse_duration(t); };
  app.add_option("--workload,-w", q.workloads,
                 "built-in workload (repeat with --compare; default frames-steady): "
                 "frames-steady, frames-bursty, asset-burst, chunk-stream, sizes-edge, "
                 "stalled-queue, mixed");
  app.add_option("--replay,-r", q.replay, "replay an upload trace (CSV or JSON; docs/sim.md)")
      ->check(staging::tools::readable_file())
      ->excludes("--workload");
  app.add_flag("--list-workloads", q.list, "print the built-in workloads and exit");
  value(
      app, "--strategy,-s", c.strategy,
      [](const std::string& t) { return staging::enum_from_string<Strategy>(t); },
      ValueKind{"NAME", "byte or slot"}, "byte (ByteRing) or slot (StagingRing)", "byte");
  value(app, "--policy,-p", c.policy, parse_policy,
        ValueKind{"NAME", "defer, wait, split, grow or fallback"},
        "when full: defer, wait, split, grow, fallback (slot: fallback, wait, defer)", "wait");
  value(app, "--capacity,-c", c.capacity, bytes, kBytes, "ring bytes (slot: all slots together)",
        "32MiB");
  value(app, "--ring-bytes", c.capacity, bytes, kBytes,
        "--gfxr: the ring to answer for (--capacity)")
      ->excludes("--capacity");
  add_gfxr_options(app, q.gfxr);
  value(app, "--cap", c.cap, bytes, kBytes, "hard cap on all staging bytes (default 2 x capacity)");
  value(
      app, "--frames-in-flight,-f", c.frames_in_flight,
      [](const std::string& t) { return integer(t, kMaxFramesInFlight); },
      ValueKind{"N", "an integer from 0 to 1024"},
      "frames queued on the GPU while the next records (0: no pacing)", "2");
  app.add_option_function<std::string>(
      "--delay,-d",
      [&c](const std::string& t) {
        std::string error;
        c.delay = parse_delay(t, 0, &error);  // seeded from --seed when the run starts
        if (!c.delay) throw CLI::ValidationError("--delay", error);
      },
      "queue delay model: fixed:D, random:LO:HI, bursty:FAST:SLOW:N, stalled (default: the "
      "workload's)");
  value(app, "--bandwidth", c.bandwidth, bytes, kBytes,
        "copy-engine bytes per second on top of the delay model (0: none)", "16GiB");
  value(
      app, "--seed", c.seed, [](const std::string& t) { return integer(t, UINT64_MAX); },
      ValueKind{"N", "an integer from 0 to 2^64 - 1"}, "seed of the workload and the random delay",
      "1");
  value(app, "--duration", c.duration, duration, kDuration,
        "virtual time a built-in workload runs (at most 1h)", "10s");
}

// The policies' settings and the queue's stalls.
void add_policy_options(CLI::App& app, SimConfig& c) {
  const auto bytes = [](const std::string& t) { return parse_bytes(t); };
  const auto duration = [](const std::string& t) { return parse_duration(t); };
  value(app, "--wait-timeout", c.wait_timeout, duration, kDuration, "Wait/Split timeout", "100ms");
  value(app, "--poll-interval", c.poll_interval, duration, kDuration,
        "the caller retires completed work at least this often (0: before uploads only)",
        "16.667ms");
  value(app, "--grow-step", c.grow_step, bytes, kBytes,
        "Grow: bytes per added region (0: capacity)", "0");
  value(app, "--trim-after", c.trim_after, duration, kDuration,
        "Grow: idle time before a grown region is released", "1s");
  value(app, "--fallback-cap", c.fallback_cap, bytes, kBytes,
        "Fallback: most bytes in fallback regions at once (0: cap - capacity)", "0");
  value(app, "--split-min-chunk", c.split_min_chunk, bytes, kBytes,
        "Split: smallest chunk (0: none)", "0");
  app.add_option_function<std::vector<std::string>>(
      "--stall",
      [&c](const std::vector<std::string>& stalls) {
        for (const std::string& s : stalls) {
          const std::size_t colon = s.find(':');
          const auto at = parse_duration(s.substr(0, colon));
          const auto length = colon == s.npos ? std::nullopt : parse_duration(s.substr(colon + 1));
          if (!at || !length) {
            throw CLI::ValidationError("--stall",
                                       "expected AT:FOR, e.g. 2s:250ms, not " + quote(s));
          }
          c.stalls.push_back({*at, *length});
        }
      },
      "stall the queue at AT for FOR, e.g. 2s:250ms (repeatable)");
}

// What a run writes, and the other modes (--compare, --soak).
void add_output_options(CLI::App& app, SimConfig& c, Request& q) {
  const auto duration = [](const std::string& t) { return parse_duration(t); };
  app.add_option("--json", q.json, "write every stat (or the policy table) as JSON")
      ->check(staging::tools::writable_file());
  CLI::Option* trace = app.add_option("--trace", q.trace, "write a Chrome trace-event file")
                           ->check(staging::tools::writable_file());
  CLI::Option* plot = app.add_option("--plot", q.plot, "write an SVG plot of the run")
                          ->check(staging::tools::writable_file());
  CLI::Option* compare =
      app.add_flag("--compare", q.compare, "run every policy over the workloads; print the table")
          ->excludes(trace, plot);
  app.add_flag("--markdown", q.markdown, "print the policy table as Markdown")->needs(compare);
  value(app, "--soak", q.soak, duration, kDuration,
        "soak for this long (real time): random built-in workloads, strategies, policies and "
        "configurations, every run checked (only --seed and --inject-fault apply)")
      ->excludes("--workload", "--replay", compare, trace, plot, "--gfxr")
      ->excludes("--json");
  app.add_flag("--quiet,-q", q.quiet, "no summary on stdout");
  app.add_flag("--no-progress", q.no_progress, "no progress bar");
  value(
      app, "--inject-fault", c.fault,
      [](const std::string& t) { return staging::enum_from_string<Fault>(t); },
      ValueKind{"NAME", "none or early-completion"},
      "self-check: early-completion (the queue tells the ring one submission more has completed "
      "than has; the checker must catch it)",
      "none");
}

void add_options(CLI::App& app, SimConfig& c, Request& q) {
  add_run_options(app, c, q);
  add_policy_options(app, c);
  add_output_options(app, c, q);
}

bool write(const std::string& path, const std::string& text) {
  std::string error;
  if (write_file(path, text, &error)) return true;
  fmt::print(stderr, "staging-sim: {}\n", error);
  return false;
}

// The workloads the request names (a trace, the named built-ins, or the defaults).
Expected<std::vector<Workload>, std::string> load_workloads(const Request& q, const SimConfig& c) {
  std::vector<Workload> out;
  if (!q.replay.empty()) {
    auto w = read_trace(q.replay);
    if (!w) return unexpected(w.error());
    out.push_back(std::move(*w));
    return out;
  }
  std::vector<std::string> names = q.workloads;
  if (names.empty() && q.compare) names.assign(workload_names().begin(), workload_names().end());
  if (names.empty()) names.emplace_back("frames-steady");
  for (const std::string& name : names) {
    auto w = make_workload(name, c.seed, c.duration);
    if (!w) return unexpected("unknown workload " + quote(name) + " (see --list-workloads)");
    out.push_back(std::move(*w));
  }
  return out;
}

int run_compare_table(const Request& q, const SimConfig& c, const std::vector<Workload>& ws) {
  ProgressBar bar(!q.no_progress);
  auto rows = run_compare(c, ws, [&](std::size_t done, std::size_t total, const std::string& l) {
    bar.update(done, total, l);
  });
  bar.clear();
  if (!rows) return fail(rows.error());
  if (!q.quiet) std::fputs(compare_table(*rows, q.markdown).c_str(), stdout);
  if (!q.json.empty() && !write(q.json, compare_json(c, *rows).dump(1) + "\n")) return kExitUsage;
  uint64_t violations = 0;
  for (const nlohmann::ordered_json& r : *rows)
    violations += r["invariant_violations"].get<uint64_t>();
  if (violations == 0) return 0;
  fmt::print(stderr, "staging-sim: {} invariant violations (run the rows alone for details)\n",
             violations);
  return kExitViolation;
}

int run_soak(const Request& q, const SimConfig& c) {
  ProgressBar bar(!q.no_progress);
  const SoakResult s =
      soak(*q.soak, c.seed, c.fault, [&](uint64_t done, uint64_t total, uint64_t runs) {
        bar.update(done, total, fmt::format("{} runs", runs));
      });
  bar.clear();
  std::fputs(soak_text(s, *q.soak, c.seed).c_str(), s.failure ? stderr : stdout);
  return s.failure ? s.failure->exit_status : 0;
}

int run_one(const Request& q, const SimConfig& c, const Workload& w) {
  ProgressBar bar(!q.no_progress);
  auto result =
      simulate(c, w, [&](uint64_t done, uint64_t total) { bar.update(done, total, w.name); });
  bar.clear();
  if (!result) return fail(result.error());
  const RunResult& r = *result;
  if (!q.quiet) std::fputs(summary_text(r).c_str(), stdout);
  if ((!q.json.empty() && !write(q.json, result_json(r).dump(1) + "\n")) ||
      (!q.trace.empty() && !write(q.trace, chrome_trace(r).dump(1) + "\n")) ||
      (!q.plot.empty() && !write(q.plot, svg_plot(r)))) {
    return kExitUsage;
  }
  if (r.invariant_violations() > 0) {
    fmt::print(stderr, "staging-sim: {} invariant violation(s); the first: {}\n",
               r.violations.size(), r.violations.front().message);
    return kExitViolation;
  }
  if (!r.stat_mismatches.empty()) {
    fmt::print(stderr, "staging-sim: the ring's stats disagree with its events: {}\n",
               r.stat_mismatches.front());
    return kExitStatsMismatch;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  SimConfig config;
  Request q;
  CLI::App app{
      "staging-sim: runs the staging core (byte ring or slot ring, any exhaustion policy) against "
      "a simulated GPU queue in virtual time, deterministically for a seed, and reports the "
      "allocation timeline, stats by cause, invariant checks and the policy table. Manual: "
      "docs/sim.md",
      "staging-sim"};
  add_options(app, config, q);
  app.get_formatter()->column_width(34);  // "--markdown Needs: --compare", then its help
  app.footer(
      "BYTES: a number with an optional unit: B, K/KiB, M/MiB, G/GiB (x1024), KB/MB/GB (x1000).\n"
      "DURATION: a number with a unit: h, min, s, ms, us or ns (1h, 1.5min, 100ms).");
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;
  if (q.list) {
    for (std::string_view name : workload_names())
      fmt::print("{:<14} {}\n", name,
                 make_workload(name, 1, std::chrono::seconds(10))->description);
    return 0;
  }
  if (q.soak) return run_soak(q, config);
  config.record_timeline = !q.trace.empty() || !q.plot.empty();
  if (config.delay) config.delay = parse_delay(config.delay->text, config.seed, nullptr);
  if (auto error = config_error(config)) return fail(*error);
  if (!q.compare && q.workloads.size() > 1) {
    return fail("one --workload per run (several only with --compare)");
  }
  if (!q.gfxr.capture.empty()) {
    return run_gfxr(q.gfxr, config,
                    {q.json, q.trace, q.plot, q.compare, q.markdown, q.quiet, q.no_progress});
  }
  auto workloads = load_workloads(q, config);
  if (!workloads) return fail(workloads.error());
  return q.compare ? run_compare_table(q, config, *workloads)
                   : run_one(q, config, workloads->front());
} catch (...) {
  return staging::tools::exception_exit("staging-sim", kExitUsage);
}
