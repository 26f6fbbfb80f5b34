#include "sim_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "units.hpp"

namespace staging::sim {

std::string policy_name(ExhaustionPolicy policy) {
  std::string name(to_string(policy));
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return name;
}

std::optional<ExhaustionPolicy> parse_policy(std::string_view text) {
  for (std::size_t i = 0; i < enum_count<ExhaustionPolicy>; ++i) {
    if (text == policy_name(static_cast<ExhaustionPolicy>(i))) {
      return static_cast<ExhaustionPolicy>(i);
    }
  }
  return std::nullopt;
}

std::string label(Strategy strategy, ExhaustionPolicy policy) {
  return fmt::format("{}/{}", to_string(strategy), policy_name(policy));
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
