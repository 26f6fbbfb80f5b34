// The JSON report of one run (--json): every stat, each cause count, the checker's verdict.
#include "reports.hpp"
#include "staging/detail/core/counters.hpp"

namespace staging::sim {
namespace {

using nlohmann::ordered_json;

int64_t ns(Duration d) {
  return static_cast<int64_t>(d.count());
}

ordered_json causes(const CauseCounts& c) {
  ordered_json j;
  j["InFlight"] = c[BlockCause::InFlight];
  j["Fragmentation"] = c[BlockCause::Fragmentation];
  j["Cap"] = c[BlockCause::Cap];
  j["total"] = c.total();
  return j;
}

// Every counter of a core stats struct, from the core's own counter list: {"key": n, ...}, an
// enum-indexed counter as {"InFlight": n, "Fragmentation": n, "Cap": n}.
template <class Stats>
ordered_json counters_json(const Stats& stats) {
  ordered_json j;
  for_each_counter(stats, [&](const CounterInfo& c, uint64_t value) {
    ordered_json& slot = j[std::string(c.key)];
    (c.index.empty() ? slot : slot[std::string(c.index)]) = value;
  });
  return j;
}

// The run's configuration: every setting, the stall windows.
ordered_json config_json(const RunResult& r) {
  const SimConfig& c = r.config;
  ordered_json config;
  config["seed"] = c.seed;
  config["capacity"] = r.capacity;
  config["cap"] = r.cap;
  config["frames_in_flight"] = c.frames_in_flight;
  config["delay"] = r.delay;
  config["bandwidth_bytes_per_s"] = c.bandwidth;
  config["wait_timeout_ns"] = ns(c.wait_timeout);
  config["poll_interval_ns"] = ns(c.poll_interval);
  config["grow_step"] = c.grow_step;
  config["trim_after_ns"] = ns(c.trim_after);
  config["fallback_cap"] = c.fallback_cap;
  config["split_min_chunk"] = c.split_min_chunk;
  config["duration_ns"] = ns(c.duration);
  config["fault"] = to_string(c.fault);
  if (c.strategy == Strategy::Slot) {
    config["slots"] = r.slots;
    config["max_slot_bytes"] = r.max_slot_bytes;
  }
  ordered_json stalls = ordered_json::array();
  for (const StallWindow& w : r.stalls)
    stalls.push_back({{"at_ns", ns(w.at)}, {"for_ns", ns(w.length)}});
  config["stalls"] = stalls;
  return config;
}

// Every stat of the run.
ordered_json stats_json(const RunResult& r) {
  ordered_json s;
  s["uploads"] = r.uploads;
  s["upload_bytes"] = r.upload_bytes;
  s["frames"] = r.frames;
  s["streaming_uploads"] = r.streaming_uploads;
  s["first_arrival_ns"] = ns(r.first_arrival);
  s["last_arrival_ns"] = ns(r.last_arrival);
  s["end_ns"] = ns(r.end);
  s["makespan_ns"] = ns(r.makespan());
  s["drained"] = r.drained;
  s["throughput_mib_s"] = r.throughput_mib_s();
  s["reservations"] = r.reservations;
  s["bytes_reserved"] = r.bytes_reserved;
  s["submissions"] = r.submissions;
  s["early_flushes"] = r.early_flushes;
  s["peak_held_bytes"] = r.peak_held;
  s["peak_in_flight_bytes"] = r.peak_in_flight;
  s["wraps"] = r.wraps;
  s["bytes_skipped"] = r.bytes_skipped;
  s["would_blocks"] = r.would_block_causes.total();
  s["waits"] = r.waits;
  s["wait_total_ns"] = ns(r.wait_total);
  s["wait_longest_ns"] = ns(r.wait_longest);
  s["timeouts"] = r.timeouts;
  s["splits"] = r.split_causes.total();
  s["grows"] = r.grows;
  s["trims"] = r.trims;
  s["fallbacks"] = r.fallbacks;
  s["fallback_bytes"] = r.fallback_bytes;
  s["cap_refusals"] = r.cap_refusals;
  s["direct"] = r.direct;
  s["direct_bytes"] = r.direct_bytes;
  s["upload_delay_total_ns"] = ns(r.delay_total);
  s["upload_delay_max_ns"] = ns(r.delay_max);
  s["delayed_uploads"] = r.delayed_uploads;
  s["upload_latency_total_ns"] = ns(r.latency_total);
  s["upload_latency_max_ns"] = ns(r.latency_max);
  s["busy_ns"] = ns(r.busy);
  s["pacing_waits"] = r.pacing_waits;
  s["pacing_total_ns"] = ns(r.pacing_total);
  s["pacing_longest_ns"] = ns(r.pacing_longest);
  return s;
}

// The checker's verdict: counts, violations by invariant, the first 100 messages.
ordered_json checks_json(const RunResult& r) {
  ordered_json checks;
  checks["reservations_checked"] = r.checks;
  checks["byte_checks"] = r.stamps_checked;
  checks["byte_checks_corrupted"] = r.stamps_corrupted;
  checks["violations_by_invariant"] = {{"I1", r.violations_by_invariant[0]},
                                       {"I2", r.violations_by_invariant[1]},
                                       {"I3", r.violations_by_invariant[2]},
                                       {"I4", r.violations_by_invariant[3]},
                                       {"I5", r.violations_by_invariant[4]}};
  ordered_json messages = ordered_json::array();
  for (std::size_t i = 0; i < r.violations.size() && i < 100; ++i) {
    messages.push_back({{"invariant", std::string(to_string(r.violations[i].invariant))},
                        {"message", r.violations[i].message}});
  }
  checks["violations"] = messages;
  checks["stat_mismatches"] = r.stat_mismatches;
  return checks;
}

}  // namespace

ordered_json result_json(const RunResult& r) {
  const SimConfig& c = r.config;
  ordered_json j;
  j["tool"] = "staging-sim";
  j["format_version"] = 1;
  j["workload"] = r.workload;
  j["strategy"] = std::string(to_string(c.strategy));
  j["policy"] = policy_name(c.policy);
  j["invariant_violations"] = r.invariant_violations();
  j["capacity"] = r.capacity;
  j["cap"] = r.cap;
  j["peak_held_bytes"] = r.peak_held;

  j["config"] = config_json(r);
  j["stats"] = stats_json(r);

  for (const CauseTable& t : kCauseTables)
    j["causes"][std::string(t.key)] = causes(r.*t.counts);

  j["checks"] = checks_json(r);

  ordered_json kinds = ordered_json::array();
  for (const KindStats& k : r.kinds) {
    kinds.push_back(
        {{"kind", k.name}, {"uploads", k.uploads}, {"bytes", k.bytes}, {"direct", k.direct}});
  }
  j["kinds"] = kinds;
  if (r.byte_stats) j["byte_ring_stats"] = counters_json(*r.byte_stats);
  if (r.slot_stats) j["slot_ring_stats"] = counters_json(*r.slot_stats);
  return j;
}

}  // namespace staging::sim
