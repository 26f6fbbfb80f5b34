// staging-sim: runs the real staging core (byte ring or slot ring, any policy) against a simulated
// GPU queue, deterministically, and reports what happened: a summary, JSON stats, a Chrome trace,
// an SVG plot, and — with --compare — the policy table. docs/sim.md is the manual.
//
// Exit status: 0 ok; 1 an invariant was violated (the violation is named); 2 bad usage or an
// input/output error; 3 the simulator's observed counts disagree with the ring's own stats.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "compare.hpp"
#include "progress.hpp"
#include "reports.hpp"
#include "simulator.hpp"
#include "trace_replay.hpp"
#include "units.hpp"
#include "workloads.hpp"

namespace {

using namespace staging::sim;

constexpr int kExitViolation = 1;
constexpr int kExitUsage = 2;
constexpr int kExitStatsMismatch = 3;

struct Options {
  std::vector<std::string> workloads;
  std::string replay;
  std::string strategy = "byte";
  std::string policy = "wait";
  std::string capacity = "32MiB";
  std::string cap;
  uint32_t frames_in_flight = 2;
  std::string delay;
  std::string bandwidth = "16GiB";
  uint64_t seed = 1;
  std::string duration = "10s";
  std::string wait_timeout = "100ms";
  std::string poll_interval = "16.667ms";
  std::string grow_step = "0";
  std::string trim_after = "1s";
  std::string fallback_cap = "0";
  std::string split_min_chunk = "0";
  std::vector<std::string> stalls;
  std::string fault = "none";
  std::string json;
  std::string trace;
  std::string plot;
  bool compare = false;
  bool markdown = false;
  bool quiet = false;
  bool no_progress = false;
  bool list = false;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "staging-sim: %s\n", message.c_str());
  return kExitUsage;
}

// Resolves the options into a SimConfig; an error names the option.
bool make_config(const Options& o, SimConfig* c, std::string* error) {
  const auto bytes = [&](const std::string& text, const char* option, uint64_t* out) {
    const std::optional<uint64_t> v = parse_bytes(text);
    if (!v) *error = std::string(option) + ": not a byte count: '" + text + "' (e.g. 32MiB)";
    if (v) *out = *v;
    return v.has_value();
  };
  const auto duration = [&](const std::string& text, const char* option, staging::Duration* out) {
    const std::optional<staging::Duration> v = parse_duration(text);
    if (!v) *error = std::string(option) + ": not a duration: '" + text + "' (e.g. 100ms)";
    if (v) *out = *v;
    return v.has_value();
  };
  const std::optional<Strategy> strategy = parse_strategy(o.strategy);
  if (!strategy) {
    *error = "--strategy: byte or slot, not '" + o.strategy + "'";
    return false;
  }
  c->strategy = *strategy;
  const std::optional<staging::ExhaustionPolicy> policy = parse_policy(o.policy);
  if (!policy) {
    *error = "--policy: defer, wait, split, grow or fallback, not '" + o.policy + "'";
    return false;
  }
  c->policy = *policy;
  if (!bytes(o.capacity, "--capacity", &c->capacity)) return false;
  if (c->capacity == 0) {
    *error = "--capacity: must be > 0";
    return false;
  }
  if (!o.cap.empty() && !bytes(o.cap, "--cap", &c->cap)) return false;
  if (c->cap != 0 && c->cap < c->capacity) {
    *error = "--cap: must be >= the capacity";
    return false;
  }
  c->frames_in_flight = o.frames_in_flight;
  c->seed = o.seed;
  if (!o.delay.empty()) {
    auto d = parse_delay(o.delay, o.seed, error);
    if (!d) return false;
    c->delay = *d;
  }
  if (!bytes(o.bandwidth, "--bandwidth", &c->bandwidth)) return false;
  if (!duration(o.duration, "--duration", &c->duration)) return false;
  if (!duration(o.wait_timeout, "--wait-timeout", &c->wait_timeout)) return false;
  if (!duration(o.poll_interval, "--poll-interval", &c->poll_interval)) return false;
  if (!duration(o.trim_after, "--trim-after", &c->trim_after)) return false;
  if (!bytes(o.grow_step, "--grow-step", &c->grow_step)) return false;
  if (!bytes(o.fallback_cap, "--fallback-cap", &c->fallback_cap)) return false;
  if (!bytes(o.split_min_chunk, "--split-min-chunk", &c->split_min_chunk)) return false;
  if (c->fallback_cap > c->effective_cap()) {
    *error = "--fallback-cap: must be <= the cap";
    return false;
  }
  for (const std::string& s : o.stalls) {
    const std::size_t colon = s.find(':');
    staging::Duration at{0}, length{0};
    if (colon == std::string::npos || !duration(s.substr(0, colon), "--stall AT:FOR (AT)", &at) ||
        !duration(s.substr(colon + 1), "--stall AT:FOR (FOR)", &length)) {
      if (error->empty()) *error = "--stall: expected AT:FOR, e.g. 2s:250ms";
      return false;
    }
    c->stalls.push_back({at, length});
  }
  if (o.fault == "none") {
    c->fault = Fault::None;
  } else if (o.fault == "early-completion") {
    c->fault = Fault::EarlyCompletion;
  } else {
    *error = "--inject-fault: none or early-completion";
    return false;
  }
  c->record_timeline = !o.trace.empty() || !o.plot.empty();
  return true;
}

