#include "webgpu_test_support.hpp"

#include <emscripten.h>
#include <emscripten/html5_webgpu.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

namespace staging::webgpu::test {

WGPUDevice device() {
  static WGPUDevice cached = emscripten_webgpu_get_device();
  return cached;
}

void pump(int ms) {
  emscripten_sleep(static_cast<unsigned>(ms));
}

bool wait_until(const std::function<bool()>& done, int timeout_ms) {
  const double start = emscripten_get_now();
  while (!done()) {
    if (emscripten_get_now() - start > timeout_ms) return done();
    pump(1);
  }
  return true;
}

std::vector<std::byte> random_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> out(n);
  for (std::byte& b : out)
    b = static_cast<std::byte>(gen() & 0xff);
  if (n > 0) out[0] = static_cast<std::byte>(0xA5);  // never all zeros
  return out;
}

WGPUBuffer make_buffer(uint64_t size, WGPUBufferUsageFlags usage) {
  WGPUBufferDescriptor desc{};
  desc.label = "test buffer";
  desc.usage = usage;
  desc.size = size;
  return wgpuDeviceCreateBuffer(device(), &desc);
}

WGPUTexture make_texture(uint32_t width, uint32_t height, uint32_t layers, WGPUTextureFormat format,
                         uint32_t mip_levels) {
  WGPUTextureDescriptor desc{};
  desc.label = "test texture";
  desc.usage = WGPUTextureUsage_CopySrc | WGPUTextureUsage_CopyDst;
  desc.dimension = WGPUTextureDimension_2D;
  desc.size = {width, height, layers};
  desc.format = format;
  desc.mipLevelCount = mip_levels;
  desc.sampleCount = 1;
  return wgpuDeviceCreateTexture(device(), &desc);
}

WGPUCommandEncoder make_encoder() {
  WGPUCommandEncoderDescriptor desc{};
  return wgpuDeviceCreateCommandEncoder(device(), &desc);
}

void submit(WGPUCommandEncoder encoder) {
  WGPUCommandBufferDescriptor desc{};
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, &desc);
  WGPUQueue queue = wgpuDeviceGetQueue(device());
  wgpuQueueSubmit(queue, 1, &commands);
  wgpuQueueRelease(queue);
  wgpuCommandBufferRelease(commands);
  wgpuCommandEncoderRelease(encoder);
}

namespace {

struct MapWait {
  bool done = false;
  bool ok = false;
};

void on_read_mapped(WGPUBufferMapAsyncStatus status, void* userdata) {
  auto* wait = static_cast<MapWait*>(userdata);
  wait->done = true;
  wait->ok = status == WGPUBufferMapAsyncStatus_Success;
}

// Maps `readback` for reading and copies `size` bytes out of it.
std::vector<std::byte> map_and_copy(WGPUBuffer readback, uint64_t size) {
  MapWait wait;
  wgpuBufferMapAsync(readback, WGPUMapMode_Read, 0, static_cast<size_t>(size), &on_read_mapped,
                     &wait);
  if (!wait_until([&] { return wait.done; }) || !wait.ok) return {};
  const void* mapped = wgpuBufferGetConstMappedRange(readback, 0, static_cast<size_t>(size));
  std::vector<std::byte> out(static_cast<std::size_t>(size));
  if (mapped != nullptr) std::memcpy(out.data(), mapped, out.size());
  wgpuBufferUnmap(readback);
  return mapped != nullptr ? out : std::vector<std::byte>{};
}

}  // namespace

