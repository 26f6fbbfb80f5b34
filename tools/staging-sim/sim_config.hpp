// What one simulation run is configured with (the command line's options, resolved).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "delay_spec.hpp"
#include "staging/core/byte_ring.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "upload.hpp"

namespace staging::sim {

/// Which core allocator runs the workload.
enum class Strategy : uint8_t {
  /// ByteRing (byte_ring.hpp): one region, FIFO reservations, any ExhaustionPolicy.
  Byte,
  /// StagingRing (staging_ring.hpp): frames_in_flight + 1 slots, one frame per slot.
  Slot,
};
/// Names of Strategy's values, as on the command line (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<Strategy>) noexcept {
  return std::to_array<std::string_view>({"byte", "slot"});
}

/// A fault planted on purpose, to prove the checker catches it (a self-check, never a default).
enum class Fault : uint8_t {
  None,
  /// The queue tells the ring that one more submission has completed than really has: the ring
  /// reclaims one reservation early, while the GPU may still read it (I3, then I1).
  EarlyCompletion,
};
/// Names of Fault's values, as on the command line (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<Fault>) noexcept {
  return std::to_array<std::string_view>({"none", "early-completion"});
}

/// "defer", "wait", "split", "grow", "fallback": the policy's name in lower case, as on the
/// command line.
[[nodiscard]] std::string policy_name(ExhaustionPolicy policy);
/// The policy named by policy_name(), or none.
[[nodiscard]] std::optional<ExhaustionPolicy> parse_policy(std::string_view text);
/// "byte/split": a strategy and a policy, as the policy table names its rows.
[[nodiscard]] std::string label(Strategy strategy, ExhaustionPolicy policy);
/// The policies a strategy supports: every one for Byte; fallback, wait and defer for Slot (a
/// refused frame takes the other route, waits for a slot, or comes back later).
[[nodiscard]] bool supports(Strategy strategy, ExhaustionPolicy policy) noexcept;

struct SimConfig {
  Strategy strategy = Strategy::Byte;
  ExhaustionPolicy policy = ExhaustionPolicy::Wait;
  /// Byte: region 0's bytes. Slot: the bytes all slots together may reach (each slot's ceiling is
  /// the largest power of two <= capacity / slots).
  uint64_t capacity = uint64_t{32} << 20;
  /// Hard cap on all staging bytes (I5); 0 means 2 x capacity.
  uint64_t cap = 0;
  /// Frames that may be queued on the GPU while the CPU records the next one: before frame f
  /// starts, frame f - N - 1 has completed (the swapchain's frame latency). 0 means no pacing.
  /// The slot ring gets N + 1 slots (STAGING_SLOTS = 3: two in flight plus the one being recorded).
  uint32_t frames_in_flight = 2;
  /// The queue's delay model; none means the workload's default.
  std::optional<DelaySpec> delay;
  /// Copy-engine bandwidth in bytes per second (SimQueue): a submission also takes its bytes /
  /// bandwidth, one submission at a time. 0: no copy-time model.
  uint64_t bandwidth = uint64_t{16} << 30;
  uint64_t seed = 1;
  /// The caller polls the ring (retires what completed) before every upload and, between uploads,
  /// at least this often — an engine's per-frame tick. 0: only before uploads.
  Duration poll_interval = std::chrono::microseconds(16667);
  /// How long the workload runs (virtual time); built-in workloads only.
  Duration duration = std::chrono::seconds(10);
  /// ByteRingConfig knobs (0 / defaults as there).
  Duration wait_timeout = std::chrono::milliseconds(100);
  uint64_t grow_step = 0;
  Duration trim_after = std::chrono::seconds(1);
  uint64_t fallback_cap = 0;
  uint64_t split_min_chunk = 0;
  /// Extra stall windows, on top of the workload's.
  std::vector<StallWindow> stalls;
  Fault fault = Fault::None;
  /// Keep every span, mark and sample (needed by --trace and --plot; costs memory).
  bool record_timeline = true;

  /// cap, with 0 resolved (2 x capacity, at most UINT64_MAX).
  [[nodiscard]] uint64_t effective_cap() const noexcept {
    return cap != 0 ? cap : capacity > UINT64_MAX / 2 ? UINT64_MAX : 2 * capacity;
  }
};

/// The most staging memory a run may hold (the cap): 16 GiB. Every staging byte is real host
/// memory, written and checked.
inline constexpr uint64_t kMaxStagingBytes = uint64_t{16} << 30;
/// The most frames in flight (the slot ring has one slot more).
inline constexpr uint32_t kMaxFramesInFlight = 1024;
/// The longest --duration of a built-in workload: one hour (1,000-2,000 uploads a second).
inline constexpr Duration kMaxWorkloadDuration = std::chrono::hours(1);

/// What is wrong with `config` (the first thing found), or none: a zero capacity, a cap below the
/// capacity or above kMaxStagingBytes, a fallback cap above the cap, frames in flight or a
/// duration above their limits, a policy the strategy does not support.
[[nodiscard]] std::optional<std::string> config_error(const SimConfig& config);

}  // namespace staging::sim
