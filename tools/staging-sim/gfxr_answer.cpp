#include "gfxr_answer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "compare.hpp"
#include "simulator.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

using nlohmann::ordered_json;

constexpr uint64_t kSearchTop = kMaxStagingBytes / 2;  // the cap is twice the capacity

// Nothing but plain reservations: no wait, refusal, split, fallback or growth. (The slot ring
// creates its slot buffers as it first needs them, which it counts as growing: not held against
// it.)
bool clean(const RunResult& r, Strategy strategy) {
  const bool slot = strategy == Strategy::Slot;
  uint64_t acted = r.timeouts + r.cap_refusals + r.direct + r.fallbacks + r.waits;
  acted += slot ? 0 : r.grows;
  for (const CauseTable& t : kCauseTables) {
    if (!(slot && t.counts == &RunResult::grow_causes)) acted += (r.*(t.counts)).total();
  }
  return acted == 0 && r.invariant_violations() == 0;
}

SimConfig with_capacity(SimConfig c, uint64_t capacity) {
  c.capacity = capacity;
  c.cap = 0;
  c.fallback_cap = 0;
  c.record_timeline = false;
  return c;
}

Duration nth(const std::vector<Duration>& sorted, double p) {
  if (sorted.empty()) return Duration{0};
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// Runs `c` at `capacity`: clean or not; an error when the simulator refuses the configuration.
Expected<bool, std::string> clean_at(const SimConfig& c, const Workload& w, uint64_t capacity,
                                     uint64_t& runs) {
  ++runs;
  auto r = simulate(with_capacity(c, capacity), w);
  if (!r) return unexpected(r.error());
  return clean(*r, c.strategy);
}

// The smallest clean capacity for `c` (doubling, then bisection), or none up to kSearchTop.
Expected<void, std::string> search(const SimConfig& c, const Workload& w, PolicyAnswer& a) {
  uint64_t largest = 1;
  for (const Upload& u : w.uploads)
    largest = std::max(largest, add_sat(u.size, u.alignment));
  uint64_t lo = 0, hi = std::min<uint64_t>(std::max<uint64_t>(largest, 4096), kSearchTop);
  for (;;) {
    auto ok = clean_at(c, w, hi, a.runs);
    if (!ok) return unexpected(ok.error());
    if (*ok) break;
    if (hi == kSearchTop) return {};
    lo = hi;
    hi = std::min(kSearchTop, hi * 2);
  }
  while (hi - lo > std::max<uint64_t>(1, hi / kSizingPrecisionDivisor)) {
    const uint64_t mid = lo + (hi - lo) / 2;
    auto ok = clean_at(c, w, mid, a.runs);
    if (!ok) return unexpected(ok.error());
    (*ok ? hi : lo) = mid;
  }
  a.smallest_clean = hi;
  a.precision = hi - lo;
  return {};
}

// What the run at the user's ring did.
Expected<void, std::string> at_ring(const SimConfig& c, const Workload& w, PolicyAnswer& a) {
  SimConfig rc = c;
  rc.record_timeline = true;
  auto r = simulate(rc, w);
  if (!r) return unexpected(r.error());
  std::vector<Duration> waits;
  for (const Mark& m : r->marks) {
    if (m.kind == MarkKind::Wait) waits.push_back(m.duration);
  }
  std::sort(waits.begin(), waits.end());
  a.waits = r->waits;
  a.wait_p50 = nth(waits, 0.5);
  a.wait_p99 = nth(waits, 0.99);
  a.wait_max = r->wait_longest;
  a.would_blocks = r->would_block_causes.total();
  a.timeouts = r->timeouts;
  a.fallbacks = r->fallbacks;
  a.direct = r->direct;
  a.peak_held = r->peak_held;
  a.invariant_violations = r->invariant_violations();
  return {};
}

}  // namespace

