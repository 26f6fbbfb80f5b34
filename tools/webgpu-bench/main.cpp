// staging-webgpu-bench: the cost of Emscripten's heap mirror for mapped WebGPU buffers.
//
// Emscripten 3.1.6 cannot hand wasm a pointer into a mapped GPUBuffer (its memory is a separate
// ArrayBuffer), so wgpuBufferGetMappedRange mallocs a mirror in the wasm heap and
// wgpuBufferUnmap copies the mirror into the mapping and frees it. This measures, per size:
//   mirror  = GetMappedRange + Unmap (malloc, JS calls, the heap → mapping copy, free)
//   fill    = writing the bytes into the mirror (what any upload costs, mirror or not)
//   memcpy  = a plain copy of the same bytes inside the wasm heap (the memory-bandwidth baseline)
//   queue   = wgpuQueueWriteBuffer of the same bytes (the other route's CPU cost at call time)
//   frames  = CPU time of whole frames: through staging::webgpu::StagingRing (begin,
//             upload, finish, submit, submitted), by a queue write, and the encoder and
//             submit alone (what every frame pays anyway)
// Times are medians of several samples, each averaging many repetitions (performance.now() is
// coarse in a page that is not cross-origin isolated). Waiting for a slot's map callback is not
// timed: it is event-loop time, which a frame loop spends between frames. Prints; exits 0.
#include <emscripten.h>
#include <emscripten/html5_webgpu.h>
#include <webgpu/webgpu.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "staging/webgpu/webgpu.hpp"

