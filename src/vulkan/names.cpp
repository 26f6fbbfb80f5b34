// RetirementPoint::signal_info and format_stats (the counters and enum names themselves are
// listed once, beside their types).

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
  std::string out = s.strategy == Strategy::Slots ? "slot ring:\n" + format_stats(s.slot_ring)
                                                  : "byte ring:\n" + format_stats(s.byte_ring);
  Stats own = s;  // the Vulkan side alone: the rings' groups zeroed, then left out
  own.slot_ring = {};
  own.byte_ring = {};
  out += "vulkan:\n";
  for_each_counter(own, [&](const CounterInfo& info, uint64_t value) {
    if (info.group.empty()) staging::detail::append_counter_row(out, info.title(), value);
  });
  return out;
}

}  // namespace staging::vulkan
