// staging-bench --replay: the options, the plan, the two methods and the report
// (vulkan_replay.hpp).
#include "vulkan_replay.hpp"

#include <cstdio>
#include <optional>

#include "replay_plan.hpp"
#include "trace_replay.hpp"
#include "vulkan_replay_targets.hpp"

namespace staging::bench::vk {
namespace {

struct ReplayOptions {
  std::string path;
  uint64_t frames = 0;
  uint64_t budget_mib = 4;
  std::optional<sim::Workload> trace;  // read by check_replay()
};

ReplayOptions& options() {
  static ReplayOptions o;
  return o;
}

struct MethodRow {
  std::string method, route;
  RouteStats stats;
  std::string check;
};

void print_table(const std::vector<MethodRow>& rows) {
  std::printf("\n%-6s %-20s %8s %14s %14s %10s  %s\n", "method", "route", "uploads", "bytes",
              "CPU ns/upload", "copy GB/s", "byte check");
  for (const MethodRow& r : rows) {
    const RouteStats& s = r.stats;
    const double ns = s.uploads ? s.cpu_s / static_cast<double>(s.uploads) * 1e9 : 0.0;
    const double gbps = s.copy_s > 0 ? static_cast<double>(s.copy_bytes) / s.copy_s / 1e9 : 0.0;
    std::printf("%-6s %-20s %8llu %14llu %14.0f %10.3f  %s\n", r.method.c_str(), r.route.c_str(),
                static_cast<unsigned long long>(s.uploads),
                static_cast<unsigned long long>(s.bytes), ns, gbps, r.check.c_str());
  }
  std::printf("\n");
}

void add_row(const MethodRow& m, Report& report) {
  const RouteStats& s = m.stats;
  Row row;
  row.section = "replay";
  row.bytes = s.bytes;
  row.reps = 1;
  row.gbps = s.copy_s > 0 ? static_cast<double>(s.copy_bytes) / s.copy_s / 1e9 : 0.0;
  row.gbps_best = row.gbps;
  row.fields["method"] = m.method;
  row.fields["route"] = m.route;
  row.fields["uploads"] = s.uploads;
  row.fields["cpu_ns"] = s.uploads ? s.cpu_s / static_cast<double>(s.uploads) * 1e9 : 0.0;
  row.fields["copy_gbps"] = row.gbps;
  row.fields["check"] = m.check;
  report.add(std::move(row));
}

// One method on fresh destinations: its rows, and 1 when it failed or a byte differs.
int run_method(const char* method, Context& vk, const ReplayPlan& plan, ReplayTargets& targets,
               uint64_t seed, std::vector<MethodRow>& rows, Report& report) {
  if (const std::string wrong = targets.make(seed); !wrong.empty()) {
    std::fprintf(stderr, "staging-bench: replay: %s\n", wrong.c_str());
    return 1;
  }
  const bool app = std::string(method) == "app";
  const MethodResult r = app ? replay_app(vk, plan, targets) : replay_ring(vk, plan, targets);
  for (const std::string& n : r.notes)
    report.note("replay: " + n);
  if (!r.error.empty()) {
    std::fprintf(stderr, "staging-bench: replay %s: %s\n", method, r.error.c_str());
    return 1;
  }
  const auto wrong = targets.check(app, app ? app_route : ring_route);
  for (const auto& [route, what] : wrong)
    std::fprintf(stderr, "staging-bench: replay %s, %s: %s\n", method, route.c_str(), what.c_str());
  for (const auto& [route, stats] : r.routes) {
    rows.push_back({method, route, stats, wrong.count(route) ? "MISMATCH" : "ok"});
    add_row(rows.back(), report);
  }
  return wrong.empty() ? 0 : 1;
}

}  // namespace

void add_replay_options(CLI::Option_group& g) {
  ReplayOptions& o = options();
  g.add_option("--replay", o.path,
               "re-issue the uploads of a trace (CSV or JSON, docs/sim.md) through the Ring and "
               "the Streamer, then the application's own way as recorded (a staging buffer per "
               "copy, vkCmdUpdateBuffer, host writes); every byte read back and checked; "
               "instead of the scenarios");
  g.add_option("--replay-frames", o.frames, "--replay: replay the first N frames only (0: all)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  g.add_option("--replay-budget-mib", o.budget_mib,
               "--replay: the frame budget, MiB: larger uploads go through the Streamer "
               "(default 4)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
}

bool replay_requested() {
  return !options().path.empty();
}

std::string check_replay() {
  ReplayOptions& o = options();
  if (o.path.empty()) return {};
  auto trace = sim::read_trace(o.path);
  if (!trace) return "--replay: " + trace.error();
  if (trace->uploads.empty()) return "--replay: " + o.path + " has no uploads";
  o.trace = std::move(*trace);
  return {};
}

int run_replay(Context& vk, Report& report) {
  const ReplayOptions& o = options();
  const PlanLimits limits{.frame_budget = o.budget_mib << 20,
                          .max_frames = o.frames,
                          .max_image_dimension = vk.properties().limits.maxImageDimension2D};
  auto plan = plan_replay(*o.trace, limits);
  if (!plan) {
    std::fprintf(stderr, "staging-bench: --replay %s: %s\n", o.path.c_str(), plan.error().c_str());
    return 1;
  }
  report.context("replay_trace", o.path);
  report.context("replay_frames",
                 std::to_string(plan->frames.size()) + " of " + std::to_string(plan->trace_frames));
  report.context("replay_uploads", plan->uploads);
  report.context("replay_bytes", plan->source_bytes);
  report.context("replay_frame_budget",
                 std::to_string(o.budget_mib) + " MiB (larger uploads go through the Streamer)");
  for (const std::string& n : plan->notes)
    report.note("replay: " + n);
  ReplayTargets targets(vk, *plan);
  std::vector<MethodRow> rows;
  int failures = run_method("ring", vk, *plan, targets, 0x5eed1, rows, report);
  failures += run_method("app", vk, *plan, targets, 0x5eed2, rows, report);
  print_table(rows);
  return failures;
}

}  // namespace staging::bench::vk
