// --compare: every policy (byte ring: defer, wait, split, grow, fallback; slot ring: fallback,
// wait) over a set of workloads under one base configuration, and the policy table.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_result.hpp"
#include "sim_config.hpp"
#include "staging/core/expected.hpp"
#include "upload.hpp"

namespace staging::sim {

/// One row of the policy table: a (strategy, policy) over one workload.
struct CompareRow {
  std::string workload;
  Strategy strategy = Strategy::Byte;
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;
  Duration wait_total{0};
  Duration wait_longest{0};
  uint64_t would_blocks = 0;
  uint64_t timeouts = 0;
  uint64_t fallbacks = 0;
  uint64_t fallback_bytes = 0;
  uint64_t direct = 0;
  uint64_t direct_bytes = 0;
  uint64_t bytes_skipped = 0;
  uint64_t peak_held = 0;
  Duration delay_max{0};
  double throughput_mib_s = 0;
  uint64_t invariant_violations = 0;
  /// Every would-block, wait, split, grow, fallback and direct upload, by cause.
  CauseCounts causes;
  CauseCounts would_block_causes, wait_causes, split_causes, grow_causes, fallback_causes,
      direct_causes;
};

/// The (strategy, policy) pairs --compare runs, in table order.
[[nodiscard]] const std::vector<std::pair<Strategy, ExhaustionPolicy>>& compared_policies();

/// Runs every compared policy over every workload (`base` gives everything but the strategy and
/// policy). `progress` is told (run index, runs, label). Errors: a run the simulator refuses.
[[nodiscard]] Expected<std::vector<CompareRow>, std::string> run_compare(
    const SimConfig& base, const std::vector<Workload>& workloads,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress);

/// The policy table: one block of rows per workload, then totals per policy over all workloads.
/// `markdown` gives GitHub tables, otherwise aligned text.
[[nodiscard]] std::string compare_table(const std::vector<CompareRow>& rows, bool markdown);

/// {"compare": {"config": ..., "rows": [...], "totals": [...]}, "invariant_violations": N}.
[[nodiscard]] nlohmann::ordered_json compare_json(const SimConfig& base,
                                                  const std::vector<CompareRow>& rows);

}  // namespace staging::sim
