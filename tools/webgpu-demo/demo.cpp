// The demo page's WebAssembly: a frame loop streaming uploads through a
// staging::webgpu::StagingRing — a plasma image refreshed band by band into a 512x512 texture
// (a sweep: the plasma advances once per pass of the band over the image, and the page marks the
// band written last), two sprites drawn over it whose 240-byte rows are padded to 256 in the slot
// (each frame writes the sprite's tile at its new place and the plasma back where it was), and a
// small buffer — with a scripted schedule of the ring's other paths so every state shows up on
// the page (frame % 150):
//    20: the slot's buffer destroyed while its re-map is pending → Failed, replaced when picked
//    60: a burst of three extra frames in one tick → RingFull refusal, queue writes
//   100: an encoder dropped without submit → Abandoned, replaced when picked
//   130: a full-image frame (1 MiB) over max_slot_bytes (512 KiB) → TooLarge, queue writes
// demo.js calls demo_frame() once per requestAnimationFrame, reads demo_state_json() and reads the
// texture (demo_world_texture()) back onto the page's canvas.
#include <emscripten.h>
#include <emscripten/html5_webgpu.h>
#include <webgpu/webgpu.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "staging/webgpu/webgpu.hpp"

namespace {

using staging::Route;
using staging::webgpu::StagingFrame;
using staging::webgpu::StagingRing;
using staging::webgpu::TextureUpload;

constexpr uint32_t kSize = 512;         // the world texture
constexpr uint32_t kBand = 32;          // rows per plasma band
constexpr uint32_t kSprite = 60;        // sprite edge (240-byte rows: padded to 256 in the slot)
constexpr uint64_t kParams = 16 << 10;  // the small buffer upload

// What the texture holds, as far as the frame loop needs to know to draw over it seamlessly.
struct Picture {
  // The sweep: rows above the band written last hold the plasma at time `sweep_now`, rows below
  // it the plasma of the previous pass (`sweep_before`). `band_end` is that band's last row + 1.
  double sweep_now = 0;
  double sweep_before = 0;
  uint32_t band_y0 = 0;
  uint32_t band_end = 0;
  // Where each sprite was drawn last (its tile is repainted with the plasma when it moves on).
  uint32_t sprite_x[2] = {0, 0};
  uint32_t sprite_y[2] = {0, 0};
  bool sprite_drawn[2] = {false, false};
};

struct Demo {
  WGPUDevice device = nullptr;
  Picture picture;
  WGPUQueue queue = nullptr;
  std::unique_ptr<StagingRing> ring;
  WGPUTexture world = nullptr;
  WGPUBuffer params = nullptr;
  std::vector<uint8_t> pixels;  // scratch for generated texels
  std::vector<uint8_t> param_bytes = std::vector<uint8_t>(kParams);
  uint64_t frame = 0;
  std::string last;    // what the last frame did
  std::string events;  // JSON array items of notable events, newest last
  int event_count = 0;
  std::string json;
};

Demo& demo() {
  static Demo d;
  return d;
}

void event(const std::string& text) {
  Demo& d = demo();
  if (!d.events.empty()) d.events += ',';
  d.events += "\"frame " + std::to_string(d.frame) + ": " + text + "\"";
  ++d.event_count;
  if (d.event_count > 12) {  // keep the newest dozen
    d.events.erase(0, d.events.find(",\"") + 1);
    --d.event_count;
  }
}

uint8_t clamp_byte(double v) {
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// The plasma's texel at (x, y) at time t, RGBA8.
void plasma_texel(uint8_t* p, uint32_t x, uint32_t y, double t) {
  const double fx = x / 64.0, fy = y / 64.0;
  const double v = std::sin(fx + t) + std::sin(fy * 1.3 - t * 0.7) +
                   std::sin((fx + fy) * 0.7 + t * 0.5) +
                   std::sin(std::hypot(fx - 4, fy - 4) * 1.5 - t);
  p[0] = clamp_byte(128 + 60 * std::sin(v * 1.6));
  p[1] = clamp_byte(90 + 70 * std::sin(v * 1.6 + 2.1));
  p[2] = clamp_byte(150 + 100 * std::sin(v * 1.6 + 4.2));
  p[3] = 255;
}

// The time of the plasma the texture holds in row y (see Demo: the sweep).
double sweep_time(uint32_t y) {
  const Picture& p = demo().picture;
  return y < p.band_end ? p.sweep_now : p.sweep_before;
}

// Plasma rows [y0, y0 + rows) of the full-width image at time t, RGBA8.
void plasma(std::vector<uint8_t>& out, uint32_t y0, uint32_t rows, double t) {
  out.resize(static_cast<std::size_t>(kSize) * rows * 4);
  for (uint32_t y = 0; y < rows; ++y) {
    for (uint32_t x = 0; x < kSize; ++x)
      plasma_texel(&out[(static_cast<std::size_t>(y) * kSize + x) * 4], x, y0 + y, t);
  }
}

// A kSprite x kSprite tile at (x0, y0): the plasma the texture holds there and, when `which` is
// 0 or 1, that sprite's disc drawn over it (anti-aliased edge); -1 gives the plasma alone.
void sprite_tile(std::vector<uint8_t>& out, uint32_t x0, uint32_t y0, double t, int which) {
  out.resize(static_cast<std::size_t>(kSprite) * kSprite * 4);
  for (uint32_t y = 0; y < kSprite; ++y) {
    for (uint32_t x = 0; x < kSprite; ++x) {
      uint8_t* p = &out[(static_cast<std::size_t>(y) * kSprite + x) * 4];
      plasma_texel(p, x0 + x, y0 + y, sweep_time(y0 + y));
      if (which < 0) continue;
      const double dx = x + 0.5 - kSprite / 2.0, dy = y + 0.5 - kSprite / 2.0;
      const double r = std::sqrt(dx * dx + dy * dy) / (kSprite / 2.0);
      const double cover = std::fmin(1.0, std::fmax(0.0, (1.0 - r) * kSprite / 2.0));
      const double ring = 0.5 + 0.5 * std::cos(r * 12 - t * 4);
      const double rgb[3] = {which == 0 ? 255 * ring : 40, 200 * ring,
                             which == 1 ? 255 * ring : 60};
      for (int c = 0; c < 3; ++c)
        p[c] = clamp_byte(p[c] * (1 - cover) + rgb[c] * cover);
    }
  }
}

WGPUCommandEncoder make_encoder() {
  WGPUCommandEncoderDescriptor desc{};
  return wgpuDeviceCreateCommandEncoder(demo().device, &desc);
}

void submit(WGPUCommandEncoder encoder) {
  WGPUCommandBufferDescriptor desc{};
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, &desc);
  wgpuQueueSubmit(demo().queue, 1, &commands);
  wgpuCommandBufferRelease(commands);
  wgpuCommandEncoderRelease(encoder);
}

enum class Ending { Submit, DropEncoder, FailMapping };

// One frame of uploads: the plasma band (or the whole image), the two sprites (each: the plasma
// back where it was, then its tile where it is now), the params buffer.
void run_frame(double t, bool whole_image, Ending ending) {
  Demo& d = demo();
  const uint32_t band = static_cast<uint32_t>(d.frame % (kSize / kBand));
  const uint32_t rows = whole_image ? kSize : kBand;
  const uint32_t y0 = whole_image ? 0 : band * kBand;
  const Picture before = d.picture;  // what the texture keeps if the frame is dropped
  Picture& p = d.picture;
  if (whole_image) {
    p.sweep_now = p.sweep_before = t;
  } else if (band == 0) {  // a new pass of the band over the image
    p.sweep_before = p.sweep_now;
    p.sweep_now = t;
  }
  p.band_y0 = y0;
  p.band_end = y0 + rows;
  uint64_t needed = 0;
  needed += *staging::webgpu::upload_footprint(uint64_t{kSize} * 4 * rows, 8);
  const auto sprite_layout = staging::texture_layout({kSprite, kSprite, 1}, 1, {4, 1, 1, 1, 0},
                                                     staging::webgpu::COPY_LIMITS);
  needed += 4 * *staging::webgpu::upload_footprint(sprite_layout->copy_bytes, 8);
  needed += *staging::webgpu::upload_footprint(kParams, 8);

  StagingFrame frame = d.ring->begin(needed).value();
  TextureUpload region;
  region.texture = d.world;
  region.origin = {0, y0, 0};
  region.extent = {kSize, rows, 1};
  plasma(d.pixels, y0, rows, p.sweep_now);
  (void)frame.upload(region, d.pixels.data(), d.pixels.size());
  region.extent = {kSprite, kSprite, 1};
  for (int s = 0; s < 2; ++s) {  // the plasma back where the sprites were (copies run in order)
    if (!p.sprite_drawn[s]) continue;
    region.origin = {p.sprite_x[s], p.sprite_y[s], 0};
    sprite_tile(d.pixels, p.sprite_x[s], p.sprite_y[s], t, -1);
    (void)frame.upload(region, d.pixels.data(), d.pixels.size());
  }
  for (int s = 0; s < 2; ++s) {
    const double a = t * (s == 0 ? 0.9 : -0.6) + s * 2.0;
    p.sprite_x[s] = static_cast<uint32_t>(226 + 180 * std::cos(a));
    p.sprite_y[s] = static_cast<uint32_t>(226 + 180 * std::sin(a * 1.3));
    p.sprite_drawn[s] = true;
    region.origin = {p.sprite_x[s], p.sprite_y[s], 0};
    sprite_tile(d.pixels, p.sprite_x[s], p.sprite_y[s], t, s);
    (void)frame.upload(region, d.pixels.data(), d.pixels.size());
  }
  for (std::size_t i = 0; i < d.param_bytes.size(); ++i)
    d.param_bytes[i] = static_cast<uint8_t>(i * 7 + d.frame);
  (void)frame.upload(d.params, 0, d.param_bytes.data(), d.param_bytes.size());

  const std::size_t slot = frame.slot();
  const bool slot_frame = frame.route() == Route::Ring;
  if (!slot_frame) {
    event(std::string("begin refused (") + std::string(to_string(*frame.refusal())) +
          "): uploads sent by queue writes");
  }
  WGPUCommandEncoder encoder = make_encoder();
  (void)frame.finish(encoder);
  if (ending == Ending::DropEncoder && slot_frame) {
    wgpuCommandEncoderRelease(encoder);  // never submitted; the frame dies unsubmitted
    d.picture = before;                  // and the texture keeps what it had
    event("encoder dropped unsubmitted: slot " + std::to_string(slot) + " Abandoned");
    d.last = "encoder dropped";
    return;
  }
  submit(encoder);
  (void)frame.submitted();
  if (ending == Ending::FailMapping && slot_frame) {
    wgpuBufferDestroy(d.ring->buffer(slot));
    event("slot " + std::to_string(slot) + "'s buffer destroyed during its re-map: Failed");
  }
  d.last = slot_frame ? "slot " + std::to_string(slot) : "queue writes";
}

void append_stat(std::string& json, const char* name, uint64_t value) {
  json += "\"";
  json += name;
  json += "\":" + std::to_string(value) + ",";
}

}  // namespace

