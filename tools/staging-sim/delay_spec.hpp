// The GPU queue's delay model as the user writes it on the command line, e.g. "random:1ms:6ms".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "staging/testing/fake_queue.hpp"

namespace staging::sim {

/// A DelayModel of the fake queue (include/staging/testing/fake_queue.hpp) and its spelling:
///   fixed:D              every submission completes D after it is submitted
///   random:LO:HI         uniform in [LO, HI], seeded from --seed (same seed, same run)
///   bursty:FAST:SLOW:N   N submissions at FAST, then one at SLOW (holding back those behind it)
///   stalled              nothing ever completes (use --stall AT:FOR for a stall that ends)
struct DelaySpec {
  testing::DelayModel model;
  /// The canonical spelling, e.g. "random:1ms:6ms" (for summaries and JSON).
  std::string text;
};

/// Parses the spelling above; `seed` seeds random:. None (with `error` set) on a bad spelling.
[[nodiscard]] std::optional<DelaySpec> parse_delay(std::string_view text, uint64_t seed,
                                                   std::string* error);

}  // namespace staging::sim