namespace {

WGPUDevice g_device = nullptr;
// Called through a volatile pointer so the baseline copy cannot be optimised away.
void* (*volatile g_copy)(void*, const void*, size_t) = std::memcpy;

struct MapWait {
  bool done = false;
  bool ok = false;
};

void on_mapped(WGPUBufferMapAsyncStatus status, void* userdata) {
  auto* wait = static_cast<MapWait*>(userdata);
  wait->done = true;
  wait->ok = status == WGPUBufferMapAsyncStatus_Success;
}

bool map_write(WGPUBuffer buffer, uint64_t size) {
  MapWait wait;
  wgpuBufferMapAsync(buffer, WGPUMapMode_Write, 0, static_cast<size_t>(size), &on_mapped, &wait);
  while (!wait.done)
    emscripten_sleep(0);
  return wait.ok;
}

WGPUBuffer make_buffer(uint64_t size, WGPUBufferUsageFlags usage, bool mapped) {
  WGPUBufferDescriptor desc{};
  desc.usage = usage;
  desc.size = size;
  desc.mappedAtCreation = mapped;
  return wgpuDeviceCreateBuffer(g_device, &desc);
}

// Median over `samples` of the mean time of `reps` calls of `body`, in microseconds. `setup` runs
// before each call, untimed.
double measure_us(int samples, int reps, const std::function<void()>& setup,
                  const std::function<void()>& body) {
  std::vector<double> means;
  for (int s = 0; s < samples; ++s) {
    double total = 0;
    for (int r = 0; r < reps; ++r) {
      if (setup) setup();
      const double t0 = emscripten_get_now();
      body();
      total += emscripten_get_now() - t0;
    }
    means.push_back(total * 1000.0 / reps);
  }
  std::sort(means.begin(), means.end());
  return means[means.size() / 2];
}

double per_mib(double us, uint64_t bytes) {
  return us * (1024.0 * 1024.0) / static_cast<double>(bytes);
}

double mb_per_s(double us, uint64_t bytes) {
  return static_cast<double>(bytes) / us;  // bytes per µs == MB/s
}

// A mapped slot's GetMappedRange, fill and Unmap times, microseconds per call (medians).
struct MirrorTimes {
  double get_us = 0, fill_us = 0, unmap_us = 0;
};

// mirror: buffer mapped (untimed), then GetMappedRange + Unmap timed; the fill is separate.
// `mapped` says whether `slot` is mapped, before and after.
MirrorTimes measure_mirror(WGPUBuffer slot, uint64_t size, bool& mapped, int samples, int reps,
                           const std::vector<unsigned char>& source) {
  std::vector<double> g, u, f;
  for (int s = 0; s < samples; ++s) {
    double gt = 0, ut = 0, ft = 0;
    for (int r = 0; r < reps; ++r) {
      if (!mapped) mapped = map_write(slot, size);
      double t0 = emscripten_get_now();
      void* mirror = wgpuBufferGetMappedRange(slot, 0, static_cast<size_t>(size));
      double t1 = emscripten_get_now();
      std::memcpy(mirror, source.data(), static_cast<size_t>(size));
      double t2 = emscripten_get_now();
      wgpuBufferUnmap(slot);
      double t3 = emscripten_get_now();
      mapped = false;
      gt += t1 - t0;
      ft += t2 - t1;
      ut += t3 - t2;
    }
    g.push_back(gt * 1000 / reps);
    f.push_back(ft * 1000 / reps);
    u.push_back(ut * 1000 / reps);
  }
  std::sort(g.begin(), g.end());
  std::sort(f.begin(), f.end());
  std::sort(u.begin(), u.end());
  return {g[g.size() / 2], f[f.size() / 2], u[u.size() / 2]};
}

// The table's row of one size: mirror, fill, memcpy and queue write.
void mirror_row(WGPUQueue queue, uint64_t size, const std::vector<unsigned char>& source,
                std::vector<unsigned char>& scratch) {
  const int reps = size <= (1u << 20) ? 20 : 4;
  const int samples = 7;
  WGPUBuffer slot = make_buffer(size, staging::webgpu::STAGING_USAGE, true);
  bool mapped = true;
  const MirrorTimes m = measure_mirror(slot, size, mapped, samples, reps, source);
  const double memcpy_us = measure_us(samples, reps, nullptr, [&] {
    g_copy(scratch.data(), source.data(), static_cast<size_t>(size));
  });
  WGPUBuffer dst = make_buffer(size, WGPUBufferUsage_CopyDst, false);
  const double queue_us = measure_us(samples, reps, nullptr, [&] {
    wgpuQueueWriteBuffer(queue, dst, 0, source.data(), static_cast<size_t>(size));
  });
  const double mirror_us = m.get_us + m.unmap_us;
  std::printf("%6llu KiB | %10.1f %11.1f | %12.1f | %12.1f | %10.1f %11.1f\n",
              static_cast<unsigned long long>(size >> 10), mirror_us, per_mib(mirror_us, size),
              m.fill_us, memcpy_us, queue_us, per_mib(queue_us, size));
  std::printf("%9s   (GetMappedRange %.1f us, Unmap %.1f us; mirror %.0f MB/s, memcpy %.0f MB/s)\n",
              "", m.get_us, m.unmap_us, mb_per_s(mirror_us, size), mb_per_s(memcpy_us, size));
  wgpuBufferDestroy(dst);
  wgpuBufferRelease(dst);
  if (mapped) wgpuBufferUnmap(slot);
  wgpuBufferDestroy(slot);
  wgpuBufferRelease(slot);
}

// Many small mapped ranges (the ring maps one range per upload) versus one range.
void range_counts(const std::vector<unsigned char>& source) {
  constexpr uint64_t kSlot = 256u << 10;
  WGPUBuffer slot = make_buffer(kSlot, staging::webgpu::STAGING_USAGE, true);
  bool mapped = true;
  for (uint64_t piece : {uint64_t{1} << 10, uint64_t{16} << 10, kSlot}) {
    const uint64_t count = kSlot / piece;
    const double us = measure_us(
        7, 10,
        [&] {
          if (!mapped) mapped = map_write(slot, kSlot);
        },
        [&] {
          for (uint64_t k = 0; k < count; ++k) {
            void* p = wgpuBufferGetMappedRange(slot, static_cast<size_t>(k * piece),
                                               static_cast<size_t>(piece));
            std::memcpy(p, source.data(), static_cast<size_t>(piece));
          }
          wgpuBufferUnmap(slot);
          mapped = false;
        });
    std::printf("\n256 KiB as %4llu ranges of %3llu KiB: %8.1f us (%.2f us per range)",
                static_cast<unsigned long long>(count),
                static_cast<unsigned long long>(piece >> 10), us, us / count);
  }
  std::printf("\n");
  if (mapped) wgpuBufferUnmap(slot);
  wgpuBufferDestroy(slot);
  wgpuBufferRelease(slot);
}

// An (empty) encoder, finished and submitted; with a frame, the frame is finished into it and
// told it was submitted.
void submit_encoder(WGPUQueue queue, staging::webgpu::StagingFrame* frame) {
  WGPUCommandEncoderDescriptor ed{};
  WGPUCommandEncoder encoder = wgpuDeviceCreateCommandEncoder(g_device, &ed);
  if (frame != nullptr) (void)frame->finish(encoder);
  WGPUCommandBufferDescriptor cd{};
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, &cd);
  wgpuQueueSubmit(queue, 1, &commands);
  if (frame != nullptr) (void)frame->submitted();
  wgpuCommandBufferRelease(commands);
  wgpuCommandEncoderRelease(encoder);
}

// Untimed: a frame loop would wait for its next frame.
void wait_for_slot(const staging::webgpu::StagingRing& ring) {
  while (true) {
    for (std::size_t i = 0; i < ring.slot_count(); ++i)
      if (ring.state(i) != staging::SlotState::InFlight) return;
    emscripten_sleep(0);
  }
}

