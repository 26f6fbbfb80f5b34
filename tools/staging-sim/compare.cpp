#include "compare.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "reports.hpp"
#include "simulator.hpp"
#include "streamer_model.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

using nlohmann::ordered_json;

// The run's figures a row shows, by their --json "stats" names, and the causes it sums.
constexpr const char* kRowStats[] = {"wait_total_ns",   "wait_longest_ns",     "would_blocks",
                                     "timeouts",        "fallbacks",           "fallback_bytes",
                                     "direct",          "direct_bytes",        "bytes_skipped",
                                     "peak_held_bytes", "upload_delay_max_ns", "throughput_mib_s"};
constexpr const char* kRowCauses[] = {"would_block", "wait", "split", "grow", "fallback", "direct"};
// Figures whose total over workloads is the largest row's, not the sum.
constexpr const char* kMaxima[] = {"wait_longest_ns", "peak_held_bytes", "upload_delay_max_ns"};

ordered_json row_of(const std::string& workload, const RunResult& r) {
  const ordered_json run = result_json(r);
  ordered_json row{
      {"workload", workload}, {"strategy", run["strategy"]}, {"policy", run["policy"]}};
  for (const char* key : kRowStats)
    row[key] = run["stats"][key];
  row["invariant_violations"] = run["invariant_violations"];
  ordered_json& causes = row["causes"];
  CauseCounts all;
  for (const char* name : kRowCauses) {
    for (std::size_t c = 0; c < 3; ++c) {
      const std::string cause(to_string(static_cast<BlockCause>(c)));
      causes[name][cause] = run["causes"][name][cause];
      all.by_cause[c] += run["causes"][name][cause].get<uint64_t>();
    }
  }
  for (std::size_t c = 0; c < 3; ++c)
    causes["all"][std::string(to_string(static_cast<BlockCause>(c)))] = all.by_cause[c];
  return row;
}

// The streamer row: the graphics half's row with the streaming half added — its queue refusals
// as would-blocks, its ring in the peak held, its longest arrival-to-submitted delay, its bytes in
// the throughput (both queues' bytes over the longer of their busy times), its byte mismatches and
// lost uploads as violations — and its own figures under "streamer".
ordered_json streamer_row(const std::string& workload, const StreamerRun& run) {
  ordered_json row = row_of(workload, run.graphics);
  const StreamerFigures& f = run.streaming;
  row["strategy"] = "streamer";
  row["would_blocks"] = add_sat(row["would_blocks"].get<uint64_t>(), f.queue_refusals);
  row["peak_held_bytes"] = row["peak_held_bytes"].get<uint64_t>() + f.peak_held_bytes;
  row["upload_delay_max_ns"] =
      std::max<int64_t>(row["upload_delay_max_ns"].get<int64_t>(), f.submitted_max.count());
  // Both queues work at once: their bytes over the longer of their busy times.
  const double seconds = static_cast<double>(std::max(run.graphics.busy, f.busy).count()) / 1e9;
  row["throughput_mib_s"] =
      seconds > 0 ? static_cast<double>(run.graphics.upload_bytes + f.bytes) / 1048576.0 / seconds
                  : 0.0;
  row["invariant_violations"] =
      row["invariant_violations"].get<uint64_t>() + f.byte_mismatches + f.failed;
  row["streamer"] = {{"uploads", f.uploads},
                     {"bytes", f.bytes},
                     {"larger_than_ring", f.larger_than_ring},
                     {"pieces", f.pieces},
                     {"batches", f.batches},
                     {"queue_refusals", f.queue_refusals},
                     {"ring_full", f.ring_full},
                     {"peak_held_bytes", f.peak_held_bytes},
                     {"busy_ns", f.busy.count()},
                     {"producer_wait_total_ns", f.producer_wait_total.count()},
                     {"submitted_max_ns", f.submitted_max.count()},
                     {"complete_max_ns", f.complete_max.count()},
                     {"complete_p99_ns", f.complete_p99.count()},
                     {"byte_mismatches", f.byte_mismatches},
                     {"failed", f.failed}};
  return row;
}

