#include "delay_spec.hpp"

#include <vector>

#include "units.hpp"

namespace staging::sim {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? text.npos : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return parts;
}

}  // namespace

std::optional<DelaySpec> parse_delay(std::string_view text, uint64_t seed, std::string* error) {
  const std::vector<std::string_view> p = split(text, ':');
  const auto fail = [&](std::string why) -> std::optional<DelaySpec> {
    if (error != nullptr) *error = "bad delay model '" + std::string(text) + "': " + why;
    return std::nullopt;
  };
  const auto duration = [&](std::string_view s, Duration* out) {
    const std::optional<Duration> d = parse_duration(s);
    if (!d) return false;
    *out = *d;
    return true;
  };
  Duration a{0}, b{0};
  if (p[0] == "fixed") {
    if (p.size() != 2 || !duration(p[1], &a))
      return fail("expected fixed:DURATION, e.g. fixed:2ms");
    return DelaySpec{testing::DelayModel::fixed(a), "fixed:" + std::string(p[1])};
  }
  if (p[0] == "random") {
    if (p.size() != 3 || !duration(p[1], &a) || !duration(p[2], &b) || b < a) {
      return fail("expected random:LO:HI with LO <= HI, e.g. random:1ms:6ms");
    }
    return DelaySpec{testing::DelayModel::seeded_random(a, b, seed),
                     "random:" + std::string(p[1]) + ":" + std::string(p[2])};
  }
  if (p[0] == "bursty") {
    const std::optional<uint64_t> n = p.size() == 4 && p[3].find('.') == p[3].npos
                                          ? parse_scaled(p[3], 1, UINT32_MAX, false)
                                          : std::nullopt;
    if (p.size() != 4 || !duration(p[1], &a) || !duration(p[2], &b) || !n) {
      return fail("expected bursty:FAST:SLOW:N, e.g. bursty:1ms:30ms:8");
    }
    return DelaySpec{
        testing::DelayModel::bursty(a, b, static_cast<uint32_t>(*n)),
        "bursty:" + std::string(p[1]) + ":" + std::string(p[2]) + ":" + std::string(p[3])};
  }
  if (p[0] == "stalled") {
    if (p.size() != 1) return fail("'stalled' takes no arguments (see --stall AT:FOR)");
    return DelaySpec{testing::DelayModel::stalled(), "stalled"};
  }
  return fail("the model is one of fixed, random, bursty, stalled");
}

}  // namespace staging::sim
