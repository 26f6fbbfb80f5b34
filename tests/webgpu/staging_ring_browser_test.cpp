// staging::webgpu::StagingRing in a real browser: headless Chromium's WebGPU (SwiftShader here),
// driven by tools/webgpu-harness. Every byte an upload writes is read back through a MAP_READ
// buffer and compared; the slot states are printed as the tests walk them through
// Ready → Recording → InFlight → Ready, and through Abandoned and Failed and back.
//
// Sketch notation (describe()): one box per slot, "[state capacity]":
//   [InFlight 64K] [InFlight 64K] [InFlight 64K]   ← every slot in flight: begin() refuses
//
// Map callbacks only run from the browser's event loop, so a test that submits three frames
// without pump()ing in between deterministically has all three slots InFlight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "staging/webgpu/webgpu.hpp"
#include "webgpu_test_support.hpp"

namespace staging::webgpu {
namespace {

using test::describe;
using test::device;
using test::make_buffer;
using test::make_encoder;
using test::make_texture;
using test::pump;
using test::random_bytes;
using test::read_buffer;
using test::read_texture;
using test::StateTracker;
using test::wait_until;
using S = SlotState;

constexpr uint64_t K = 1024;
constexpr WGPUBufferUsageFlags kDstUsage = WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;

struct WebGpuRing : ::testing::Test {
  std::unique_ptr<StagingRing> ring;
  std::vector<WGPUBuffer> buffers;
  std::vector<WGPUTexture> textures;

  void SetUp() override {
    ASSERT_NE(device(), nullptr) << "the page handed over no WebGPU device";
    ring = make_ring();
  }
  void TearDown() override {
    ring.reset();
    for (WGPUBuffer b : buffers) {
      wgpuBufferDestroy(b);
      wgpuBufferRelease(b);
    }
    for (WGPUTexture t : textures) {
      wgpuTextureDestroy(t);
      wgpuTextureRelease(t);
    }
  }

