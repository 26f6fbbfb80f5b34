// staging-cpu-pairs: which of this host's CPUs share a core, measured rather than read from sysfs.
//
// A guest's virtual CPUs may be hardware threads of fewer physical cores than the guest sees
// ("Thread(s) per core: 1" while two of them share one core's units), so that N busy threads run
// at less than N times one thread's speed whatever they do; which virtual CPUs share a core can
// also change while the guest runs. This tool measures it: for every pair of usable CPUs (i, j),
// two threads pinned there each run 8 independent multiply-add chains (a core's throughput, as
// staging-bench-core's CoreThroughput rows) at the same time; the pair's slowdown is the slower
// thread's time over that CPU's time alone (the best of --repeats runs each). About 1.0: the two
// CPUs have a core each; towards 2: they share one. Read the many-writer rows of staging-bench-core
// (SharedFrameProducers) beside it, and pin their threads with STAGING_BENCH_CPUS where it helps.
//
//   build/bin/staging-cpu-pairs [--repeats N] [--threshold X] [--cpus 0-7,12]
//
// Prints each CPU's time alone, the matrix of pair slowdowns, and a greedy set of CPUs no two of
// which slow each other by more than --threshold. Pairs are measured one after another (about
// 20 ms each with 3 repeats): on a shared host, a later row may see other tenants' load an earlier
// one did not.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "core_work.hpp"
#include "exception_exit.hpp"
#include "staging/detail/core/host_topology.hpp"

namespace {

std::atomic<uint64_t> sink{0};

// Runs independent_chains (2^21 steps, a few ms) on a thread pinned to `cpu` once `ready` reaches
// `together` (every thread of the measurement pinned and waiting); returns its time in seconds.
// Nullopt: the CPU refused the pin (the thread still arrives, so that the others go on).
std::optional<double> timed_on(int cpu, std::atomic<int>& ready, int together) {
  const bool pinned = staging::pin_current_thread(std::span<const int>(&cpu, 1));
  ready.fetch_add(1);
  while (ready.load() < together) {
  }
  if (!pinned) return std::nullopt;
  const auto begin = std::chrono::steady_clock::now();
  sink.fetch_add(independent_chains(static_cast<uint64_t>(cpu), 1u << 21),
                 std::memory_order_relaxed);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

// The times of independent_chains on `cpus`, all at once (one thread each).
std::vector<std::optional<double>> run_together(const std::vector<int>& cpus) {
  std::vector<std::optional<double>> times(cpus.size());
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < cpus.size(); ++k)
    threads.emplace_back(
        [&, k] { times[k] = timed_on(cpus[k], ready, static_cast<int>(cpus.size())); });
  for (auto& t : threads)
    t.join();
  return times;
}

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // not measured

// The best of `repeats` measurements of `cpus` together: per CPU, its shortest time; kNone for a
// CPU that refused every pin.
std::vector<double> best_of(const std::vector<int>& cpus, unsigned repeats) {
  std::vector<double> best(cpus.size(), std::numeric_limits<double>::infinity());
  for (unsigned r = 0; r < repeats; ++r) {
    const auto times = run_together(cpus);
    for (std::size_t k = 0; k < cpus.size(); ++k) {
      if (times[k]) best[k] = std::min(best[k], *times[k]);
    }
  }
  for (double& b : best) {
    if (std::isinf(b)) b = kNone;
  }
  return best;
}

// The slower of two CPUs busy together, each over its time alone; kNone where one is unmeasured.
double pair_slowdown(const std::vector<double>& both, double alone_i, double alone_j) {
  const double i = both[0] / alone_i, j = both[1] / alone_j;
  return std::isnan(i) || std::isnan(j) ? kNone : std::max(i, j);
}

// The CPUs to measure: every usable one, or those of `list` (a CPU list, "0-7,12"), each of which
// must be usable. Nullopt (and `error` set) otherwise.
std::optional<std::vector<int>> cpus_to_measure(const std::string& list, std::string& error) {
  std::vector<int> usable = staging::HostTopology::read().cpus(-1);
  if (list.empty()) return usable;
  const std::optional<std::vector<int>> asked = staging::parse_cpu_list(list);
  if (!asked || asked->empty()) {
    error = "--cpus: '" + list + "' is not a CPU list (such as 0-7,12)";
    return std::nullopt;
  }
  std::sort(usable.begin(), usable.end());
  for (const int c : *asked) {
    if (!std::binary_search(usable.begin(), usable.end(), c)) {
      error = "--cpus: CPU " + std::to_string(c) + " is not one this process may run on";
      return std::nullopt;
    }
  }
  return asked;
}

void print_matrix(const std::vector<int>& cpus, const std::vector<std::vector<double>>& slowdown) {
  std::printf("pair slowdown (row CPU and column CPU busy together, over alone):\n     ");
  for (const int c : cpus)
    std::printf("%6d", c);
  std::printf("\n");
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    std::printf("%5d", cpus[i]);
    for (std::size_t j = 0; j < cpus.size(); ++j) {
      if (i == j) {
        std::printf("%6s", "-");
      } else if (std::isnan(slowdown[i][j])) {
        std::printf("%6s", "n/a");
      } else {
        std::printf("%6.2f", slowdown[i][j]);
      }
    }
    std::printf("\n");
  }
}

