// Links staging::core alone from the installed package (no GPU SDK needed): alignment arithmetic
// from the headers and a state name from the library.
#include <cstdio>
#include <staging/core.hpp>
#include <string>

int main() {
  const std::optional<uint64_t> aligned = staging::align_up(1000, 256);
  const std::string ready(staging::to_string(staging::SlotState::Ready));
  std::printf("core consumer: align_up(1000, 256) = %llu, a slot's state: %s\n",
              static_cast<unsigned long long>(aligned.value_or(0)), ready.c_str());
  return aligned == 1024u && ready == "Ready" ? 0 : 1;
}
