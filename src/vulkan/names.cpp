// format_stats (the counters and enum names themselves are listed once, beside their types).

#include <algorithm>
#include <variant>
#include <vector>

#include "staging/vulkan/ring.hpp"

namespace staging::vulkan {

std::string format_stats(const Stats& s) {
  const bool slots = std::holds_alternative<StagingStats>(s.strategy);
  const std::vector<CounterRow> ring =
      std::visit([](const auto& counters) { return counter_rows(counters); }, s.strategy);
  std::vector<CounterRow> vulkan;  // the Vulkan side (the strategy is not a counter of Stats)
  for_each_counter(s, [&](const CounterInfo& info, uint64_t value) {
    vulkan.push_back(CounterRow{info.title(), value});
  });
  // One column for both tables, so that their values line up.
  const std::size_t column = std::max(counter_title_column(ring), counter_title_column(vulkan));
  return (slots ? "slot ring:\n" : "byte ring:\n") + format_counter_rows(ring, column) +
         "vulkan:\n" + format_counter_rows(vulkan, column);
}

}  // namespace staging::vulkan