bool write_json(const std::string& path, const nlohmann::ordered_json& j) {
  std::string error;
  if (!write_file(path, j.dump(1) + "\n", &error)) {
    std::fprintf(stderr, "staging-sim: %s\n", error.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "staging-sim: runs the staging core (byte ring or slot ring, any exhaustion policy) against "
      "a simulated GPU queue in virtual time, deterministically for a seed, and reports the "
      "allocation timeline, stats by cause, invariant checks and the policy table. Manual: "
      "docs/sim.md"};
  app.add_option("--workload,-w", o.workloads,
                 "built-in workload (repeat with --compare; default frames-steady): "
                 "frames-steady, frames-bursty, asset-burst, chunk-stream, sizes-edge, "
                 "stalled-queue, mixed");
  app.add_option("--replay,-r", o.replay, "replay an upload trace (CSV or JSON; docs/sim.md)");
  app.add_flag("--list-workloads", o.list, "print the built-in workloads and exit");
  app.add_option("--strategy,-s", o.strategy, "byte (ByteRing) or slot (seed 004's StagingRing)")
      ->capture_default_str();
  app.add_option("--policy,-p", o.policy,
                 "when full: defer, wait, split, grow, fallback (slot: fallback, wait, defer)")
      ->capture_default_str();
  app.add_option("--capacity,-c", o.capacity, "ring bytes (slot: all slots together)")
      ->capture_default_str();
  app.add_option("--cap", o.cap, "hard cap on all staging bytes (default 2 x capacity)");
  app.add_option("--frames-in-flight,-f", o.frames_in_flight,
                 "frames queued on the GPU while the next records (0: no pacing)")
      ->capture_default_str();
  app.add_option("--delay,-d", o.delay,
                 "queue delay model: fixed:D, random:LO:HI, bursty:FAST:SLOW:N, stalled "
                 "(default: the workload's)");
  app.add_option("--bandwidth", o.bandwidth,
                 "copy-engine bytes per second on top of the delay model (0: none)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the workload and the random delay")
      ->capture_default_str();
  app.add_option("--duration", o.duration, "virtual time a built-in workload runs")
      ->capture_default_str();
  app.add_option("--wait-timeout", o.wait_timeout, "Wait/Split timeout")->capture_default_str();
  app.add_option("--poll-interval", o.poll_interval,
                 "the caller retires completed work at least this often (0: before uploads only)")
      ->capture_default_str();
  app.add_option("--grow-step", o.grow_step, "Grow: bytes per added region (0: capacity)")
      ->capture_default_str();
  app.add_option("--trim-after", o.trim_after, "Grow: idle time before a grown region is released")
      ->capture_default_str();
  app.add_option("--fallback-cap", o.fallback_cap,
                 "Fallback: most bytes in fallback regions at once (0: cap - capacity)")
      ->capture_default_str();
  app.add_option("--split-min-chunk", o.split_min_chunk, "Split: smallest chunk (0: none)")
      ->capture_default_str();
  app.add_option("--stall", o.stalls, "stall the queue at AT for FOR, e.g. 2s:250ms (repeatable)");
  app.add_option("--json", o.json, "write every stat (or the policy table) as JSON");
  app.add_option("--trace", o.trace, "write a Chrome trace-event file (Perfetto)");
  app.add_option("--plot", o.plot, "write an SVG plot of the run");
  app.add_flag("--compare", o.compare, "run every policy over the workloads; print the table");
  app.add_flag("--markdown", o.markdown, "--compare: print the table as Markdown");
  app.add_flag("--quiet,-q", o.quiet, "no summary on stdout");
  app.add_flag("--no-progress", o.no_progress, "no progress bar");
  app.add_option("--inject-fault", o.fault,
                 "self-check: early-completion (the queue tells the ring one submission more "
                 "has completed than has; the checker must catch it)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (o.list) {
    for (std::string_view name : workload_names()) {
      const auto w = make_workload(name, 1, std::chrono::seconds(10));
      std::printf("%-14s %s\n", std::string(name).c_str(), w->description.c_str());
    }
    return 0;
  }

  SimConfig config;
  std::string error;
  if (!make_config(o, &config, &error)) return usage_error(error);
  if (!o.replay.empty() && !o.workloads.empty()) {
    return usage_error("--replay and --workload exclude each other");
  }
  if (!o.compare && o.workloads.size() > 1) {
    return usage_error("one --workload per run (several only with --compare)");
  }
  if (o.compare && (!o.trace.empty() || !o.plot.empty())) {
    return usage_error("--trace and --plot describe one run; not with --compare");
  }

  std::vector<Workload> workloads;
  if (!o.replay.empty()) {
    auto w = read_trace(o.replay);
    if (!w) return usage_error(w.error());
    workloads.push_back(std::move(*w));
  } else {
    std::vector<std::string> names = o.workloads;
    if (names.empty()) {
      if (o.compare) {
        for (std::string_view n : workload_names())
          names.emplace_back(n);
      } else {
        names.emplace_back("frames-steady");
      }
    }
    for (const std::string& name : names) {
      auto w = make_workload(name, config.seed, config.duration);
      if (!w) return usage_error("unknown workload '" + name + "' (see --list-workloads)");
      workloads.push_back(std::move(*w));
    }
  }

  ProgressBar bar(!o.no_progress);
  if (o.compare) {
    auto rows = run_compare(config, workloads,
                            [&](std::size_t done, std::size_t total, const std::string& label) {
                              bar.update(done, total, label);
                            });
    bar.clear();
    if (!rows) return usage_error(rows.error());
    if (!o.quiet) std::fputs(compare_table(*rows, o.markdown).c_str(), stdout);
    if (!o.json.empty() && !write_json(o.json, compare_json(config, *rows))) return kExitUsage;
    uint64_t violations = 0;
    for (const CompareRow& r : *rows)
      violations += r.invariant_violations;
    if (violations > 0) {
      std::fprintf(stderr,
                   "staging-sim: %llu invariant violations (run the rows alone for details)\n",
                   static_cast<unsigned long long>(violations));
      return kExitViolation;
    }
    return 0;
  }

  const Workload& workload = workloads.front();
  auto result = simulate(config, workload, [&](uint64_t done, uint64_t total) {
    bar.update(done, total, workload.name);
  });
  bar.clear();
  if (!result) return usage_error(result.error());
  const RunResult& r = *result;
  if (!o.quiet) std::fputs(summary_text(r).c_str(), stdout);
  if (!o.json.empty() && !write_json(o.json, result_json(r))) return kExitUsage;
  if (!o.trace.empty() && !write_json(o.trace, chrome_trace(r))) return kExitUsage;
  if (!o.plot.empty() && !write_file(o.plot, svg_plot(r), &error)) return usage_error(error);
  if (r.invariant_violations() > 0) {
    std::fprintf(stderr, "staging-sim: %zu invariant violation(s); the first: %s\n",
                 r.violations.size(), r.violations.front().message.c_str());
    return kExitViolation;
  }
  if (!r.stat_mismatches.empty()) {
    std::fprintf(stderr, "staging-sim: the ring's stats disagree with its events: %s\n",
                 r.stat_mismatches.front().c_str());
    return kExitStatsMismatch;
  }
  return 0;
}
