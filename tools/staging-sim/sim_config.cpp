#include "sim_config.hpp"

#include <fmt/format.h>

#include "units.hpp"

namespace staging::sim {

std::string_view to_string(Strategy strategy) noexcept {
  return strategy == Strategy::Byte ? "byte" : "slot";
}

std::optional<Strategy> parse_strategy(std::string_view text) noexcept {
  if (text == "byte") return Strategy::Byte;
  if (text == "slot") return Strategy::Slot;
  return std::nullopt;
}

std::string_view policy_name(ExhaustionPolicy policy) noexcept {
  switch (policy) {
    case ExhaustionPolicy::Defer:
      return "defer";
    case ExhaustionPolicy::Wait:
      return "wait";
    case ExhaustionPolicy::Split:
      return "split";
    case ExhaustionPolicy::Grow:
      return "grow";
    case ExhaustionPolicy::Fallback:
      return "fallback";
  }
  return "?";
}

std::optional<ExhaustionPolicy> parse_policy(std::string_view text) noexcept {
  for (ExhaustionPolicy p :
       {ExhaustionPolicy::Defer, ExhaustionPolicy::Wait, ExhaustionPolicy::Split,
        ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback}) {
    if (text == policy_name(p)) return p;
  }
  return std::nullopt;
}

bool supports(Strategy strategy, ExhaustionPolicy policy) noexcept {
  if (strategy == Strategy::Byte) return true;
  return policy == ExhaustionPolicy::Fallback || policy == ExhaustionPolicy::Wait ||
         policy == ExhaustionPolicy::Defer;
}

std::optional<std::string> config_error(const SimConfig& c) {
  if (c.capacity == 0) return "the capacity must be > 0";
  if (c.effective_cap() < c.capacity) return "the cap must be >= the capacity";
  if (c.effective_cap() > kMaxStagingBytes) {
    return fmt::format(
        "the cap ({}, 2 x capacity unless --cap says) is above {}: staging memory "
        "is real host memory here",
        format_bytes(c.effective_cap()), format_bytes(kMaxStagingBytes));
  }
  if (c.fallback_cap > c.effective_cap()) return "the fallback cap must be <= the cap";
  if (c.frames_in_flight > kMaxFramesInFlight) {
    return fmt::format("at most {} frames in flight", kMaxFramesInFlight);
  }
  if (c.duration > kMaxWorkloadDuration || c.duration < Duration{0}) {
    return std::string("--duration: a built-in workload runs at most 1 hour");
  }
  if (!supports(c.strategy, c.policy)) {
    return fmt::format(
        "the {} strategy does not support the {} policy (slot: fallback, wait, defer)",
        to_string(c.strategy), policy_name(c.policy));
  }
  return std::nullopt;
}

}  // namespace staging::sim
