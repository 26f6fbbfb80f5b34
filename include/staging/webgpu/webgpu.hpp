// staging::webgpu — the slot ring on the WebGPU C API (Emscripten, in the browser).
// See docs/webgpu.md.
#pragma once

#include "staging/webgpu/staging_ring.hpp"
