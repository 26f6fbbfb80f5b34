// --compare: every policy (byte ring: defer, wait, split, grow, fallback; slot ring: fallback,
// wait) and the streamer (streamer_model.hpp: frame uploads through a byte ring under Wait on the
// graphics queue, streaming uploads through a StreamScheduler on a transfer queue, the capacity
// shared out between them; row "streamer/wait") over a set of workloads under one base
// configuration, and the policy table.
//
// A row is the headline of one run as JSON — exactly what --json writes for it under
// "compare"/"rows": {"workload", "strategy", "policy", "wait_total_ns", "wait_longest_ns",
// "would_blocks", "timeouts", "fallbacks", "fallback_bytes", "direct", "direct_bytes",
// "bytes_skipped", "peak_held_bytes", "upload_delay_max_ns", "throughput_mib_s",
// "invariant_violations", "causes": {"would_block", "wait", "split", "grow", "fallback", "direct",
// "all": {"InFlight", "Fragmentation", "Cap"}}}; a streamer row also has "streamer": {"uploads",
// "bytes", "larger_than_ring", "pieces", "batches", "queue_refusals", "ring_full",
// "peak_held_bytes", "busy_ns", "producer_wait_total_ns", "submitted_max_ns", "complete_max_ns",
// "complete_p99_ns", "byte_mismatches", "failed"} (its would-blocks, peak held, max delay,
// throughput and violations include the streaming half's). The figures are the run's --json
// "stats", by the same names; the text and Markdown tables are drawn from the rows.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim_config.hpp"
#include "staging/core/errors.hpp"
#include "upload.hpp"

namespace staging::sim {

/// The graphics ring's policy in the streamer's row.
inline constexpr ExhaustionPolicy kStreamerGraphicsPolicy = ExhaustionPolicy::Wait;

/// The (strategy, policy) pairs --compare runs, in table order (the streamer's row follows).
[[nodiscard]] const std::vector<std::pair<Strategy, ExhaustionPolicy>>& compared_policies();

/// Runs every compared policy over every workload (`base` gives everything but the strategy and
/// policy) and returns a row per run (see the file comment). `progress` is told (run index,
/// runs, label). Errors: a run the simulator refuses.
[[nodiscard]] Expected<std::vector<nlohmann::ordered_json>, std::string> run_compare(
    const SimConfig& base, const std::vector<Workload>& workloads,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress);

/// The policy table: one block of rows per workload, then totals per policy over all workloads.
/// `markdown` gives GitHub tables, otherwise aligned text.
[[nodiscard]] std::string compare_table(const std::vector<nlohmann::ordered_json>& rows,
                                        bool markdown);

/// {"invariant_violations": N, "compare": {"config": ..., "rows": [...], "totals": [...]}}.
[[nodiscard]] nlohmann::ordered_json compare_json(const SimConfig& base,
                                                  const std::vector<nlohmann::ordered_json>& rows);

}  // namespace staging::sim
