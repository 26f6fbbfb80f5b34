// Links staging::vulkan from an installed package; needs no device.
#include <cstdio>
#include <staging/vulkan.hpp>

int main() {
  const unsigned long long leaked = staging::vulkan::rings_leaked();  // defined in the library
  const staging::vulkan::Dispatch none;  // an empty table names what is missing
  std::printf("rings leaked: %llu; empty dispatch misses %s\n", leaked,
              std::string(none.missing()).c_str());
  return leaked == 0 && !none.missing().empty() ? 0 : 1;
}