// CPUs taken in order, each kept when it slows none kept before by more than `threshold` (a pair
// not measured counts as above it; a CPU not measured alone, its diagonal entry, is never kept).
std::vector<int> independent_set(const std::vector<int>& cpus,
                                 const std::vector<std::vector<double>>& slowdown,
                                 double threshold) {
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    if (std::isnan(slowdown[i][i])) continue;
    if (std::all_of(kept.begin(), kept.end(),
                    [&](std::size_t k) { return slowdown[i][k] <= threshold; }))
      kept.push_back(i);
  }
  std::vector<int> out;
  for (const std::size_t k : kept)
    out.push_back(cpus[k]);
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  unsigned repeats = 3;
  double threshold = 1.25;
  std::string cpu_list;
  CLI::App app{
      "staging-cpu-pairs: which of this host's CPUs share a core (pairs of busy threads, "
      "measured).",
      "staging-cpu-pairs"};
  app.add_option("--repeats", repeats, "runs per CPU alone and per pair; the best counts")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--threshold", threshold,
                 "the most slowdown two CPUs of the printed independent set may show")
      ->check(CLI::Range(1.0, 10.0));
  app.add_option("--cpus", cpu_list,
                 "the CPUs to measure, a list such as 0-7,12 (default: every CPU this process may "
                 "run on; a host of n CPUs takes about n^2 / 2 x 20 ms)");
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;
  std::string error;
  const std::optional<std::vector<int>> measured = cpus_to_measure(cpu_list, error);
  if (!measured) return staging::tools::usage_error(app, error);
  const std::vector<int>& cpus = *measured;

  std::vector<double> alone(cpus.size());
  // Slowdowns; 1.0 on the diagonal (kNone for a CPU that could not be measured alone).
  std::vector<std::vector<double>> slowdown(cpus.size(), std::vector<double>(cpus.size(), 1.0));
  std::printf("alone (ms):");
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    alone[i] = best_of({cpus[i]}, repeats).front();
    if (std::isnan(alone[i])) {
      slowdown[i][i] = kNone;
      std::printf(" %d:n/a", cpus[i]);
    } else {
      std::printf(" %d:%.2f", cpus[i], alone[i] * 1e3);
    }
  }
  std::printf("\n");
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    for (std::size_t j = i + 1; j < cpus.size(); ++j) {
      const auto both = best_of({cpus[i], cpus[j]}, repeats);
      slowdown[i][j] = slowdown[j][i] = pair_slowdown(both, alone[i], alone[j]);
    }
  }
  print_matrix(cpus, slowdown);
  const std::vector<int> set = independent_set(cpus, slowdown, threshold);
  std::printf("independent (no pair above %.2f): %zu CPUs:", threshold, set.size());
  for (const int c : set)
    std::printf(" %d", c);
  std::printf("\n");
  return 0;
} catch (...) {
  return staging::tools::exception_exit("staging-cpu-pairs");
}
