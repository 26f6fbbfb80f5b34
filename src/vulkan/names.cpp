// RetirementPoint::signal_info and format_stats (the counters and enum names themselves are
// listed once, beside their types).

#include <algorithm>
#include <vector>

#include "staging/vulkan/ring.hpp"

namespace staging::vulkan {

VkSemaphoreSubmitInfo RetirementPoint::signal_info(VkPipelineStageFlags2 stages) const noexcept {
  return VkSemaphoreSubmitInfo{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
      .semaphore = semaphore,
      .value = value,
      .stageMask = stages,
      .deviceIndex = 0,
  };
}

std::string format_stats(const Stats& s) {
  const bool slots = s.strategy == Strategy::Slots;
  const std::vector<CounterRow> ring =
      slots ? counter_rows(s.slot_ring) : counter_rows(s.byte_ring);
  Stats own = s;  // the Vulkan side alone: the rings' groups zeroed, then left out
  own.slot_ring = {};
  own.byte_ring = {};
  std::vector<CounterRow> vulkan;
  for_each_counter(own, [&](const CounterInfo& info, uint64_t value) {
    if (info.group.empty()) vulkan.push_back(CounterRow{info.title(), value});
  });
  // One column for both tables, so that their values line up.
  const std::size_t column = std::max(counter_title_column(ring), counter_title_column(vulkan));
  return (slots ? "slot ring:\n" : "byte ring:\n") + format_counter_rows(ring, column) +
         "vulkan:\n" + format_counter_rows(vulkan, column);
}

}  // namespace staging::vulkan
