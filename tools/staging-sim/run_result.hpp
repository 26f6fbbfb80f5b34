// RunResult: everything one simulation run measured — counters, the cause of every block, the
// invariant checker's verdict and (when recorded) the timeline the trace and the plot are drawn
// from. Plain data, filled by the simulator (simulator.hpp), read by the reports.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim_config.hpp"
#include "sim_queue.hpp"
#include "staging/core/byte_ring.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/detail/core/invariant_checker.hpp"

namespace staging::sim {

/// Counts per BlockCause (InFlight, Fragmentation, Cap).
struct CauseCounts {
  std::array<uint64_t, 3> by_cause{};
  void add(BlockCause cause) { ++by_cause[static_cast<std::size_t>(cause)]; }
  [[nodiscard]] uint64_t total() const noexcept { return by_cause[0] + by_cause[1] + by_cause[2]; }
  [[nodiscard]] uint64_t operator[](BlockCause cause) const noexcept {
    return by_cause[static_cast<std::size_t>(cause)];
  }
};

/// One reservation's life (a slot-ring placement counts as one): a span in the trace.
struct Span {
  /// The placement as made: the byte ring's Reservation, or the slot ring's placement in its
  /// form (region: the slot buffer's id; owner: the upload's kind).
  Reservation placed;
  /// The trace's track. Byte: the region. Slot: the slot index.
  uint32_t track = 0;
  /// Bytes charged to it (padding, skipped tail, payload; a fallback: its region).
  uint64_t charged = 0;
  /// What the caller asked for in the call that placed it (> placed.size for a Split chunk).
  uint64_t asked = 0;
  uint32_t kind = 0;
  int64_t frame = -1;
  ExhaustionPolicy policy = ExhaustionPolicy::Defer;
  Duration begin{0};
  /// When its bytes were reclaimed; none when never (the run ended first).
  std::optional<Duration> end;
};

/// Something the policy did, or a refusal: one marker in the trace and the plot.
enum class MarkKind : uint8_t {
  Wait,        ///< the ring (or, slot ring, the caller) waited on the queue; has a duration
  WouldBlock,  ///< a WouldBlock answer (Defer, or Grow/Fallback at their caps)
  Split,       ///< a chunk smaller than asked was placed
  Fallback,    ///< a dedicated fallback region was created (byte ring)
  Grow,        ///< a region was added (byte ring) or a slot buffer grown/created (slot ring)
  Trim,        ///< an idle grown region was released
  Wrap,        ///< a reservation wrapped to the region's start, skipping its tail
  Timeout,     ///< a Wait/Split reservation timed out
  CapRefusal,  ///< the cap refused a request (permanently or for now)
  Direct,      ///< the caller routed an upload around the ring (refused for good, or gave up)
  Pacing,      ///< the CPU waited for frame f - frames_in_flight - 1 (frame pacing, not the ring)
};
/// Names of MarkKind's values, as the trace shows them (to_string).
constexpr auto enum_names(std::type_identity<MarkKind>) noexcept {
  return std::to_array<std::string_view>({"wait", "would-block", "split", "fallback", "grow",
                                          "trim", "wrap", "timeout", "cap refusal", "direct",
                                          "frame pacing"});
}

struct Mark {
  Duration time{0};
  /// Wait and Pacing: how long.
  Duration duration{0};
  MarkKind kind = MarkKind::Wait;
  BlockCause cause = BlockCause::InFlight;
  /// Bytes involved: needed (wait, would-block), placed chunk (split), region bytes (grow, trim,
  /// fallback), skipped bytes (wrap), payload routed around (direct).
  uint64_t bytes = 0;
  /// Reservation id, where there is one.
  uint64_t id = 0;
  /// The token waited for / oldest pending, where there is one.
  TimelineValue token = 0;
  uint32_t region = 0;
  uint32_t kind_index = 0;
  /// Wait: timed out. CapRefusal: permanent.
  bool flag = false;
};

/// Held bytes (all regions / slot buffers) and bytes in flight (charged to reservations not yet
/// reclaimed), from `time` until the next sample.
struct Sample {
  Duration time{0};
  uint64_t held = 0;
  uint64_t in_flight = 0;
};

/// Per upload kind.
struct KindStats {
  std::string name;
  uint64_t uploads = 0;
  uint64_t bytes = 0;
  uint64_t direct = 0;
};

struct RunResult {
  // --- what ran ---
  SimConfig config;
  std::string workload;
  std::string workload_description;
  std::string delay;  // the delay model's spelling
  uint64_t capacity = 0;
  uint64_t cap = 0;
  /// Slot: slots and each one's ceiling.
  uint64_t slots = 0;
  uint64_t max_slot_bytes = 0;

