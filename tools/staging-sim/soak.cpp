#include "soak.hpp"

#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <tuple>

#include "host_memory.hpp"
#include "simulator.hpp"
#include "units.hpp"
#include "workloads.hpp"

namespace staging::sim {
namespace {

using std::chrono::milliseconds;

// splitmix64 of (seed, run, draw): every run's configuration from the seed and its index alone.
class Draw {
 public:
  Draw(uint64_t seed, uint64_t run) : state_(seed ^ (run * 0xD1B54A32D192ED03ull)) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  template <class T, std::size_t N>
  T pick(const T (&options)[N]) {
    return options[next() % N];
  }
  uint64_t range(uint64_t lo, uint64_t hi) { return lo + next() % (hi - lo + 1); }

 private:
  uint64_t state_;
};

struct Run {
  std::string workload;
  SimConfig config;
};

// Run `index`: a built-in workload of 1-4 s under a random strategy, policy and configuration
// within ranges where a run stays well inside the simulator's bounds.
Run draw_run(uint64_t seed, uint64_t index, Fault fault) {
  Draw d(seed, index);
  Run run;
  run.workload = std::string(workload_names()[d.next() % workload_names().size()]);
  SimConfig& c = run.config;
  static constexpr std::pair<Strategy, ExhaustionPolicy> kPairs[] = {
      {Strategy::Byte, ExhaustionPolicy::Defer},    {Strategy::Byte, ExhaustionPolicy::Wait},
      {Strategy::Byte, ExhaustionPolicy::Split},    {Strategy::Byte, ExhaustionPolicy::Grow},
      {Strategy::Byte, ExhaustionPolicy::Fallback}, {Strategy::Slot, ExhaustionPolicy::Fallback},
      {Strategy::Slot, ExhaustionPolicy::Wait},     {Strategy::Slot, ExhaustionPolicy::Defer}};
  std::tie(c.strategy, c.policy) = d.pick(kPairs);
  c.seed = d.next();
  c.duration = milliseconds(d.range(1000, 4000));
  constexpr uint64_t MiB = uint64_t{1} << 20;
  static constexpr uint64_t kCapacities[] = {MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB};
  c.capacity = d.pick(kCapacities);
  static constexpr uint64_t kCapTimesFour[] = {4, 6, 8, 12};
  c.cap = c.capacity / 4 * d.pick(kCapTimesFour);
  c.frames_in_flight = static_cast<uint32_t>(d.range(0, 4));
  const uint64_t lo = d.range(0, 10), hi = lo + d.range(0, 30);
  const std::string delays[] = {"", "", fmt::format("fixed:{}ms", lo),
                                fmt::format("random:{}ms:{}ms", lo, hi),
                                fmt::format("bursty:{}ms:{}ms:{}", lo, hi, d.range(0, 8))};
  if (const std::string& text = d.pick(delays); !text.empty()) {
    c.delay = parse_delay(text, c.seed, nullptr);
  }
  static constexpr uint64_t kBandwidths[] = {0, uint64_t{1} << 30, uint64_t{16} << 30,
                                             uint64_t{64} << 30};
  c.bandwidth = d.pick(kBandwidths);
  static constexpr Duration kPolls[] = {Duration{0}, milliseconds(1), milliseconds(4),
                                        std::chrono::microseconds(16667), milliseconds(33)};
  c.poll_interval = d.pick(kPolls);
  static constexpr Duration kTimeouts[] = {Duration{0}, milliseconds(1), milliseconds(10),
                                           milliseconds(100), milliseconds(250)};
  c.wait_timeout = d.pick(kTimeouts);
  c.grow_step = c.capacity / d.range(1, 4);
  static constexpr Duration kTrims[] = {milliseconds(10), milliseconds(100), milliseconds(1000)};
  c.trim_after = d.pick(kTrims);
  c.fallback_cap = d.range(0, 1) == 0 ? 0 : d.range(0, c.cap);
  static constexpr uint64_t kMinChunks[] = {0, 0, 4096, 65536};
  c.split_min_chunk = d.pick(kMinChunks);
  if (d.range(0, 2) == 0) {
    c.stalls.push_back({milliseconds(d.range(0, 4000)), milliseconds(d.range(10, 500))});
  }
  c.fault = fault;
  c.record_timeline = false;
  return run;
}

// The command line that repeats `run`.
std::string command_of(const Run& run) {
  const SimConfig& c = run.config;
  std::string cmd = fmt::format(
      "staging-sim --workload {} --seed {} --duration {}ns --strategy {} --policy {} "
      "--capacity {} --cap {} --frames-in-flight {} --bandwidth {} --poll-interval {}ns "
      "--wait-timeout {}ns --grow-step {} --trim-after {}ns --fallback-cap {} "
      "--split-min-chunk {}",
      run.workload, c.seed, c.duration.count(), to_string(c.strategy), policy_name(c.policy),
      c.capacity, c.cap, c.frames_in_flight, c.bandwidth, c.poll_interval.count(),
      c.wait_timeout.count(), c.grow_step, c.trim_after.count(), c.fallback_cap, c.split_min_chunk);
  if (c.delay) cmd += " --delay " + c.delay->text;
  for (const StallWindow& w : c.stalls)
    cmd += fmt::format(" --stall {}ns:{}ns", w.at.count(), w.length.count());
  if (c.fault != Fault::None) cmd += fmt::format(" --inject-fault {}", to_string(c.fault));
  return cmd;
}

// The process's resident bytes, after handing freed heap memory back to the system.
uint64_t resident_bytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

SoakResult soak(Duration wall, uint64_t seed, Fault fault,
                const std::function<void(uint64_t, uint64_t, uint64_t)>& progress) {
  using Clock = std::chrono::steady_clock;
  constexpr uint64_t kWarmUpRuns = 8;
  SoakResult s;
  const Clock::time_point start = Clock::now();
  const auto fail = [&](int status, std::string what, const Run& run) {
    s.failure = SoakResult::Failure{status, std::move(what), command_of(run)};
  };
  for (;;) {
    const Run run = draw_run(seed, s.runs, fault);
    const Workload w = *make_workload(run.workload, run.config.seed, run.config.duration);
    auto r = simulate(run.config, w);
    ++s.runs;
    if (!r) {
      fail(2, "refused: " + r.error(), run);
      break;
    }
    s.uploads += r->uploads;
    s.checks += r->checks;
    s.byte_checks += r->stamps_checked;
    if (!r->violations.empty()) {
      fail(1,
           fmt::format("{} invariant violation(s); the first: {}", r->violations.size(),
                       r->violations.front().message),
           run);
      break;
    }
    if (!r->stat_mismatches.empty()) {
      fail(3, "the ring's stats disagree with its events: " + r->stat_mismatches.front(), run);
      break;
    }
    if (HostMemory::live_bytes() != 0) {
      fail(4,
           fmt::format("{} of staging memory still mapped after the run",
                       format_bytes(HostMemory::live_bytes())),
           run);
      break;
    }
    if (s.runs == kWarmUpRuns) s.rss_start = resident_bytes();
    const Duration elapsed = Clock::now() - start;
    if (progress) progress(elapsed.count(), wall.count(), s.runs);
    if (elapsed >= wall) break;
  }
  s.rss_end = resident_bytes();
  if (s.rss_start == 0) s.rss_start = s.rss_end;  // fewer runs than the warm-up
  if (!s.failure && s.rss_end > s.rss_start + kSoakRssGrowth) {
    s.failure = SoakResult::Failure{
        4,
        fmt::format("resident memory grew from {} to {} (more than {})", format_bytes(s.rss_start),
                    format_bytes(s.rss_end), format_bytes(kSoakRssGrowth)),
        fmt::format("staging-sim --soak {}ns --seed {}", wall.count(), seed)};
  }
  return s;
}

std::string soak_text(const SoakResult& s, Duration wall, uint64_t seed) {
  std::string out = fmt::format(
      "staging-sim soak: {} of random workloads, strategies, policies and configurations from "
      "seed {}\n",
      format_duration(wall), seed);
  const auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<20} {}\n", label, value);
  };
  line("runs", format_count(s.runs));
  line("uploads", format_count(s.uploads));
  line("invariant checker",
       format_count(s.checks) + " reservations checked against the queue's true completion");
  line("byte checks",
       format_count(s.byte_checks) + " reservations verified after the GPU read them");
  line("resident memory", fmt::format("{} after {} runs, {} at the end (allowed: +{})",
                                      format_bytes(s.rss_start), std::min<uint64_t>(s.runs, 8),
                                      format_bytes(s.rss_end), format_bytes(kSoakRssGrowth)));
  if (!s.failure) return out + "  passed: no violation, no stats mismatch, no leak\n";
  return out + fmt::format("  FAILED at run {}: {}\n  repeat it with: {}\n", s.runs,
                           s.failure->what, s.failure->command);
}

}  // namespace staging::sim
