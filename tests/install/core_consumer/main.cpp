// Links staging::core alone from the installed package (no GPU SDK needed): a slot ring's
// configuration checked by the library, and a state name from it.
#include <cstdio>
#include <staging/core.hpp>
#include <string>

int main() {
  const auto checked = staging::validate(staging::StagingRingConfig{});
  const std::string ready(staging::to_string(staging::SlotState::Ready));
  const std::string refused(
      staging::to_string(staging::validate(staging::StagingRingConfig{.slots = 0}).error()));
  std::printf("core consumer: default slot ring %s, slots = 0 is %s, a slot's state: %s\n",
              checked ? "valid" : "invalid", refused.c_str(), ready.c_str());
  return checked && refused == "NoSlots" && ready == "Ready" ? 0 : 1;
}
