// The answer for an imported capture: per compared policy (compare.hpp), the smallest ring that
// never waits or refuses on the application's upload stream, and what happens with the ring the
// user has (--ring-bytes): waits and their p50/p99, refusals, the staging memory held — beside
// the staging memory the application itself kept (docs/sim.md, "Sizing a ring for a captured
// application").
//
// The search runs the simulator: capacities doubling from the largest upload until a run is
// clean (no wait, would-block, timeout, split, grow, fallback, cap refusal or upload routed
// around the ring), then bisection down to kSizingPrecision of the answer; the cap is 2 x the
// capacity throughout, as by default. It assumes a larger ring never does worse (true of the
// ring's FIFO order; a run at the answer is clean and one at answer - precision was not).
// Thread: the caller's; deterministic like the simulator.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim_config.hpp"
#include "staging/core/errors.hpp"
#include "upload.hpp"

namespace staging::sim {

/// The search stops when its bracket is within 1/64 of its upper end (about 1.6%).
inline constexpr uint64_t kSizingPrecisionDivisor = 64;

/// One compared policy's answer.
struct PolicyAnswer {
  Strategy strategy = Strategy::Byte;
  ExhaustionPolicy policy = ExhaustionPolicy::Wait;
  /// The smallest clean capacity found; none when even the largest tried (kMaxStagingBytes / 2)
  /// was not clean.
  std::optional<uint64_t> smallest_clean;
  /// The true smallest lies in (smallest_clean - precision, smallest_clean].
  uint64_t precision = 0;
  uint64_t runs = 0;  ///< simulations the search made
  // --- with the user's ring ---
  uint64_t waits = 0;
  Duration wait_p50{0};
  Duration wait_p99{0};
  Duration wait_max{0};
  uint64_t would_blocks = 0;
  uint64_t timeouts = 0;
  uint64_t fallbacks = 0;
  uint64_t direct = 0;
  uint64_t peak_held = 0;
  uint64_t invariant_violations = 0;
};

struct SizingAnswer {
  uint64_t ring_bytes = 0;
  uint64_t app_staging_peak_bytes = 0;
  std::vector<PolicyAnswer> rows;
};

/// Answers for `workload` under `base` (its capacity is the user's ring). `progress` is told
/// (step, steps, label). Errors: a run the simulator refuses.
[[nodiscard]] Expected<SizingAnswer, std::string> size_ring(
    const SimConfig& base, const Workload& workload, uint64_t app_staging_peak_bytes,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress);

/// The answer as an aligned text table (or Markdown), ending with a newline.
[[nodiscard]] std::string answer_table(const SizingAnswer& answer, bool markdown);

/// {"ring_bytes", "app_staging_peak_bytes", "precision_divisor", "policies": [{"strategy",
/// "policy", "smallest_clean_bytes" (null: none up to 8 GiB), "precision_bytes", "runs",
/// "at_ring": {"waits", "wait_p50_ns", "wait_p99_ns", "wait_max_ns", "would_blocks", "timeouts",
/// "fallbacks", "direct", "peak_held_bytes", "invariant_violations"}}]}.
[[nodiscard]] nlohmann::ordered_json answer_json(const SizingAnswer& answer);

}  // namespace staging::sim
