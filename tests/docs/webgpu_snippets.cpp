// The WebGPU code docs/webgpu.md shows, compiled with the project's warnings by the Emscripten
// sub-build (never run: each function is one snippet, its inputs the names the snippet uses). The
// marked regions are what the page shows, line for line (tests/docs/check_snippets.py checks it).
#include <cstdint>
#include <memory>
#include <utility>

#include "staging/webgpu/webgpu.hpp"

namespace docs {

void draw(WGPUCommandEncoder encoder);  // the program's own passes

inline void frame(WGPUDevice device, WGPUQueue queue, WGPUBuffer vertices, const void* data,
                  uint64_t vertex_bytes, WGPUTexture texture, const void* pixels) {
  // [snippet:frame]
  using namespace staging::webgpu;

  // Once: RingConfig{}, 3 slots, policy Fallback.
  std::unique_ptr<StagingRing> ring = StagingRing::create(device).value();

  // Each frame (requestAnimationFrame): a 64x64 RGBA8 tile and the vertex data.
  TextureUpload tile;
  tile.texture = texture;
  tile.extent = {64, 64, 1};
  tile.format = WGPUTextureFormat_RGBA8Unorm;
  const auto tile_layout = texture_layout(tile);
  const uint64_t pixel_bytes = tile_layout->packed_bytes;
  uint64_t needed = *upload_footprint(vertex_bytes, BUFFER_PLACEMENT_ALIGNMENT) +
                    *upload_footprint(tile_layout->copy_bytes, tile_layout->offset_alignment);
  StagingFrame frame = ring->begin(needed).value();       // a slot, or the fallback route
  frame.upload(vertices, 0, data, vertex_bytes).value();  // → Route::Ring / Route::Fallback
  frame.upload(tile, pixels, pixel_bytes).value();        // rows repacked to 256 B
  WGPUCommandEncoder encoder = wgpuDeviceCreateCommandEncoder(device, nullptr);
  draw(encoder);
  frame.finish(encoder).value();  // unmap + record the copies
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, nullptr);
  wgpuQueueSubmit(queue, 1, &commands);
  frame.submitted().value();  // ← the one extra call
  // [snippet-end]
  wgpuCommandBufferRelease(commands);
  wgpuCommandEncoderRelease(encoder);
}

}  // namespace docs
