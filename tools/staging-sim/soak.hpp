// The soak (--soak DURATION): staging-sim over random built-in workloads, strategies, policies
// and configurations for a stretch of real time, every run checked as any other (the invariant
// checker on every reservation, byte checks, the ring's stats against its events). A soak passes
// when no run violates an invariant, no run's stats disagree, no run is refused, every byte of
// staging memory is released after each run, and the process's memory stays flat: its resident
// size at the end is at most kSoakRssGrowth above what it was after the first runs.
//
// Deterministic for a seed (run i's configuration comes from the seed and i alone); how many
// runs fit in the time depends on the machine. A failing run is printed as the command line that
// repeats it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sim_config.hpp"

namespace staging::sim {

/// How much the soak's resident memory may grow after its first runs: 64 MiB.
inline constexpr uint64_t kSoakRssGrowth = uint64_t{64} << 20;

/// What a soak did.
struct SoakResult {
  uint64_t runs = 0;
  uint64_t uploads = 0;
  /// Reservations the invariant checker saw, and reservations whose bytes were verified.
  uint64_t checks = 0;
  uint64_t byte_checks = 0;
  /// Resident memory after the first runs, and at the end.
  uint64_t rss_start = 0;
  uint64_t rss_end = 0;
  /// Why the soak failed (the first failure ends it), and the command line that repeats the run.
  struct Failure {
    int exit_status;  // 1 violation, 2 a run refused, 3 stats mismatch, 4 memory grew
    std::string what;
    std::string command;
  };
  std::optional<Failure> failure;
};

/// Soaks for `wall` of real time (at least one run) from `seed`; `fault` is planted in every run
/// (a self-check: the soak must then fail). `progress` is told (elapsed ns, wall ns, runs).
[[nodiscard]] SoakResult soak(Duration wall, uint64_t seed, Fault fault,
                              const std::function<void(uint64_t, uint64_t, uint64_t)>& progress);

/// The soak's report: what ran, the checks, the memory, and the verdict (several lines).
[[nodiscard]] std::string soak_text(const SoakResult& result, Duration wall, uint64_t seed);

}  // namespace staging::sim
