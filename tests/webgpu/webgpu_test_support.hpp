// Helpers for the browser tests: the page's device, waiting on the browser's event loop (the
// tests are built with ASYNCIFY, so a test can sleep while map callbacks run), MAP_READ
// readback of buffers and textures, random bytes, and a tracker that shows which slot states
// were reached and recovered from.
#pragma once

#include <webgpu/webgpu.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "staging/webgpu/webgpu.hpp"

namespace staging::webgpu::test {

/// The device the page handed over (Module.preinitializedWebGPUDevice); null when none.
WGPUDevice device();

/// Returns to the browser's event loop for about `ms` milliseconds (callbacks run meanwhile).
void pump(int ms = 0);
/// Pumps until `done()` is true or `timeout_ms` passed; returns done().
bool wait_until(const std::function<bool()>& done, int timeout_ms = 5000);

/// `n` random bytes from `seed` (never all zeros).
std::vector<std::byte> random_bytes(std::size_t n, uint32_t seed);

/// A buffer of `size` bytes with `usage`; a texture (2D) with `format`, COPY_SRC | COPY_DST.
WGPUBuffer make_buffer(uint64_t size, WGPUBufferUsageFlags usage);
WGPUTexture make_texture(uint32_t width, uint32_t height, uint32_t layers, WGPUTextureFormat format,
                         uint32_t mip_levels = 1);

/// A fresh command encoder, and finish + submit + release of one.
WGPUCommandEncoder make_encoder();
void submit(WGPUCommandEncoder encoder);

/// Every byte of `buffer` (COPY_SRC) in [offset, offset + size), read through a MAP_READ buffer.
/// Waits on the event loop; empty on failure.
std::vector<std::byte> read_buffer(WGPUBuffer buffer, uint64_t offset, uint64_t size);
/// A texture region's texels, tightly packed (the inverse of StagingFrame::upload to a texture),
/// read through a MAP_READ buffer with 256-byte rows.
std::vector<std::byte> read_texture(const TextureUpload& region);

/// "[Ready 64K] [InFlight 128K] [Empty]".
std::string describe(const StagingRing& ring);

/// Watches slot states over many observations: which states each slot reached and whether it
/// then came back to Ready. print() lists every state with the first time it was reached and
/// recovered from.
class StateTracker {
 public:
  /// Records the ring's slot states now; `step` labels the observation (e.g. a frame number).
  void observe(const StagingRing& ring, const std::string& step);
  /// True when some slot reached `state`, and (for states other than Ready) later was Ready.
  [[nodiscard]] bool reached(SlotState state) const;
  [[nodiscard]] bool recovered(SlotState state) const;
  /// One line per state: "Abandoned  reached at frame 7 (slot 1), recovered at frame 9".
  void print() const;

 private:
  struct Seen {
    std::string reached_at;
    std::string recovered_at;
  };
  Seen seen_[6];
  std::vector<std::vector<SlotState>> pending_;  // per slot: states since its last Ready
};

}  // namespace staging::webgpu::test