extern "C" {

// One tick of the page's requestAnimationFrame loop.
EMSCRIPTEN_KEEPALIVE void demo_frame(double seconds) {
  Demo& d = demo();
  if (!d.ring) return;
  const uint64_t phase = d.frame % 150;
  Ending ending = Ending::Submit;
  if (phase == 100) ending = Ending::DropEncoder;
  if (phase == 20) ending = Ending::FailMapping;
  run_frame(seconds, phase == 130, ending);
  if (phase == 60) {  // a burst: three more frames before the event loop runs a map callback
    event("burst of 3 frames in one tick");
    for (int k = 0; k < 3; ++k)
      run_frame(seconds, false, Ending::Submit);
  }
  ++d.frame;
}

EMSCRIPTEN_KEEPALIVE uint32_t demo_world_texture() {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(demo().world));
}

// The ring's state now, as JSON for demo.js.
EMSCRIPTEN_KEEPALIVE const char* demo_state_json() {
  Demo& d = demo();
  std::string& j = d.json;
  j = "{\"frame\":" + std::to_string(d.frame) + ",\"last\":\"" + d.last + "\",\"band\":[" +
      std::to_string(d.picture.band_y0) + "," + std::to_string(d.picture.band_end) +
      "],\"slots\":[";
  for (std::size_t i = 0; d.ring && i < d.ring->slot_count(); ++i) {
    if (i) j += ',';
    j += "{\"state\":\"" + std::string(to_string(d.ring->state(i))) +
         "\",\"capacity\":" + std::to_string(d.ring->capacity(i)) + "}";
  }
  j += "],\"stats\":{";
  if (d.ring) {
    const staging::StagingStats& s = d.ring->stats();
    const staging::webgpu::RouteStats& r = d.ring->route_stats();
    append_stat(j, "frames_begun", s.frames_begun);
    append_stat(j, "frames_finished", r.frames_finished);
    append_stat(j, "queue_write_frames", r.queue_write_frames);
    append_stat(j, "slot_uploads", r.slot_uploads);
    append_stat(j, "slot_bytes", r.slot_bytes);
    append_stat(j, "queue_write_uploads", r.queue_write_uploads);
    append_stat(j, "queue_write_bytes", r.queue_write_bytes);
    append_stat(j, "rows_repacked", r.rows_repacked);
    append_stat(j, "mirrored_bytes", r.mirrored_bytes);
    append_stat(j, "refusals_all_in_flight", s.refusals_all_in_flight);
    append_stat(j, "refusals_too_large", s.refusals_too_large);
    append_stat(j, "slots_created", s.slots_created);
    append_stat(j, "slots_grown", s.slots_grown);
    append_stat(j, "slots_replaced", s.slots_replaced);
    append_stat(j, "abandoned_seen", s.abandoned_seen);
    append_stat(j, "failed_seen", s.failed_seen);
    append_stat(j, "maps_completed", r.maps_completed);
    append_stat(j, "maps_failed", r.maps_failed);
    append_stat(j, "bytes_allocated", s.bytes_allocated);
    append_stat(j, "max_slot_bytes", d.ring->slot_config().max_slot_bytes);
    j.pop_back();
  }
  j += "},\"events\":[" + d.events + "]}";
  return j.c_str();
}

}  // extern "C"