std::vector<std::byte> read_buffer(WGPUBuffer buffer, uint64_t offset, uint64_t size) {
  const uint64_t padded = (size + 3) & ~uint64_t{3};
  WGPUBuffer readback = make_buffer(padded, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
  WGPUCommandEncoder encoder = make_encoder();
  wgpuCommandEncoderCopyBufferToBuffer(encoder, buffer, offset, readback, 0, padded);
  submit(encoder);
  std::vector<std::byte> out = map_and_copy(readback, padded);
  out.resize(std::min<std::size_t>(out.size(), static_cast<std::size_t>(size)));
  wgpuBufferDestroy(readback);
  wgpuBufferRelease(readback);
  return out;
}

std::vector<std::byte> read_texture(const TextureUpload& region) {
  const auto layout = texture_layout(region);
  if (!layout) return {};
  const uint64_t total = layout->padded_bytes;
  WGPUBuffer readback = make_buffer(total, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
  WGPUCommandEncoder encoder = make_encoder();
  WGPUImageCopyTexture source{};
  source.texture = region.texture;
  source.mipLevel = region.mip_level;
  source.origin = region.origin;
  source.aspect = region.aspect;
  WGPUImageCopyBuffer destination{};
  destination.buffer = readback;
  destination.layout.offset = 0;
  destination.layout.bytesPerRow = static_cast<uint32_t>(layout->row_pitch);
  destination.layout.rowsPerImage = static_cast<uint32_t>(layout->rows);
  wgpuCommandEncoderCopyTextureToBuffer(encoder, &source, &destination, &region.extent);
  submit(encoder);
  const std::vector<std::byte> padded = map_and_copy(readback, total);
  wgpuBufferDestroy(readback);
  wgpuBufferRelease(readback);
  if (padded.empty()) return {};
  std::vector<std::byte> out(static_cast<std::size_t>(layout->packed_bytes));
  for (uint64_t r = 0; r < layout->rows * layout->images; ++r) {
    std::memcpy(out.data() + r * layout->row_bytes, padded.data() + r * layout->row_pitch,
                static_cast<std::size_t>(layout->row_bytes));
  }
  return out;
}

std::string describe(const StagingRing& ring) {
  std::string out;
  for (std::size_t i = 0; i < ring.slot_count(); ++i) {
    if (i != 0) out += ' ';
    out += '[';
    out += to_string(ring.state(i));
    if (ring.capacity(i) != 0) {
      char cap[32];
      std::snprintf(cap, sizeof cap, " %lluK",
                    static_cast<unsigned long long>(ring.capacity(i) >> 10));
      out += cap;
    }
    out += ']';
  }
  return out;
}

void StateTracker::observe(const StagingRing& ring, const std::string& step) {
  if (pending_.size() < ring.slot_count()) pending_.resize(ring.slot_count());
  for (std::size_t i = 0; i < ring.slot_count(); ++i) {
    const SlotState state = ring.state(i);
    Seen& seen = seen_[static_cast<int>(state)];
    if (seen.reached_at.empty()) seen.reached_at = step + " (slot " + std::to_string(i) + ")";
    if (state == SlotState::Ready) {
      if (seen.recovered_at.empty()) seen.recovered_at = "-";
      for (SlotState earlier : pending_[i]) {
        Seen& e = seen_[static_cast<int>(earlier)];
        if (e.recovered_at.empty()) e.recovered_at = step + " (slot " + std::to_string(i) + ")";
      }
      pending_[i].clear();
    } else if (std::find(pending_[i].begin(), pending_[i].end(), state) == pending_[i].end()) {
      pending_[i].push_back(state);
    }
  }
}

bool StateTracker::reached(SlotState state) const {
  return !seen_[static_cast<int>(state)].reached_at.empty();
}

bool StateTracker::recovered(SlotState state) const {
  return !seen_[static_cast<int>(state)].recovered_at.empty();
}

void StateTracker::print() const {
  for (int s = 0; s < 6; ++s) {
    const Seen& seen = seen_[s];
    const std::string name(to_string(static_cast<SlotState>(s)));
    if (seen.reached_at.empty()) {
      std::printf("  state %-9s not reached\n", name.c_str());
    } else if (s == static_cast<int>(SlotState::Ready) || s == static_cast<int>(SlotState::Empty)) {
      std::printf("  state %-9s reached at %s\n", name.c_str(), seen.reached_at.c_str());
    } else {
      std::printf("  state %-9s reached at %s, back to Ready at %s\n", name.c_str(),
                  seen.reached_at.c_str(),
                  seen.recovered_at.empty() ? "(never)" : seen.recovered_at.c_str());
    }
  }
}

}  // namespace staging::webgpu::test
