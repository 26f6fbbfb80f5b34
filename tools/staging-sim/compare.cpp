#include "compare.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>

#include "simulator.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

std::string fmt(const char* f, ...) {
  char buf[256];
  va_list args;
  va_start(args, f);
  std::vsnprintf(buf, sizeof buf, f, args);
  va_end(args);
  return buf;
}

std::string mib(uint64_t bytes) {
  return fmt("%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string ms(Duration d) {
  return fmt("%.1f", to_ms(d));
}

std::string label(const CompareRow& r) {
  return label(r.strategy, r.policy);
}

const std::vector<std::string> kHeader = {
    "ring/policy",   "wait total ms", "wait max ms", "would-blocks", "timeouts",
    "fallbacks",     "fallback MiB",  "direct",      "direct MiB",   "skipped MiB",
    "peak held MiB", "max delay ms",  "MiB/s",       "causes G/F/C", "violations"};

std::vector<std::string> cells(const CompareRow& r, bool totals) {
  return {label(r),
          ms(r.wait_total),
          ms(r.wait_longest),
          format_count(r.would_blocks),
          format_count(r.timeouts),
          format_count(r.fallbacks),
          mib(r.fallback_bytes),
          format_count(r.direct),
          mib(r.direct_bytes),
          mib(r.bytes_skipped),
          mib(r.peak_held),
          ms(r.delay_max),
          totals ? std::string("-") : fmt("%.1f", r.throughput_mib_s),
          format_count(r.causes[BlockCause::InFlight]) + "/" +
              format_count(r.causes[BlockCause::Fragmentation]) + "/" +
              format_count(r.causes[BlockCause::Cap]),
          format_count(r.invariant_violations)};
}

std::string render(const std::string& title, const std::vector<std::vector<std::string>>& rows,
                   bool markdown) {
  std::string out;
  if (markdown) {
    out += "**" + title + "**\n\n|";
    for (const std::string& h : kHeader)
      out += " " + h + " |";
    out += "\n|";
    for (std::size_t i = 0; i < kHeader.size(); ++i)
      out += i == 0 ? " --- |" : " ---: |";
    out += "\n";
    for (const auto& row : rows) {
      out += "|";
      for (const std::string& c : row)
        out += " " + c + " |";
      out += "\n";
    }
    return out + "\n";
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
      const std::size_t pad = width[i] - row[i].size();
      s += i == 0 ? row[i] + std::string(pad, ' ') : std::string(pad, ' ') + row[i];
      s += "  ";
    }
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    return s + "\n";
  };
  out += title + "\n";
  out += line(kHeader);
  for (const auto& row : rows)
    out += line(row);
  return out + "\n";
}

// Totals per (strategy, policy) over every workload: sums, and maxima for the longest wait, the
// peak held bytes and the longest delay.
std::vector<CompareRow> totals(const std::vector<CompareRow>& rows) {
  std::vector<CompareRow> out;
  for (const auto& [strategy, policy] : compared_policies()) {
    CompareRow t;
    t.workload = "all";
    t.strategy = strategy;
    t.policy = policy;
    bool any = false;
    for (const CompareRow& r : rows) {
      if (r.strategy != strategy || r.policy != policy) continue;
      any = true;
      t.wait_total += r.wait_total;
      t.wait_longest = std::max(t.wait_longest, r.wait_longest);
      t.would_blocks += r.would_blocks;
      t.timeouts += r.timeouts;
      t.fallbacks += r.fallbacks;
      t.fallback_bytes += r.fallback_bytes;
      t.direct += r.direct;
      t.direct_bytes += r.direct_bytes;
      t.bytes_skipped += r.bytes_skipped;
      t.peak_held = std::max(t.peak_held, r.peak_held);
      t.delay_max = std::max(t.delay_max, r.delay_max);
      t.invariant_violations += r.invariant_violations;
      for (std::size_t c = 0; c < 3; ++c) {
        t.causes.by_cause[c] += r.causes.by_cause[c];
        t.would_block_causes.by_cause[c] += r.would_block_causes.by_cause[c];
        t.wait_causes.by_cause[c] += r.wait_causes.by_cause[c];
        t.split_causes.by_cause[c] += r.split_causes.by_cause[c];
        t.grow_causes.by_cause[c] += r.grow_causes.by_cause[c];
        t.fallback_causes.by_cause[c] += r.fallback_causes.by_cause[c];
        t.direct_causes.by_cause[c] += r.direct_causes.by_cause[c];
      }
    }
    if (any) out.push_back(t);
  }
  return out;
}

nlohmann::ordered_json causes(const CauseCounts& c) {
  return {{"InFlight", c[BlockCause::InFlight]},
          {"Fragmentation", c[BlockCause::Fragmentation]},
          {"Cap", c[BlockCause::Cap]}};
}

