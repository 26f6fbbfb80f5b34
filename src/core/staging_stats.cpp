#include "staging/core/staging_stats.hpp"

#include <cinttypes>
#include <cstdio>
#include <string_view>

namespace staging {

std::string format_stats(const StagingStats& s) {
  const struct {
    std::string_view name;
    uint64_t value;
  } rows[] = {
      {"frames begun", s.frames_begun},
      {"frames finished", s.frames_finished},
      {"placements", s.placements},
      {"bytes placed", s.bytes_placed},
      {"placements refused", s.placements_refused},
      {"slots created", s.slots_created},
      {"slots grown", s.slots_grown},
      {"slots replaced", s.slots_replaced},
      {"abandoned slots seen", s.abandoned_seen},
      {"failed slots seen", s.failed_seen},
      {"refusals: too large", s.refusals_too_large},
      {"refusals: all in flight", s.refusals_all_in_flight},
      {"refusals: allocation failed", s.refusals_allocation_failed},
      {"polls", s.polls},
      {"bytes allocated", s.bytes_allocated},
      {"peak bytes allocated", s.peak_bytes_allocated},
  };
  std::string out;
  char line[96];
  for (const auto& row : rows) {
    std::string dots(30 - row.name.size(), '.');
    std::snprintf(line, sizeof line, "  %.*s %s %12" PRIu64 "\n", static_cast<int>(row.name.size()),
                  row.name.data(), dots.c_str(), row.value);
    out += line;
  }
  return out;
}

}  // namespace staging