int main() {
  Demo& d = demo();
  d.device = emscripten_webgpu_get_device();
  if (d.device == nullptr) {
    std::printf("no WebGPU device\n");
    return 1;
  }
  d.queue = wgpuDeviceGetQueue(d.device);
  staging::StagingRingConfig config;
  config.max_slot_bytes = 512 << 10;  // a full-image frame (1 MiB) is refused: TooLarge
  d.ring = std::move(*StagingRing::create(d.device, {.slot_ring = config}));
  WGPUTextureDescriptor tex{};
  tex.label = "demo world";
  tex.usage = WGPUTextureUsage_CopyDst | WGPUTextureUsage_CopySrc;
  tex.dimension = WGPUTextureDimension_2D;
  tex.size = {kSize, kSize, 1};
  tex.format = WGPUTextureFormat_RGBA8Unorm;
  tex.mipLevelCount = 1;
  tex.sampleCount = 1;
  d.world = wgpuDeviceCreateTexture(d.device, &tex);
  // The first picture, written directly (1 MiB: more than a slot holds); the band sweeps over it.
  plasma(d.pixels, 0, kSize, 0.0);
  WGPUImageCopyTexture dst{};
  dst.texture = d.world;
  WGPUTextureDataLayout layout{};
  layout.bytesPerRow = kSize * 4;
  layout.rowsPerImage = kSize;
  const WGPUExtent3D extent{kSize, kSize, 1};
  wgpuQueueWriteTexture(d.queue, &dst, d.pixels.data(), d.pixels.size(), &layout, &extent);
  WGPUBufferDescriptor buf{};
  buf.label = "demo params";
  buf.usage = WGPUBufferUsage_CopyDst | WGPUBufferUsage_Uniform;
  buf.size = kParams;
  d.params = wgpuDeviceCreateBuffer(d.device, &buf);
  std::printf("demo ready: %u slots, max slot %llu KiB\n",
              static_cast<unsigned>(d.ring->slot_count()),
              static_cast<unsigned long long>(config.max_slot_bytes >> 10));
  return 0;  // the runtime stays alive: demo.js drives the frames
}