Expected<SizingAnswer, std::string> size_ring(
    const SimConfig& base, const Workload& w, uint64_t app_peak,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress) {
  SizingAnswer out{base.capacity, app_peak, {}};
  const auto& policies = compared_policies();
  for (const auto& [strategy, policy] : policies) {
    SimConfig c = base;
    c.strategy = strategy;
    c.policy = policy;
    PolicyAnswer a;
    a.strategy = strategy;
    a.policy = policy;
    if (progress) progress(out.rows.size(), policies.size(), label(strategy, policy));
    if (auto e = at_ring(c, w, a); !e) return unexpected(w.name + ": " + e.error());
    if (auto e = search(c, w, a); !e) return unexpected(w.name + ": " + e.error());
    out.rows.push_back(a);
  }
  if (progress) progress(policies.size(), policies.size(), "done");
  return out;
}

std::string answer_table(const SizingAnswer& s, bool markdown) {
  const std::vector<std::string> header = {"ring/policy", "smallest clean ring", "waits",
                                           "wait p50 ms", "wait p99 ms",         "would-blocks",
                                           "timeouts",    "fallbacks",           "direct",
                                           "peak held",   "clean / app staging"};
  std::vector<std::vector<std::string>> rows;
  for (const PolicyAnswer& a : s.rows) {
    const std::string peak =
        s.app_staging_peak_bytes == 0 || !a.smallest_clean
            ? std::string("-")
            : fmt::format("{:.2f}x", static_cast<double>(*a.smallest_clean) /
                                         static_cast<double>(s.app_staging_peak_bytes));
    rows.push_back({label(a.strategy, a.policy),
                    a.smallest_clean ? format_bytes(*a.smallest_clean) : std::string("> 8 GiB"),
                    format_count(a.waits), fmt::format("{:.3f}", to_ms(a.wait_p50)),
                    fmt::format("{:.3f}", to_ms(a.wait_p99)), format_count(a.would_blocks),
                    format_count(a.timeouts), format_count(a.fallbacks), format_count(a.direct),
                    format_bytes(a.peak_held), peak});
  }
  std::string out = fmt::format(
      "ring sizes for this capture: the smallest clean ring (never waits or refuses; within 1/{} "
      "of its value); what a {} ring does; the application's own staging memory peaked at {}\n",
      kSizingPrecisionDivisor, format_bytes(s.ring_bytes), format_bytes(s.app_staging_peak_bytes));
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (const auto& r : rows)
      width[i] = std::max(width[i], r[i].size());
  }
  const auto line = [&](const std::vector<std::string>& r) {
    std::string l = markdown ? "|" : " ";
    for (std::size_t i = 0; i < r.size(); ++i) {
      l += markdown ? fmt::format(" {} |", r[i])
           : i == 0 ? fmt::format("{:<{}}  ", r[i], width[i])
                    : fmt::format("{:>{}}  ", r[i], width[i]);
    }
    return l.erase(l.find_last_not_of(' ') + 1) + "\n";
  };
  out += line(header);
  if (markdown) {
    out += "| ---";
    for (std::size_t i = 1; i < header.size(); ++i)
      out += " | ---:";
    out += " |\n";
  }
  for (const auto& r : rows)
    out += line(r);
  return out;
}

ordered_json answer_json(const SizingAnswer& s) {
  ordered_json policies = ordered_json::array();
  for (const PolicyAnswer& a : s.rows) {
    policies.push_back(
        {{"strategy", to_string(a.strategy)},
         {"policy", policy_name(a.policy)},
         {"smallest_clean_bytes", a.smallest_clean ? ordered_json(*a.smallest_clean) : nullptr},
         {"precision_bytes", a.precision},
         {"runs", a.runs},
         {"at_ring",
          {{"waits", a.waits},
           {"wait_p50_ns", a.wait_p50.count()},
           {"wait_p99_ns", a.wait_p99.count()},
           {"wait_max_ns", a.wait_max.count()},
           {"would_blocks", a.would_blocks},
           {"timeouts", a.timeouts},
           {"fallbacks", a.fallbacks},
           {"direct", a.direct},
           {"peak_held_bytes", a.peak_held},
           {"invariant_violations", a.invariant_violations}}}});
  }
  return {{"ring_bytes", s.ring_bytes},
          {"app_staging_peak_bytes", s.app_staging_peak_bytes},
          {"precision_divisor", kSizingPrecisionDivisor},
          {"policies", policies}};
}

}  // namespace staging::sim