// Where a 64 KiB ring frame's time goes (means over 64 frames).
void frame_breakdown(staging::webgpu::StagingRing& ring, WGPUQueue queue,
                     const std::vector<unsigned char>& source) {
  constexpr uint64_t kSize = 64u << 10;
  constexpr int kFrames = 64;
  WGPUBuffer dst = make_buffer(kSize, WGPUBufferUsage_CopyDst, false);
  double t[6] = {};
  for (int f = 0; f < kFrames; ++f) {
    wait_for_slot(ring);
    const double a = emscripten_get_now();
    staging::webgpu::StagingFrame frame = ring.begin(kSize + 8).value();
    const double b = emscripten_get_now();
    (void)frame.upload(dst, 0, source.data(), kSize);
    const double c = emscripten_get_now();
    WGPUCommandEncoderDescriptor ed{};
    WGPUCommandEncoder encoder = wgpuDeviceCreateCommandEncoder(g_device, &ed);
    const double d = emscripten_get_now();
    (void)frame.finish(encoder);
    const double e = emscripten_get_now();
    WGPUCommandBufferDescriptor cd{};
    WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, &cd);
    wgpuQueueSubmit(queue, 1, &commands);
    const double g = emscripten_get_now();
    (void)frame.submitted();
    const double h = emscripten_get_now();
    wgpuCommandBufferRelease(commands);
    wgpuCommandEncoderRelease(encoder);
    t[0] += b - a;
    t[1] += c - b;
    t[2] += d - c;
    t[3] += e - d;
    t[4] += g - e;
    t[5] += h - g;
  }
  std::printf(
      "  64 KiB ring frame, mean us: begin %.1f, upload (GetMappedRange + copy) "
      "%.1f, create encoder %.1f,\n    finish (Unmap + record) %.1f, encoder finish + "
      "submit %.1f, submitted (MapAsync) %.1f\n",
      t[0] * 1000 / kFrames, t[1] * 1000 / kFrames, t[2] * 1000 / kFrames, t[3] * 1000 / kFrames,
      t[4] * 1000 / kFrames, t[5] * 1000 / kFrames);
  wgpuBufferDestroy(dst);
  wgpuBufferRelease(dst);
}

// Whole frames, CPU time per frame: through the ring (begin, upload, finish, submit,
// submitted), by a queue write plus the same (empty) encoder and submit, and the encoder and
// submit alone — what every frame pays anyway.
void frame_times(WGPUQueue queue, const std::vector<unsigned char>& source) {
  auto ring = std::move(*staging::webgpu::StagingRing::create(g_device));
  std::printf("\nCPU time per frame, one upload per frame (median of 7 x 8 frames):\n");
  std::printf("%9s | %12s | %14s | %14s\n", "size", "ring frame", "queue write", "submit alone");
  for (uint64_t size : {uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{4} << 20}) {
    WGPUBuffer dst = make_buffer(size, WGPUBufferUsage_CopyDst, false);
    const double ring_us = measure_us(
        7, 8, [&] { wait_for_slot(*ring); },
        [&] {
          staging::webgpu::StagingFrame frame = ring->begin(size + 8).value();
          (void)frame.upload(dst, 0, source.data(), size);
          submit_encoder(queue, &frame);
        });
    const double queue_us = measure_us(7, 8, nullptr, [&] {
      wgpuQueueWriteBuffer(queue, dst, 0, source.data(), static_cast<size_t>(size));
      submit_encoder(queue, nullptr);
    });
    const double submit_us = measure_us(7, 8, nullptr, [&] { submit_encoder(queue, nullptr); });
    std::printf("%6llu KiB | %9.1f us | %11.1f us | %11.1f us\n",
                static_cast<unsigned long long>(size >> 10), ring_us, queue_us, submit_us);
    wgpuBufferDestroy(dst);
    wgpuBufferRelease(dst);
  }
  frame_breakdown(*ring, queue, source);
  const auto& r = ring->route_stats();
  const auto& s = ring->stats();
  std::printf(
      "  (ring: uploads by slot %llu, by queue write %llu; slot buffers created %llu, "
      "grown %llu)\n",
      static_cast<unsigned long long>(r.slot_uploads),
      static_cast<unsigned long long>(r.queue_write_uploads),
      static_cast<unsigned long long>(s.slots_created),
      static_cast<unsigned long long>(s.slots_grown));
}

}  // namespace

int main() {
  g_device = emscripten_webgpu_get_device();
  if (g_device == nullptr) {
    std::printf("no WebGPU device\n");
    std::exit(1);
  }
  WGPUQueue queue = wgpuDeviceGetQueue(g_device);
  std::printf("Emscripten heap mirror of mapped WebGPU buffers (times per call; median)\n\n");
  std::printf("%9s | %22s | %12s | %12s | %22s\n", "size", "mirror (GetMR+Unmap)", "fill", "memcpy",
              "wgpuQueueWriteBuffer");
  std::printf("%9s | %10s %11s | %12s | %12s | %10s %11s\n", "", "us", "us/MiB", "us", "us", "us",
              "us/MiB");
  const uint64_t sizes[] = {64u << 10, 1u << 20, 4u << 20, 16u << 20};
  std::vector<unsigned char> source(16u << 20);
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<unsigned char>(i * 31 + 7);
  std::vector<unsigned char> scratch(16u << 20);
  for (uint64_t size : sizes)
    mirror_row(queue, size, source, scratch);
  range_counts(source);
  frame_times(queue, source);
  wgpuQueueRelease(queue);
  std::fflush(stdout);
  std::exit(0);
}