  // --- the workload as run ---
  uint64_t uploads = 0;
  uint64_t upload_bytes = 0;
  uint64_t frames = 0;
  uint64_t streaming_uploads = 0;
  Duration first_arrival{0};
  Duration last_arrival{0};
  /// When the last submission completed (the run's end; none when the queue never drained).
  Duration end{0};
  bool drained = true;

  // --- what the ring and the caller did ---
  uint64_t reservations = 0;
  uint64_t bytes_reserved = 0;
  uint64_t submissions = 0;
  /// Submissions made before a frame's end, so that the ring could wait on them.
  uint64_t early_flushes = 0;
  uint64_t wraps = 0;
  uint64_t bytes_skipped = 0;
  uint64_t grows = 0;
  uint64_t trims = 0;
  uint64_t fallbacks = 0;
  uint64_t fallback_bytes = 0;
  uint64_t timeouts = 0;
  uint64_t cap_refusals = 0;
  /// Uploads (or remainders) the caller sent by another route (TooLarge, a refused frame, or
  /// a queue that would never free the bytes): their count and bytes.
  uint64_t direct = 0;
  uint64_t direct_bytes = 0;
  /// The ring's waits (Wait, Split; slot ring: the caller's waits for a slot).
  uint64_t waits = 0;
  Duration wait_total{0};
  Duration wait_longest{0};
  /// Frame pacing (frames in flight), not the ring's doing.
  uint64_t pacing_waits = 0;
  Duration pacing_total{0};
  Duration pacing_longest{0};
  /// From an upload's arrival to its last byte placed (or routed around): what the caller felt.
  Duration delay_total{0};
  Duration delay_max{0};
  uint64_t delayed_uploads = 0;
  /// From an upload's arrival to the GPU completing the copy of its last byte (through the ring
  /// or, routed around it, in a submission of its own).
  Duration latency_total{0};
  Duration latency_max{0};
  /// Time during which some upload had arrived and was not yet complete on the GPU.
  Duration busy{0};

  CauseCounts would_block_causes;
  CauseCounts wait_causes;
  CauseCounts split_causes;
  CauseCounts fallback_causes;
  CauseCounts timeout_causes;
  CauseCounts grow_causes;
  CauseCounts direct_causes;

  uint64_t peak_held = 0;
  uint64_t peak_in_flight = 0;

  // --- the checks ---
  uint64_t checks = 0;
  uint64_t stamps_checked = 0;
  uint64_t stamps_corrupted = 0;
  std::vector<Violation> violations;
  std::array<uint64_t, 5> violations_by_invariant{};
  /// Where the simulator's own counts disagree with the ring's stats (a bookkeeping bug).
  std::vector<std::string> stat_mismatches;

  // --- the core's own stats ---
  std::optional<ByteRingStats> byte_stats;
  std::optional<StagingStats> slot_stats;

  std::vector<KindStats> kinds;

  // --- the timeline (config.record_timeline) ---
  std::vector<Span> spans;
  std::vector<Mark> marks;
  std::vector<Sample> samples;
  std::vector<Submission> queue_log;
  std::vector<StallWindow> stalls;

  /// Violations of any invariant.
  [[nodiscard]] uint64_t invariant_violations() const noexcept { return violations.size(); }
  /// Simulated throughput: payload bytes uploaded (through the ring or routed around) per second
  /// of busy time — how fast the pipeline drains work while there is work (0 when never busy).
  [[nodiscard]] double throughput_mib_s() const noexcept;
  /// Makespan: first arrival to end.
  [[nodiscard]] Duration makespan() const noexcept { return end - first_arrival; }
};

/// A run's cause counts in report order: the JSON key (under "causes"), the summary's label.
struct CauseTable {
  std::string_view key;
  std::string_view label;
  CauseCounts RunResult::*counts;
};
inline constexpr CauseTable kCauseTables[] = {
    {"would_block", "would-block", &RunResult::would_block_causes},
    {"wait", "wait", &RunResult::wait_causes},
    {"timeout", "timeout", &RunResult::timeout_causes},
    {"split", "split", &RunResult::split_causes},
    {"grow", "grow", &RunResult::grow_causes},
    {"fallback", "fallback", &RunResult::fallback_causes},
    {"direct", "direct", &RunResult::direct_causes},
};

}  // namespace staging::sim
