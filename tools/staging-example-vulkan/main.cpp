// staging-example-vulkan: uploads through staging::vulkan on a real device. Each frame uploads a
// vertex buffer and a texture (frame 1: the whole mip chain; later frames: a 64x64 tile written in
// place) into the caller's command buffer, submits it signalling the ring's retirement point, then
// reads both back and checks every byte. Prints the device, each frame, the check and the ring's
// stats. Exit status: 0 every byte right, 1 a mismatch or a validation finding (or an unexpected
// error), 2 a usage error, 77 no device. (Instance, device and readback boilerplate:
// example_device.cpp.)
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cli.hpp"
#include "example_device.hpp"
#include "exception_exit.hpp"
#include "staging/vulkan.hpp"

namespace {

constexpr uint64_t kVertexBytes = 48 * 1024;
constexpr uint32_t kSize = 256;  // the texture: 256x256 RGBA8, 9 mip levels
constexpr uint32_t kMips = 9;
constexpr uint32_t kTexel = 4;
constexpr uint32_t kTile = 64;
constexpr int kFrames = 4;

uint32_t mip_size(uint32_t mip) {
  return std::max(1u, kSize >> mip);
}

void fill(std::mt19937_64& rng, std::byte* out, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    out[i] = static_cast<std::byte>(rng());
}

// The frames' destinations and what they must hold, and the buffer the checks read back into.
struct Resources {
  example::Buffer vertices;
  example::Image texture;
  std::vector<std::vector<std::byte>> mips;  // what the texture must hold, per level
  uint64_t texture_bytes = 0;
  example::Buffer readback;
  std::vector<std::byte> vertex_data;
};

Resources make_resources(example::Device& vk) {
  Resources r;
  r.vertices = vk.make_buffer(kVertexBytes,
                              VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                  VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                              false);
  r.texture = vk.make_texture(VK_FORMAT_R8G8B8A8_UNORM, kSize, kSize, kMips);
  r.mips.resize(kMips);
  for (uint32_t m = 0; m < kMips; ++m) {
    r.mips[m].resize(uint64_t{mip_size(m)} * mip_size(m) * kTexel);
    r.texture_bytes += r.mips[m].size();
  }
  r.readback =
      vk.make_buffer(kVertexBytes + r.texture_bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
  r.vertex_data.resize(kVertexBytes);
  return r;
}

void destroy(example::Device& vk, Resources& r) {
  vk.destroy(r.vertices);
  vk.destroy(r.texture);
  vk.destroy(r.readback);
}

// Frame n's texture upload: frame 1 the whole mip chain (from UNDEFINED to SHADER_READ_ONLY),
// later frames a 64x64 tile of level 0 written straight into staging memory; `mips` is updated
// to what the texture must now hold.
void upload_texture(staging::vulkan::StagingFrame& frame, int n, std::mt19937_64& rng,
                    const example::Image& texture, std::vector<std::vector<std::byte>>& mips) {
  // [snippet:texture]
  if (n == 1) {  // the whole mip chain, from UNDEFINED to SHADER_READ_ONLY
    for (uint32_t m = 0; m < kMips; ++m) {
      fill(rng, mips[m].data(), mips[m].size());
      const staging::vulkan::ImageRegion level{.image = texture.image,
                                               .format = VK_FORMAT_R8G8B8A8_UNORM,
                                               .mip_level = m,
                                               .extent = {mip_size(m), mip_size(m), 1},
                                               .old_layout = VK_IMAGE_LAYOUT_UNDEFINED};
      frame.upload(level, mips[m]).value();
    }
  } else {  // a 64x64 tile of level 0, written straight into staging memory
    const int32_t x = static_cast<int32_t>(rng() % (kSize / kTile) * kTile);
    const int32_t y = static_cast<int32_t>(rng() % (kSize / kTile) * kTile);
    const staging::vulkan::ImageRegion tile{.image = texture.image,
                                            .format = VK_FORMAT_R8G8B8A8_UNORM,
                                            .offset = {x, y, 0},
                                            .extent = {kTile, kTile, 1},
                                            .old_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    staging::InPlacePiece span = frame.reserve(tile).value();
    for (uint32_t row = 0; row < span.rows; ++row) {
      std::byte* dst = span.bytes.data() + row * span.row_pitch;
      fill(rng, dst, span.row_bytes);  // the row, written in place
      // (and what the texture must now hold, for the byte check below)
      std::memcpy(mips[0].data() + ((y + row) * kSize + x) * kTexel, dst, span.row_bytes);
    }
  }
  // [snippet-end]
}

// Frame n's uploads, recorded into cmd: the vertex buffer (new random bytes already in
// r.vertex_data) and the texture (upload_texture). Returns what the frame's submission signals.
VkSemaphoreSubmitInfo record_frame(staging::vulkan::Ring& ring, VkCommandBuffer cmd, int n,
                                   std::mt19937_64& rng, Resources& r) {
  const example::Buffer& vertices = r.vertices;
  const std::vector<std::byte>& vertex_data = r.vertex_data;
  // [snippet:frame]
  // 1. A frame on our command buffer; its staging slot is sized by what recent frames asked for.
  staging::vulkan::StagingFrame frame = ring.begin(cmd).value();

  // 2. The uploads, copied into staging memory now (or written there in place).
  frame.upload(vertices.buffer, 0, vertex_data).value();
  upload_texture(frame, n, rng, r.texture, r.mips);

  // 3. Finish: the copies and one barrier into `cmd`, visible to vertex input and the fragment
  //    shader (later frames also name who used the destinations before them: last frame's
  //    draws, and here the checking copies). Our submission signals what it returns.
  const VkPipelineStageFlags2 users =
      VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT;
  const VkSemaphoreSubmitInfo signal =
      frame
          .finish({.stages = users,
                   .access =
                       VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT | VK_ACCESS_2_SHADER_SAMPLED_READ_BIT,
                   .prior_stages = n == 1 ? 0 : users | VK_PIPELINE_STAGE_2_COPY_BIT})
          .value();
  // [snippet-end]
  return signal;
}

// The check: every byte read back equals what was uploaded.
bool read_back_equal(const Resources& r) {
  bool equal = std::memcmp(r.readback.mapped, r.vertex_data.data(), kVertexBytes) == 0;
  uint64_t at = kVertexBytes;
  for (uint32_t m = 0; m < kMips; ++m) {
    equal = equal && std::memcmp(r.readback.mapped + at, r.mips[m].data(), r.mips[m].size()) == 0;
    at += r.mips[m].size();
  }
  return equal;
}

// Frame n: its uploads and the checking copies submitted, waited for and checked byte for byte.
// Whether every byte was right; nothing (after a message) when its point was not reached.
std::optional<bool> run_frame(example::Device& vk, staging::vulkan::Ring& ring, int n,
                              std::mt19937_64& rng, Resources& r) {
  VkCommandBuffer cmd = vk.begin_commands();
  fill(rng, r.vertex_data.data(), r.vertex_data.size());
  const VkSemaphoreSubmitInfo signal = record_frame(ring, cmd, n, rng, r);
  vk.record_readback(cmd, r.vertices.buffer, kVertexBytes, r.readback.buffer);  // for the check
  vk.record_texture_readback(cmd, r.texture.image, kSize, kSize, kMips, kTexel, r.readback.buffer,
                             kVertexBytes);
  vk.submit(cmd, signal);

  // Once the semaphore reaches the value, the ring reuses the frame's staging memory (a renderer
  // does not wait; the example does, to read the destinations back).
  const staging::vulkan::RetirementPoint done{signal.semaphore, signal.value};
  if (!ring.wait(done, std::chrono::seconds(10))) {
    std::printf("frame %d: point %" PRIu64 " not reached\n", n, done.value);
    return std::nullopt;
  }
  vk.free_commands(cmd);

  const bool equal = read_back_equal(r);
  std::printf("frame %d: vertex buffer %" PRIu64 " B + %s -> point %" PRIu64 "; read back %" PRIu64
              " B: %s\n",
              n, kVertexBytes,
              n == 1 ? "texture 256x256 RGBA8, 9 mip levels (349524 B)"
                     : "texture tile 64x64 (16384 B, written in place)",
              done.value, kVertexBytes + r.texture_bytes, equal ? "all equal" : "MISMATCH");
  return equal;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{
      "staging-example-vulkan: frames of uploads through staging::vulkan, read back and "
      "checked byte for byte.",
      "staging-example-vulkan"};
  std::string device_name;
  example::add_device_options(app, device_name);
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;

  example::Device vk(device_name);
  if (!vk.ok()) {
    std::printf("staging-example-vulkan: skipped: %s\n", vk.why().c_str());
    return 77;
  }
  std::printf("device: %s\n", vk.describe().c_str());

  // [snippet:ring]
  // The ring: staging memory for frames (slots, persistently mapped), reused once its
  // timeline semaphore says the GPU has finished reading it.
  auto made = staging::vulkan::Ring::create(vk.staging_device());
  if (!made) {
    std::printf("Ring::create failed: %s\n", std::string(staging::to_string(made.error())).c_str());
    return 1;
  }
  staging::vulkan::Ring ring = std::move(*made);
  // [snippet-end]

  Resources r = make_resources(vk);
  std::mt19937_64 rng(2026);
  bool all_equal = true;
  for (int n = 1; n <= kFrames; ++n) {
    const std::optional<bool> equal = run_frame(vk, ring, n, rng, r);
    if (!equal) return 1;
    all_equal = all_equal && *equal;
  }

  const staging::vulkan::Stats stats = ring.stats();
  std::printf("\nstaging memory: type %u (%s); ring stats:\n%s", ring.memory_type().value_or(0),
              ring.memory_coherent() ? "coherent" : "non-coherent, flushed",
              staging::vulkan::format_stats(stats).c_str());
  std::printf("\nbyte check: %s; validation messages: %d\n", all_equal ? "passed" : "FAILED",
              vk.validation_messages());
  destroy(vk, r);
  return all_equal && vk.validation_messages() == 0 ? 0 : 1;
} catch (...) {
  return staging::tools::exception_exit("staging-example-vulkan");
}
