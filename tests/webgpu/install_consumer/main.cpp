// Links staging::webgpu from an installed package: makes a ring on the page's device (when
// there is one) and prints its slot count. Built, not run, by webgpu.install_consumer.
#include <emscripten/html5_webgpu.h>

#include <cstdio>

#include "staging/webgpu/webgpu.hpp"

int main() {
  WGPUDevice device = emscripten_webgpu_get_device();
  if (device == nullptr) return 1;
  auto ring = staging::webgpu::StagingRing::create(device);
  if (!ring) return 1;
  std::printf("slots: %zu\n", (*ring)->slot_count());
  return 0;
}