// Adds `row`'s figures into `total` (sums, saturating; maxima for kMaxima; no throughput).
void accumulate(ordered_json& total, const ordered_json& row) {
  for (auto it = row.begin(); it != row.end(); ++it) {
    ordered_json& t = total[it.key()];
    const ordered_json& v = it.value();
    const bool max =
        std::find(std::begin(kMaxima), std::end(kMaxima), it.key()) != std::end(kMaxima);
    if (v.is_object()) {
      accumulate(t, v);
    } else if (v.is_number_unsigned()) {
      t = max ? std::max(t.get<uint64_t>(), v.get<uint64_t>())
              : add_sat(t.get<uint64_t>(), v.get<uint64_t>());
    } else if (v.is_number_integer()) {  // nanoseconds
      const Duration a{t.get<int64_t>()}, b{v.get<int64_t>()};
      t = (max ? std::max(a, b) : add_sat(a, b)).count();
    }
  }
}

// Totals per (strategy, policy) over every workload, in table order (the streamer's last).
std::vector<ordered_json> totals(const std::vector<ordered_json>& rows) {
  std::vector<std::pair<std::string, std::string>> labels;
  for (const auto& [strategy, policy] : compared_policies())
    labels.emplace_back(to_string(strategy), policy_name(policy));
  labels.emplace_back("streamer", policy_name(kStreamerGraphicsPolicy));
  std::vector<ordered_json> out;
  for (const auto& [strategy, policy] : labels) {
    std::optional<ordered_json> total;
    for (const ordered_json& r : rows) {
      if (r["strategy"] != strategy || r["policy"] != policy) continue;
      if (total) {
        accumulate(*total, r);
      } else {
        total = r;
      }
    }
    if (!total) continue;
    (*total)["workload"] = "all";
    (*total)["throughput_mib_s"] = 0.0;
    out.push_back(std::move(*total));
  }
  return out;
}

const std::vector<std::string> kHeader = {
    "ring/policy",   "wait total ms", "wait max ms", "would-blocks", "timeouts",
    "fallbacks",     "fallback MiB",  "direct",      "direct MiB",   "skipped MiB",
    "peak held MiB", "max delay ms",  "MiB/s",       "causes G/F/C", "violations"};

std::vector<std::string> cells(const ordered_json& r, bool total) {
  const auto ms = [&](const char* k) { return fmt::format("{:.1f}", r[k].get<int64_t>() / 1e6); };
  const auto mib = [&](const char* k) {
    return fmt::format("{:.1f}", static_cast<double>(r[k].get<uint64_t>()) / (1024.0 * 1024.0));
  };
  const auto count = [](const ordered_json& v) { return format_count(v.get<uint64_t>()); };
  const ordered_json& all = r["causes"]["all"];
  return {r["strategy"].get<std::string>() + "/" + r["policy"].get<std::string>(),
          ms("wait_total_ns"),
          ms("wait_longest_ns"),
          count(r["would_blocks"]),
          count(r["timeouts"]),
          count(r["fallbacks"]),
          mib("fallback_bytes"),
          count(r["direct"]),
          mib("direct_bytes"),
          mib("bytes_skipped"),
          mib("peak_held_bytes"),
          ms("upload_delay_max_ns"),
          total ? std::string("-") : fmt::format("{:.1f}", r["throughput_mib_s"].get<double>()),
          count(all["InFlight"]) + "/" + count(all["Fragmentation"]) + "/" + count(all["Cap"]),
          count(r["invariant_violations"])};
}

std::string render(const std::string& title, const std::vector<std::vector<std::string>>& rows,
                   bool markdown) {
  if (markdown) {
    std::string out = fmt::format("**{}**\n\n| {} |\n| --- |", title, fmt::join(kHeader, " | "));
    for (std::size_t i = 1; i < kHeader.size(); ++i)
      out += " ---: |";
    for (const auto& row : rows)
      out += fmt::format("\n| {} |", fmt::join(row, " | "));
    return out + "\n\n";
  }
  std::vector<std::size_t> width(kHeader.size());
  for (std::size_t i = 0; i < kHeader.size(); ++i)
    width[i] = kHeader[i].size();
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  }
  const auto line = [&](const std::vector<std::string>& row) {
    std::string s = " ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      s += i == 0 ? fmt::format("{:<{}}  ", row[i], width[i])
                  : fmt::format("{:>{}}  ", row[i], width[i]);
    }
    return s.erase(s.find_last_not_of(' ') + 1) + "\n";
  };
  std::string out = title + "\n" + line(kHeader);
  for (const auto& row : rows)
    out += line(row);
  return out + "\n";
}

}  // namespace