  static std::unique_ptr<StagingRing> make_ring(
      StagingRingConfig slots = {}, ExhaustionPolicy policy = ExhaustionPolicy::Fallback) {
    auto made = StagingRing::create(device(), RingConfig{.slot_ring = slots, .policy = policy});
    STAGING_ASSERT(made.has_value(), "test ring config");
    return std::move(*made);
  }
  WGPUBuffer dst_buffer(uint64_t size) {
    buffers.push_back(make_buffer(size, kDstUsage));
    return buffers.back();
  }
  WGPUTexture dst_texture(uint32_t w, uint32_t h, uint32_t layers, WGPUTextureFormat format,
                          uint32_t mips = 1) {
    textures.push_back(make_texture(w, h, layers, format, mips));
    return textures.back();
  }
  // finish → submit → submitted, the whole frame protocol.
  static void submit_frame(StagingFrame& frame) {
    WGPUCommandEncoder encoder = make_encoder();
    ASSERT_TRUE(frame.finish(encoder).has_value());
    test::submit(encoder);
    ASSERT_TRUE(frame.submitted().has_value());
  }
  bool all_slots_settled() const {
    for (std::size_t i = 0; i < ring->slot_count(); ++i)
      if (ring->state(i) == S::InFlight || ring->state(i) == S::Recording) return false;
    return true;
  }
  // Whether begin(needed) can be served without a new buffer: a Ready slot's buffer fits it, or
  // no slot's buffer would (then a growth is due whatever comes back) and one is not busy.
  bool a_fitting_slot_is_ready(uint64_t needed) const {
    bool any_fits = false;
    for (std::size_t i = 0; i < ring->slot_count(); ++i) {
      if (ring->capacity(i) < needed) continue;
      if (ring->state(i) == S::Ready) return true;
      any_fits = true;
    }
    return !any_fits && !all_slots_busy();
  }
  bool all_slots_busy() const {
    for (std::size_t i = 0; i < ring->slot_count(); ++i)
      if (ring->state(i) != S::InFlight && ring->state(i) != S::Recording) return false;
    return true;
  }
  void show(const std::string& step) const {
    std::printf("  %-44s %s\n", step.c_str(), describe(*ring).c_str());
  }
};

// The adapter executes real work: bytes written by the queue come back through a MAP_READ buffer.
TEST_F(WebGpuRing, DeviceRoundTrip) {
  const std::vector<std::byte> bytes = random_bytes(64 * K, 1);
  WGPUBuffer dst = dst_buffer(bytes.size());
  wgpuQueueWriteBuffer(ring->queue(), dst, 0, bytes.data(), bytes.size());
  EXPECT_EQ(read_buffer(dst, 0, bytes.size()), bytes);
  std::printf("  device round trip: %zu random bytes written and read back exactly\n",
              bytes.size());
}

// Many frames of buffer uploads through slots, every byte verified; the steady state creates no
// buffer. Which slots the GPU has handed back when a frame begins is the host's timing, so each
// frame waits for a slot whose buffer fits it (a frame that finds only smaller slots Ready grows
// one, by design: that is not what this test is about).
TEST_F(WebGpuRing, BufferUploadsAreByteExact) {
  constexpr uint64_t kDst = 512 * K;
  WGPUBuffer dst = dst_buffer(kDst);
  std::vector<std::byte> expected(kDst, std::byte{0});
  std::mt19937 gen(2);
  uint64_t buffers_after_warmup = 0;
  for (int frame = 0; frame < 40; ++frame) {
    if (frame == 10) {
      const StagingStats& s = ring->stats();
      buffers_after_warmup = s.slots_created + s.slots_grown + s.slots_replaced;
    }
    // Disjoint regions: cut the destination into a few random pieces, upload some of them.
    std::vector<std::pair<uint64_t, uint64_t>> uploads;  // offset, size
    uint64_t at = 4 * (gen() % 64);
    while (at < kDst && uploads.size() < 6) {
      const uint64_t size = std::min<uint64_t>(4 * (1 + gen() % 6000), kDst - at);
      uploads.emplace_back(at, size);
      at += size + 4 * (gen() % 1000);
    }
    uint64_t needed = 0;
    for (auto [offset, size] : uploads)
      needed += *upload_footprint(size, BUFFER_PLACEMENT_ALIGNMENT);
    // This test is about bytes, not refusals: wait for a slot that fits if it is still in flight.
    ASSERT_TRUE(wait_until([&] { return a_fitting_slot_is_ready(needed); }));
    StagingFrame staging = ring->begin(needed).value();
    ASSERT_EQ(staging.route(), Route::Ring) << "frame " << frame;
    for (std::size_t u = 0; u < uploads.size(); ++u) {
      const auto [offset, size] = uploads[u];
      const std::vector<std::byte> bytes = random_bytes(size, 1000 + frame * 10 + u);
      if (u % 2 == 0) {
        ASSERT_EQ(staging.upload(dst, offset, bytes.data(), size), Route::Ring);
      } else {  // zero-copy form: fill the slot's mapping in place
        auto span = staging.reserve(dst, offset, size);
        ASSERT_TRUE(span.has_value());
        std::memcpy(span->data(), bytes.data(), size);
      }
      std::memcpy(expected.data() + offset, bytes.data(), size);
    }
    submit_frame(staging);
    if (frame % 2 == 1) pump();
    if (frame % 8 == 7) ASSERT_EQ(read_buffer(dst, 0, kDst), expected) << "after frame " << frame;
  }
  ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
  EXPECT_EQ(read_buffer(dst, 0, kDst), expected);
  const StagingStats& s = ring->stats();
  EXPECT_EQ(s.slots_created + s.slots_grown + s.slots_replaced, buffers_after_warmup)
      << "the steady state must create no buffer";
  EXPECT_EQ(ring->route_stats().queue_write_uploads, 0u);
  show("40 frames, all bytes exact:");
  std::printf("  slot buffers created %llu, frames %llu, uploads %llu, bytes %llu\n",
              static_cast<unsigned long long>(s.slots_created),
              static_cast<unsigned long long>(s.frames_finished),
              static_cast<unsigned long long>(ring->route_stats().slot_uploads),
              static_cast<unsigned long long>(ring->route_stats().slot_bytes));
}

struct TextureCase {
  const char* name;
  WGPUTextureFormat format;
  TexelBlock block;
  uint32_t tex_w, tex_h, layers, mips;
  uint32_t mip;
  WGPUOrigin3D origin;
  WGPUExtent3D extent;
};

// Texture regions whose rows are not 256-byte multiples go through slots with repacked rows; the
// texels read back are exactly the uploaded ones.
TEST_F(WebGpuRing, TextureUploadsAreByteExact) {
  const TextureCase cases[] = {
      {"rgba8unorm 37x19",
       WGPUTextureFormat_RGBA8Unorm,
       {4, 1, 1},
       37,
       19,
       1,
       1,
       0,
       {0, 0, 0},
       {37, 19, 1}},
      {"r8unorm 13x7", WGPUTextureFormat_R8Unorm, {1, 1, 1}, 13, 7, 1, 1, 0, {0, 0, 0}, {13, 7, 1}},
      {"rgba32uint 5x3x3 layers",
       WGPUTextureFormat_RGBA32Uint,
       {16, 1, 1},
       5,
       3,
       3,
       1,
       0,
       {0, 0, 0},
       {5, 3, 3}},
      {"rg32uint 64x4 (no padding)",
       WGPUTextureFormat_RG32Uint,
       {8, 1, 1},
       64,
       4,
       1,
       1,
       0,
       {0, 0, 0},
       {64, 4, 1}},
      {"rgba8unorm mip 1 at (3,5) 20x9",
       WGPUTextureFormat_RGBA8Unorm,
       {4, 1, 1},
       64,
       64,
       1,
       2,
       1,
       {3, 5, 0},
       {20, 9, 1}},
      {"rgba8unorm layer 1 of 2, 1 row",
       WGPUTextureFormat_RGBA8Unorm,
       {4, 1, 1},
       33,
       2,
       2,
       1,
       0,
       {0, 1, 1},
       {33, 1, 1}},
  };
  uint32_t seed = 50;
  for (const TextureCase& c : cases) {
    TextureUpload region;
    region.texture = dst_texture(c.tex_w, c.tex_h, c.layers, c.format, c.mips);
    region.mip_level = c.mip;
    region.origin = c.origin;
    region.extent = c.extent;
    region.block = c.block;
    const auto layout = texture_layout(region);
    ASSERT_TRUE(layout.has_value());
    const std::vector<std::byte> texels = random_bytes(layout->packed_bytes, seed++);
    StagingFrame staging =
        ring->begin(*upload_footprint(layout->copy_bytes, layout->offset_alignment)).value();
    ASSERT_EQ(staging.route(), Route::Ring);
    ASSERT_EQ(staging.upload(region, texels.data(), texels.size()), Route::Ring) << c.name;
    submit_frame(staging);
    EXPECT_EQ(read_texture(region), texels) << c.name;
    std::printf("  %-32s row %4llu B -> bytesPerRow %4llu, %llu rows: exact\n", c.name,
                static_cast<unsigned long long>(layout->row_bytes),
                static_cast<unsigned long long>(layout->row_pitch),
                static_cast<unsigned long long>(layout->rows * layout->images));
  }
  EXPECT_GT(ring->route_stats().rows_repacked, 0u);
  EXPECT_EQ(ring->route_stats().queue_write_uploads, 0u);
}

// A frame the ring refuses (TooLarge) and an upload that outgrows its slot take the queue-write
// route: same bytes, other route.
TEST_F(WebGpuRing, QueueWriteRouteIsByteExact) {
  ring =
      make_ring(StagingRingConfig{.slots = 3, .min_slot_bytes = 64 * K, .max_slot_bytes = 128 * K});
  WGPUBuffer dst = dst_buffer(1024 * K);
  TextureUpload region;
  region.texture = dst_texture(300, 200, 1, WGPUTextureFormat_RGBA8Unorm);
  region.extent = {300, 200, 1};
  const std::vector<std::byte> big = random_bytes(1024 * K, 7);
  const std::vector<std::byte> texels = random_bytes(300 * 200 * 4, 8);

  StagingFrame fallback = ring->begin(big.size() + texels.size()).value();
  ASSERT_EQ(fallback.route(), Route::Fallback);
  ASSERT_EQ(fallback.refusal(), UploadError::TooLarge);
  EXPECT_EQ(fallback.upload(dst, 0, big.data(), big.size()), Route::Fallback);
  EXPECT_EQ(fallback.upload(region, texels.data(), texels.size()), Route::Fallback);
  EXPECT_EQ(fallback.reserve(dst, 0, 16).error(), UploadError::NoSlot);
  ASSERT_TRUE(fallback.finish(nullptr).has_value());
  ASSERT_TRUE(fallback.submitted().has_value());
  EXPECT_EQ(read_buffer(dst, 0, big.size()), big);
  EXPECT_EQ(read_texture(region), texels);
  std::printf("  TooLarge frame: 1 MiB buffer + 300x200 texture by queue writes: exact\n");

  // Underestimated frame: 64K slot, two 48K uploads — the second does not fit.
  const std::vector<std::byte> a = random_bytes(48 * K, 9), b = random_bytes(48 * K, 10);
  StagingFrame staging = ring->begin(48 * K).value();
  ASSERT_EQ(staging.route(), Route::Ring);
  EXPECT_EQ(staging.upload(dst, 0, a.data(), a.size()), Route::Ring);
  EXPECT_EQ(staging.upload(dst, 64 * K, b.data(), b.size()), Route::Fallback);
  submit_frame(staging);
  EXPECT_EQ(read_buffer(dst, 0, a.size()), a);
  EXPECT_EQ(read_buffer(dst, 64 * K, b.size()), b);
  EXPECT_EQ(ring->route_stats().slot_overflows, 1u);
  EXPECT_EQ(ring->stats().refusals_too_large, 1u);
  std::printf("  slot overflow: 48K by slot + 48K by queue write: exact\n");
}

// Uploads through a described destination that would write outside it are refused before
// anything is written or recorded: WebGPU would otherwise reject the copy by invalidating the
// whole command buffer, losing every other upload of the frame. The good uploads of the same
// frame arrive exactly.
TEST_F(WebGpuRing, UploadsOutsideADescribedDestinationAreRefusedAndTheFrameStillArrives) {
  const BufferDestination buffer{dst_buffer(1 * K), 1 * K};
  const TextureDestination texture{dst_texture(64, 64, 1, WGPUTextureFormat_RGBA8Unorm),
                                   WGPUTextureFormat_RGBA8Unorm,
                                   {64, 64, 1},
                                   1};
  const std::vector<std::byte> bytes = random_bytes(256, 21);
  const std::vector<std::byte> big = random_bytes(128 * 128 * 4, 22);
  const std::vector<std::byte> texels = random_bytes(64 * 64 * 4, 23);

  StagingFrame frame = ring->begin(64 * K).value();
  ASSERT_EQ(frame.route(), Route::Ring);
  EXPECT_EQ(frame.upload(buffer, 4096, bytes.data(), bytes.size()).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(frame.upload(buffer, 900, bytes.data(), bytes.size()).error(),
            UploadError::OutOfBounds);
  EXPECT_EQ(frame.reserve(buffer, 1000, 100).error(), UploadError::OutOfBounds);
  TextureUpload region;
  region.extent = {128, 128, 1};
  EXPECT_EQ(frame.upload(texture, region, big.data(), big.size()).error(),
            UploadError::OutOfBounds);
  region.extent = {8, 8, 1};
  region.origin = {60, 60, 0};
  EXPECT_EQ(frame.upload(texture, region, big.data(), 8 * 8 * 4).error(), UploadError::OutOfBounds);
  region.origin = {0, 0, 3};
  EXPECT_EQ(frame.upload(texture, region, big.data(), 8 * 8 * 4).error(),
            UploadError::NoSuchSubresource);
  region.origin = {0, 0, 0};
  region.mip_level = 5;
  EXPECT_EQ(frame.upload(texture, region, big.data(), 8 * 8 * 4).error(),
            UploadError::NoSuchSubresource);
  region.mip_level = 0;
  region.format = WGPUTextureFormat_RGBA32Float;
  region.block = {16, 1, 1, 1};
  EXPECT_EQ(frame.upload(texture, region, big.data(), 8 * 8 * 16).error(),
            UploadError::FormatMismatch);
  EXPECT_EQ(frame.slot_bytes_used(), 0u);

  EXPECT_EQ(frame.upload(buffer, 768, bytes.data(), bytes.size()), Route::Ring);
  TextureUpload whole;
  whole.extent = {64, 64, 1};
  EXPECT_EQ(frame.upload(texture, whole, texels.data(), texels.size()), Route::Ring);
  submit_frame(frame);
  EXPECT_EQ(read_buffer(buffer.buffer, 768, bytes.size()), bytes);
  whole.texture = texture.texture;
  EXPECT_EQ(read_texture(whole), texels);
  std::printf("  7 uploads outside their destinations refused; the frame's 2 good ones exact\n");
}

// Three frames in flight: the fourth is refused (RingFull) and goes by queue writes; once the
// map callbacks ran, every slot is Ready and the next frame gets one.
TEST_F(WebGpuRing, AllInFlightRefusalAndRecovery) {
  StateTracker tracker;
  WGPUBuffer dst = dst_buffer(64 * K);
  std::vector<std::byte> expected(64 * K, std::byte{0});
  auto upload = [&](StagingFrame& f, int n) {
    const std::vector<std::byte> bytes = random_bytes(4 * K, 100 + n);
    const auto route = f.upload(dst, n * 4 * K, bytes.data(), bytes.size());
    std::memcpy(expected.data() + n * 4 * K, bytes.data(), bytes.size());
    return *route;
  };
  tracker.observe(*ring, "start");
  for (int n = 0; n < 3; ++n) {
    StagingFrame f = ring->begin(4 * K).value();
    ASSERT_EQ(f.route(), Route::Ring);
    EXPECT_EQ(upload(f, n), Route::Ring);
    tracker.observe(*ring, "frame " + std::to_string(n) + " recording");
    submit_frame(f);
    tracker.observe(*ring, "frame " + std::to_string(n) + " submitted");
    show("frame " + std::to_string(n) + " submitted (no event-loop turn):");
  }
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(ring->state(i), S::InFlight);
  StagingFrame refused = ring->begin(4 * K).value();
  ASSERT_EQ(refused.route(), Route::Fallback);
  EXPECT_EQ(refused.refusal(), UploadError::RingFull);
  EXPECT_EQ(upload(refused, 3), Route::Fallback);
  submit_frame(refused);
  show("frame 3: begin -> RingFull, queue writes:");
  ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
  tracker.observe(*ring, "after the map callbacks");
  show("after the map callbacks:");
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(ring->state(i), S::Ready);
  StagingFrame next = ring->begin(4 * K).value();
  EXPECT_EQ(next.route(), Route::Ring);
  EXPECT_EQ(upload(next, 4), Route::Ring);
  submit_frame(next);
  ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
  tracker.observe(*ring, "frame 4");
  EXPECT_EQ(read_buffer(dst, 0, expected.size()), expected);
  EXPECT_EQ(ring->stats().refusals_all_in_flight, 1u);
  EXPECT_EQ(ring->route_stats().maps_completed, 4u);
  tracker.print();
  EXPECT_TRUE(tracker.reached(S::InFlight));
  EXPECT_TRUE(tracker.recovered(S::InFlight));
  EXPECT_TRUE(tracker.reached(S::Ready));
}

// A frame larger than its slot grows the slot (powers of two, min 64K); bytes stay exact.
TEST_F(WebGpuRing, GrowthKeepsBytes) {
  WGPUBuffer dst = dst_buffer(1024 * K);
  const uint64_t sizes[] = {16 * K, 100 * K, 1000 * K, 40 * K};
  const uint64_t capacities[] = {64 * K, 128 * K, 1024 * K, 1024 * K};
  for (int n = 0; n < 4; ++n) {
    const std::vector<std::byte> bytes = random_bytes(sizes[n], 200 + n);
    StagingFrame f = ring->begin(*upload_footprint(sizes[n], BUFFER_PLACEMENT_ALIGNMENT)).value();
    ASSERT_EQ(f.route(), Route::Ring);
    EXPECT_EQ(f.slot(), 0u) << "the Ready slot is grown rather than an Empty one created";
    ASSERT_EQ(f.upload(dst, 0, bytes.data(), bytes.size()), Route::Ring);
    submit_frame(f);
    ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
    EXPECT_EQ(ring->capacity(0), capacities[n]);
    EXPECT_EQ(read_buffer(dst, 0, bytes.size()), bytes);
    show("frame of " + std::to_string(sizes[n] / K) + "K:");
  }
  EXPECT_EQ(ring->stats().slots_grown, 2u);
  EXPECT_EQ(ring->stats().slots_created, 1u);
}

// An encoder dropped without submit: the slot is Abandoned, then replaced by a fresh mapped
// buffer when picked; the dropped frame's copy never ran.
TEST_F(WebGpuRing, AbandonedEncoderIsReplaced) {
  StateTracker tracker;
  WGPUBuffer dst = dst_buffer(64 * K);
  const std::vector<std::byte> dropped = random_bytes(8 * K, 300);
  const std::vector<std::byte> kept = random_bytes(8 * K, 301);
  WGPUBuffer first_buffer = nullptr;
  {
    StagingFrame f = ring->begin(8 * K).value();
    ASSERT_EQ(f.route(), Route::Ring);
    first_buffer = ring->buffer(f.slot());
    ASSERT_EQ(f.upload(dst, 0, dropped.data(), dropped.size()), Route::Ring);
    WGPUCommandEncoder encoder = make_encoder();
    ASSERT_TRUE(f.finish(encoder).has_value());
    tracker.observe(*ring, "finished");
    show("finished, encoder about to be dropped:");
    wgpuCommandEncoderRelease(encoder);  // never submitted
  }  // the frame dies without submitted(): its FenceToken is dropped unfired
  tracker.observe(*ring, "encoder dropped");
  show("encoder dropped:");
  EXPECT_EQ(ring->state(0), S::Abandoned);
  EXPECT_EQ(ring->route_stats().frames_abandoned, 1u);
  pump(20);
  EXPECT_EQ(ring->state(0), S::Abandoned) << "nothing fires an abandoned slot's fence";

  StagingFrame f = ring->begin(8 * K).value();  // no Ready slot: the Abandoned one is replaced
  ASSERT_EQ(f.route(), Route::Ring);
  EXPECT_EQ(f.slot(), 0u);
  EXPECT_NE(ring->buffer(0), first_buffer) << "an Abandoned slot gets a fresh buffer";
  ASSERT_EQ(f.upload(dst, 32 * K, kept.data(), kept.size()), Route::Ring);
  submit_frame(f);
  ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
  tracker.observe(*ring, "replacement frame done");
  show("replacement frame done:");
  EXPECT_EQ(read_buffer(dst, 32 * K, kept.size()), kept);
  EXPECT_EQ(read_buffer(dst, 0, dropped.size()), std::vector<std::byte>(dropped.size()))
      << "the dropped encoder's copy must never run";
  EXPECT_EQ(ring->stats().abandoned_seen, 1u);
  EXPECT_EQ(ring->stats().slots_replaced, 1u);
  tracker.print();
  EXPECT_TRUE(tracker.reached(S::Abandoned));
  EXPECT_TRUE(tracker.recovered(S::Abandoned));
}

// The slot's buffer is destroyed while its re-map is pending: the map callback reports failure,
// the slot is Failed, and the next frame that picks it gets a fresh buffer.
TEST_F(WebGpuRing, FailedMappingIsReplaced) {
  StateTracker tracker;
  WGPUBuffer dst = dst_buffer(64 * K);
  const std::vector<std::byte> first = random_bytes(8 * K, 400);
  const std::vector<std::byte> second = random_bytes(8 * K, 401);
  {
    StagingFrame f = ring->begin(8 * K).value();
    ASSERT_EQ(f.upload(dst, 0, first.data(), first.size()), Route::Ring);
    submit_frame(f);
    tracker.observe(*ring, "submitted");
    show("submitted, re-map pending:");
    wgpuBufferDestroy(ring->buffer(f.slot()));  // forces the pending mapping to fail
  }
  ASSERT_TRUE(wait_until([&] { return ring->state(0) != S::InFlight; }));
  tracker.observe(*ring, "map callback");
  show("map callback after the buffer was destroyed:");
  EXPECT_EQ(ring->state(0), S::Failed);
  EXPECT_EQ(ring->route_stats().maps_failed, 1u);
  EXPECT_EQ(read_buffer(dst, 0, first.size()), first)
      << "a copy submitted before the destroy still ran";

  StagingFrame f = ring->begin(8 * K).value();
  ASSERT_EQ(f.route(), Route::Ring);
  EXPECT_EQ(f.slot(), 0u);
  ASSERT_EQ(f.upload(dst, 16 * K, second.data(), second.size()), Route::Ring);
  submit_frame(f);
  ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
  tracker.observe(*ring, "replacement frame done");
  show("replacement frame done:");
  EXPECT_EQ(ring->state(0), S::Ready);
  EXPECT_EQ(read_buffer(dst, 16 * K, second.size()), second);
  EXPECT_EQ(ring->stats().failed_seen, 1u);
  EXPECT_EQ(ring->stats().slots_replaced, 1u);
  tracker.print();
  EXPECT_TRUE(tracker.reached(S::Failed));
  EXPECT_TRUE(tracker.recovered(S::Failed));
}

// A frame dropped while recording: with nothing placed the slot is Ready at once; with bytes
// placed it is re-mapped (InFlight, then Ready) and none of its bytes reach their destination.
TEST_F(WebGpuRing, DroppedFrameIsRemapped) {
  WGPUBuffer dst = dst_buffer(64 * K);
  { StagingFrame empty = ring->begin(4 * K).value(); }
  EXPECT_EQ(ring->state(0), S::Ready);
  const std::vector<std::byte> dropped = random_bytes(4 * K, 500);
  const std::vector<std::byte> kept = random_bytes(4 * K, 501);
  {
    StagingFrame f = ring->begin(4 * K).value();
    ASSERT_EQ(f.upload(dst, 0, dropped.data(), dropped.size()), Route::Ring);
  }
  show("dropped while recording:");
  EXPECT_EQ(ring->state(0), S::InFlight);
  ASSERT_TRUE(wait_until([&] { return ring->state(0) == S::Ready; }));
  show("re-mapped:");
  StagingFrame f = ring->begin(4 * K).value();
  EXPECT_EQ(f.slot(), 0u);
  ASSERT_EQ(f.upload(dst, 0, kept.data(), kept.size()), Route::Ring)
      << "the re-mapped slot hands out its ranges again";
  submit_frame(f);
  EXPECT_EQ(read_buffer(dst, 0, kept.size()), kept);
  EXPECT_EQ(ring->route_stats().frames_dropped, 1u);
}

// Misuse is refused with an error value and changes nothing.
TEST_F(WebGpuRing, UploadErrors) {
  WGPUBuffer dst = dst_buffer(64 * K);
  const std::vector<std::byte> bytes = random_bytes(64, 600);
  StagingFrame f = ring->begin(K).value();
  EXPECT_EQ(f.upload(dst, 0, bytes.data(), 0).error(), UploadError::ZeroSize);
  EXPECT_EQ(f.upload(dst, 0, bytes.data(), 6).error(), UploadError::Misaligned);
  EXPECT_EQ(f.upload(dst, 2, bytes.data(), 8).error(), UploadError::Misaligned);
  EXPECT_EQ(f.upload(nullptr, 0, bytes.data(), 8).error(), UploadError::NullDestination);
  EXPECT_EQ(f.reserve(dst, 0, 128 * K).error(), UploadError::DoesNotFit);
  TextureUpload region;
  region.texture = dst_texture(4, 4, 1, WGPUTextureFormat_RGBA8Unorm);
  region.extent = {4, 4, 1};
  EXPECT_EQ(f.upload(region, bytes.data(), 60).error(), UploadError::SizeMismatch);
  EXPECT_EQ(f.submitted().error(), FinishError::NotFinished);
  ASSERT_EQ(f.upload(dst, 0, bytes.data(), bytes.size()), Route::Ring);
  EXPECT_EQ(f.finish(nullptr).error(), FinishError::NullEncoder);
  submit_frame(f);
  EXPECT_EQ(f.upload(dst, 0, bytes.data(), 8).error(), UploadError::Inactive);
  WGPUCommandEncoder unused = make_encoder();
  EXPECT_EQ(f.finish(unused).error(), FinishError::Inactive);
  wgpuCommandEncoderRelease(unused);
  EXPECT_EQ(f.submitted().error(), FinishError::Inactive);
  // Under Defer, begin() answers the refusal instead of falling back.
  auto defer = make_ring({.slots = 1, .min_slot_bytes = 64 * K, .max_slot_bytes = 64 * K},
                         ExhaustionPolicy::Defer);
  EXPECT_EQ(defer->begin(128 * K).error(), UploadError::TooLarge);
  EXPECT_EQ(defer->begin_fallback().route(), Route::Fallback);
  EXPECT_EQ(read_buffer(dst, 0, bytes.size()), bytes);
  // Slots are capped at 1 GiB: their mapped ranges are mirrored in the wasm heap.
  auto huge = make_ring(
      StagingRingConfig{.slots = 3, .min_slot_bytes = 64 * K, .max_slot_bytes = 1ull << 34});
  EXPECT_EQ(huge->slot_config().max_slot_bytes, MAX_MAPPABLE_SLOT_BYTES);
  // A browser frame cannot wait (map callbacks run only between frames) and slots grow by
  // themselves: the policies that would need either are refused at create().
  for (ExhaustionPolicy policy :
       {ExhaustionPolicy::Wait, ExhaustionPolicy::Split, ExhaustionPolicy::Grow}) {
    EXPECT_EQ(StagingRing::create(device(), RingConfig{.policy = policy}).error(),
              CreateError::UnsupportedPolicy);
  }
}

// 160 frames of mixed sizes through every path — submitted, bursts without an event-loop turn,
// dropped encoders, failed mappings, frames dropped while recording — with every byte checked
// against a shadow copy. Each of Ready, InFlight, Abandoned and Failed is reached and left.
TEST_F(WebGpuRing, ManyFramesReachEveryState) {
  constexpr uint64_t kDst = 1024 * K;
  WGPUBuffer dst = dst_buffer(kDst);
  std::vector<std::byte> expected(kDst, std::byte{0});
  StateTracker tracker;
  std::mt19937 gen(7);
  tracker.observe(*ring, "start");
  for (int frame = 0; frame < 160; ++frame) {
    const std::string step = "frame " + std::to_string(frame);
    enum { Submit, Abandon, Fail, Drop } action = Submit;
    if (frame % 19 == 7) action = Abandon;
    if (frame % 29 == 13) action = Fail;
    if (frame % 23 == 17) action = Drop;
    // Frames 7..10 of every 11 run without returning to the event loop: four frames, three slots.
    const bool burst = frame % 11 >= 7 && frame % 11 < 10;
    // 1..3 uploads into disjoint regions; sizes from 4 bytes to ~300K (growth past 64K, 128K,
    // 256K, 512K). Now and then a frame underestimates itself (needed = 8 bytes) with three
    // uploads of up to 60K, so one overflows its 64K slot to a queue write.
    const bool underestimate = frame % 17 == 3;
    const int count = underestimate ? 3 : 1 + static_cast<int>(gen() % 3);
    const uint64_t region = (kDst / count) & ~uint64_t{3};
    uint64_t needed = 0;
    std::vector<std::pair<uint64_t, std::vector<std::byte>>> uploads;
    for (int u = 0; u < count; ++u) {
      const uint64_t cap = underestimate ? 60 * K : frame % 13 == 5 ? 300 * K : 24 * K;
      const uint64_t max = std::min<uint64_t>(region, cap);
      const uint64_t size = underestimate ? max - 4 * (gen() % 1024) : 4 * (1 + gen() % (max / 4));
      const uint64_t offset = u * region + 4 * (gen() % ((region - size) / 4 + 1));
      uploads.emplace_back(offset, random_bytes(size, 10000 + frame * 4 + u));
      needed += *upload_footprint(size, BUFFER_PLACEMENT_ALIGNMENT);
    }
    if (underestimate) needed = 8;
    StagingFrame f = ring->begin(needed).value();
    std::vector<std::pair<uint64_t, const std::vector<std::byte>*>> slot_writes;
    for (const auto& [offset, bytes] : uploads) {
      const auto route = f.upload(dst, offset, bytes.data(), bytes.size());
      ASSERT_TRUE(route.has_value());
      if (*route == Route::Fallback)  // lands in queue order, whatever happens to the frame
        std::memcpy(expected.data() + offset, bytes.data(), bytes.size());
      else
        slot_writes.emplace_back(offset, &bytes);
    }
    tracker.observe(*ring, step + " recording");
    const bool slot_frame = f.route() == Route::Ring;
    if (action == Drop) {
      { StagingFrame gone = std::move(f); }  // dropped while recording
    } else if (action == Abandon && slot_frame) {
      WGPUCommandEncoder encoder = make_encoder();
      ASSERT_TRUE(f.finish(encoder).has_value());
      wgpuCommandEncoderRelease(encoder);
      { StagingFrame gone = std::move(f); }
    } else {
      submit_frame(f);
      for (const auto& [offset, bytes] : slot_writes)
        std::memcpy(expected.data() + offset, bytes->data(), bytes->size());
      if (action == Fail && slot_frame) wgpuBufferDestroy(ring->buffer(f.slot()));
    }
    tracker.observe(*ring, step);
    if (!burst) pump(gen() % 3);
    tracker.observe(*ring, step + " +event loop");
    if (frame % 20 == 19) {
      ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
      ASSERT_EQ(read_buffer(dst, 0, kDst), expected) << "after " << step;
      show(step + ", all bytes exact:");
    }
  }
  ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
  // Drain: three frames in one burst take every slot (Abandoned/Failed ones are replaced), then
  // every slot comes back Ready.
  for (int n = 0; n < 3; ++n) {
    StagingFrame f = ring->begin(4 * K).value();
    const std::vector<std::byte> bytes = random_bytes(4 * K, 90000 + n);
    const auto route = f.upload(dst, n * 4 * K, bytes.data(), bytes.size());
    ASSERT_TRUE(route.has_value());
    std::memcpy(expected.data() + n * 4 * K, bytes.data(), bytes.size());
    submit_frame(f);
  }
  tracker.observe(*ring, "drain");
  ASSERT_TRUE(wait_until([&] { return all_slots_settled(); }));
  tracker.observe(*ring, "end");
  show("end:");
  EXPECT_EQ(read_buffer(dst, 0, kDst), expected);
  for (std::size_t i = 0; i < ring->slot_count(); ++i)
    EXPECT_EQ(ring->state(i), S::Ready);
  const StagingStats& s = ring->stats();
  const RouteStats& r = ring->route_stats();
  std::printf(
      "  frames begun %llu, refused %llu (all-in-flight %llu), grown %llu, replaced %llu "
      "(abandoned %llu, failed %llu)\n  uploads by slot %llu, by queue write %llu "
      "(slot overflows %llu), maps %llu ok / %llu failed\n",
      (unsigned long long)s.frames_begun, (unsigned long long)s.refusals(),
      (unsigned long long)s.refusals_all_in_flight, (unsigned long long)s.slots_grown,
      (unsigned long long)s.slots_replaced, (unsigned long long)s.abandoned_seen,
      (unsigned long long)s.failed_seen, (unsigned long long)r.slot_uploads,
      (unsigned long long)r.queue_write_uploads, (unsigned long long)r.slot_overflows,
      (unsigned long long)r.maps_completed, (unsigned long long)r.maps_failed);
  tracker.print();
  for (S state : {S::InFlight, S::Abandoned, S::Failed}) {
    EXPECT_TRUE(tracker.reached(state)) << to_string(state);
    EXPECT_TRUE(tracker.recovered(state)) << to_string(state);
  }
  EXPECT_TRUE(tracker.reached(S::Ready));
  EXPECT_GT(s.refusals_all_in_flight, 0u);
  EXPECT_GT(s.slots_grown, 0u);
}

}  // namespace
}  // namespace staging::webgpu
