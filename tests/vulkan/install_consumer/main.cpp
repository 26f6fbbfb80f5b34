// Links staging::vulkan from an installed package; needs no device.
#include <cstdio>
#include <staging/vulkan.hpp>

int main() {
  const auto block = staging::vulkan::texel_block(VK_FORMAT_BC7_UNORM_BLOCK).value();
  const staging::vulkan::Dispatch none;  // an empty table names what is missing
  std::printf("BC7 block: %u bytes, %ux%u; empty dispatch misses %s\n", block.bytes, block.width,
              block.height, std::string(none.missing()).c_str());
  return block.bytes == 16 && !none.missing().empty() ? 0 : 1;
}
