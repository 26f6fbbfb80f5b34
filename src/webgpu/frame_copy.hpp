// FrameCopy: one copy a webgpu::StagingFrame records into its encoder at finish().
#pragma once

#include <webgpu/webgpu.h>

#include <cstdint>

#include "staging/webgpu/staging_ring.hpp"

namespace staging::webgpu {

struct FrameCopy {
  uint64_t src_offset = 0;
  WGPUBuffer dst_buffer = nullptr;  // buffer copy when set, texture copy otherwise
  uint64_t dst_offset = 0;
  uint64_t size = 0;
  TextureUpload texture{};
  uint32_t bytes_per_row = 0;
  uint32_t rows_per_image = 0;
};

}  // namespace staging::webgpu