const std::vector<std::pair<Strategy, ExhaustionPolicy>>& compared_policies() {
  static const std::vector<std::pair<Strategy, ExhaustionPolicy>> all = {
      {Strategy::Byte, ExhaustionPolicy::Defer},    {Strategy::Byte, ExhaustionPolicy::Wait},
      {Strategy::Byte, ExhaustionPolicy::Split},    {Strategy::Byte, ExhaustionPolicy::Grow},
      {Strategy::Byte, ExhaustionPolicy::Fallback}, {Strategy::Slot, ExhaustionPolicy::Fallback},
      {Strategy::Slot, ExhaustionPolicy::Wait},
  };
  return all;
}

Expected<std::vector<ordered_json>, std::string> run_compare(
    const SimConfig& base, const std::vector<Workload>& workloads,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress) {
  std::vector<ordered_json> rows;
  const std::size_t runs = workloads.size() * (compared_policies().size() + 1);
  for (const Workload& w : workloads) {
    for (const auto& [strategy, policy] : compared_policies()) {
      SimConfig c = base;
      c.strategy = strategy;
      c.policy = policy;
      c.record_timeline = false;
      if (progress) progress(rows.size(), runs, w.name + " " + label(strategy, policy));
      auto result = simulate(c, w);
      if (!result) return unexpected(w.name + ": " + result.error());
      rows.push_back(row_of(w.name, *result));
    }
    SimConfig c = base;
    c.strategy = Strategy::Byte;
    c.policy = kStreamerGraphicsPolicy;
    c.record_timeline = false;
    if (progress) progress(rows.size(), runs, w.name + " streamer");
    auto streamer = simulate_streamer(c, w);
    if (!streamer) return unexpected(w.name + ": " + streamer.error());
    rows.push_back(streamer_row(w.name, *streamer));
  }
  if (progress) progress(runs, runs, "done");
  return rows;
}

std::string compare_table(const std::vector<ordered_json>& rows, bool markdown) {
  std::string out;
  std::vector<std::string> order;
  for (const ordered_json& r : rows) {
    if (std::find(order.begin(), order.end(), r["workload"]) == order.end()) {
      order.push_back(r["workload"]);
    }
  }
  for (const std::string& w : order) {
    std::vector<std::vector<std::string>> block;
    for (const ordered_json& r : rows) {
      if (r["workload"] == w) block.push_back(cells(r, false));
    }
    out += render(w, block, markdown);
  }
  if (order.size() < 2) return out;
  std::vector<std::vector<std::string>> block;
  for (const ordered_json& t : totals(rows))
    block.push_back(cells(t, true));
  return out +
         render("all workloads (sums; maxima for wait max, peak held, max delay)", block, markdown);
}

ordered_json compare_json(const SimConfig& base, const std::vector<ordered_json>& rows) {
  uint64_t violations = 0;
  for (const ordered_json& r : rows)
    violations += r["invariant_violations"].get<uint64_t>();
  const ordered_json config{{"capacity", base.capacity},
                            {"cap", base.effective_cap()},
                            {"frames_in_flight", base.frames_in_flight},
                            {"delay", base.delay ? base.delay->text : "workload default"},
                            {"bandwidth_bytes_per_s", base.bandwidth},
                            {"seed", base.seed},
                            {"duration_ns", base.duration.count()},
                            {"wait_timeout_ns", base.wait_timeout.count()}};
  return {{"tool", "staging-sim"},
          {"format_version", 1},
          {"invariant_violations", violations},
          {"compare", {{"config", config}, {"rows", rows}, {"totals", totals(rows)}}}};
}

}  // namespace staging::sim