nlohmann::ordered_json row_json(const CompareRow& r) {
  return {{"workload", r.workload},
          {"strategy", std::string(to_string(r.strategy))},
          {"policy", policy_name(r.policy)},
          {"wait_total_ns", r.wait_total.count()},
          {"wait_longest_ns", r.wait_longest.count()},
          {"would_blocks", r.would_blocks},
          {"timeouts", r.timeouts},
          {"fallbacks", r.fallbacks},
          {"fallback_bytes", r.fallback_bytes},
          {"direct", r.direct},
          {"direct_bytes", r.direct_bytes},
          {"bytes_skipped", r.bytes_skipped},
          {"peak_held_bytes", r.peak_held},
          {"upload_delay_max_ns", r.delay_max.count()},
          {"throughput_mib_s", r.throughput_mib_s},
          {"invariant_violations", r.invariant_violations},
          {"causes",
           {{"would_block", causes(r.would_block_causes)},
            {"wait", causes(r.wait_causes)},
            {"split", causes(r.split_causes)},
            {"grow", causes(r.grow_causes)},
            {"fallback", causes(r.fallback_causes)},
            {"direct", causes(r.direct_causes)},
            {"all", causes(r.causes)}}}};
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

Expected<std::vector<CompareRow>, std::string> run_compare(
    const SimConfig& base, const std::vector<Workload>& workloads,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress) {
  std::vector<CompareRow> rows;
  const std::size_t runs = workloads.size() * compared_policies().size();
  std::size_t done = 0;
  for (const Workload& w : workloads) {
    for (const auto& [strategy, policy] : compared_policies()) {
      SimConfig c = base;
      c.strategy = strategy;
      c.policy = policy;
      c.record_timeline = false;
      if (progress) {
        progress(done, runs, w.name + " " + label(strategy, policy));
      }
      auto result = simulate(c, w);
      if (!result) return unexpected(w.name + ": " + result.error());
      const RunResult& r = *result;
      CompareRow row;
      row.workload = w.name;
      row.strategy = strategy;
      row.policy = policy;
      row.wait_total = r.wait_total;
      row.wait_longest = r.wait_longest;
      row.would_blocks = r.would_block_causes.total();
      row.timeouts = r.timeouts;
      row.fallbacks = r.fallbacks;
      row.fallback_bytes = r.fallback_bytes;
      row.direct = r.direct;
      row.direct_bytes = r.direct_bytes;
      row.bytes_skipped = r.bytes_skipped;
      row.peak_held = r.peak_held;
      row.delay_max = r.delay_max;
      row.throughput_mib_s = r.throughput_mib_s();
      row.invariant_violations = r.invariant_violations();
      row.would_block_causes = r.would_block_causes;
      row.wait_causes = r.wait_causes;
      row.split_causes = r.split_causes;
      row.grow_causes = r.grow_causes;
      row.fallback_causes = r.fallback_causes;
      row.direct_causes = r.direct_causes;
      for (std::size_t k = 0; k < 3; ++k) {
        row.causes.by_cause[k] = r.would_block_causes.by_cause[k] + r.wait_causes.by_cause[k] +
                                 r.split_causes.by_cause[k] + r.grow_causes.by_cause[k] +
                                 r.fallback_causes.by_cause[k] + r.direct_causes.by_cause[k];
      }
      rows.push_back(row);
      ++done;
    }
  }
  if (progress) progress(runs, runs, "done");
  return rows;
}

std::string compare_table(const std::vector<CompareRow>& rows, bool markdown) {
  std::string out;
  std::vector<std::string> order;
  for (const CompareRow& r : rows) {
    if (std::find(order.begin(), order.end(), r.workload) == order.end()) {
      order.push_back(r.workload);
    }
  }
  for (const std::string& w : order) {
    std::vector<std::vector<std::string>> block;
    for (const CompareRow& r : rows) {
      if (r.workload == w) block.push_back(cells(r, false));
    }
    out += render(w, block, markdown);
  }
  if (order.size() < 2) return out;
  std::vector<std::vector<std::string>> block;
  for (const CompareRow& t : totals(rows))
    block.push_back(cells(t, true));
  out += render("all workloads (sums; maxima for wait max, peak held, max delay)", block, markdown);
  return out;
}

nlohmann::ordered_json compare_json(const SimConfig& base, const std::vector<CompareRow>& rows) {
  nlohmann::ordered_json config{{"capacity", base.capacity},
                                {"cap", base.effective_cap()},
                                {"frames_in_flight", base.frames_in_flight},
                                {"delay", base.delay ? base.delay->text : "workload default"},
                                {"bandwidth_bytes_per_s", base.bandwidth},
                                {"seed", base.seed},
                                {"duration_ns", base.duration.count()},
                                {"wait_timeout_ns", base.wait_timeout.count()}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  uint64_t violations = 0;
  for (const CompareRow& r : rows) {
    list.push_back(row_json(r));
    violations += r.invariant_violations;
  }
  nlohmann::ordered_json total = nlohmann::ordered_json::array();
  for (const CompareRow& t : totals(rows))
    total.push_back(row_json(t));
  nlohmann::ordered_json j;
  j["tool"] = "staging-sim";
  j["format_version"] = 1;
  j["invariant_violations"] = violations;
  j["compare"] = {{"config", config}, {"rows", list}, {"totals", total}};
  return j;
}

}  // namespace staging::sim
