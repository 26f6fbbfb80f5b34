#include "sim_config.hpp"

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

}  // namespace staging::sim
