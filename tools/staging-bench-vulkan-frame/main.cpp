// staging-bench-vulkan-frame: the CPU cost per upload of the Vulkan frame API on a real device
// (lavapipe here, the H200 there), without validation:
//
//   Ring/upload     StagingFrame::upload (placement, memcpy, bookkeeping) plus, amortized over
//                   the uploads of a frame (64, or 32 MiB worth), begin() and finish()'s
//                   recording of the batched copies and the barrier. Submission and GPU time are
//                   excluded (paused). "fallbacks" should stay 0.
//   Memcpy/mapped   the floor Ring/upload is measured against: the same bytes memcpy'd into the
//                   same kind of mapped staging memory at advancing offsets, over the same
//                   footprint (a frame's bytes per slot), nothing else. The
//                   ring's own cost per upload is Ring/upload minus Memcpy/mapped at each size.
//   OneOffBuffer    what the ring avoids: a staging buffer made, mapped, written and freed per
//                   upload (DefaultMemory: vkCreateBuffer + vkAllocateMemory + vkMapMemory + free).
//
// Run: build/bin/staging-bench-vulkan-frame [--benchmark_filter=...] [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "example_device.hpp"
#include "staging/detail/vulkan/default_memory.hpp"
#include "staging/vulkan.hpp"

namespace {

using namespace staging::vulkan;
// Uploads per frame: 64, fewer for large sizes (a frame stays <= 32 MiB, inside one slot).
int uploads_per_frame(uint64_t size) {
  return static_cast<int>(std::clamp<uint64_t>((uint64_t{32} << 20) / size, 1, 64));
}

example::Device& device() {
  static std::unique_ptr<example::Device> vk = [] {
    setenv("STAGING_VULKAN_VALIDATION", "off", 0);  // measure the library, not the layer
    auto d = std::make_unique<example::Device>(example::device_name_from_environment());
    if (d->ok()) std::fprintf(stderr, "device: %s\n", d->describe().c_str());
    return d;
  }();
  return *vk;
}

void ring_upload(benchmark::State& state) {
  example::Device& vk = device();
  if (!vk.ok()) {
    state.SkipWithError(vk.why().c_str());
    return;
  }
  const auto size = static_cast<uint64_t>(state.range(0));
  const int per_frame = uploads_per_frame(size);
  Ring ring = Ring::create(vk.staging_device()).value();
  example::Buffer dst = vk.make_buffer(per_frame * size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, false);
  const std::vector<std::byte> data(size, std::byte{0x5a});
  const uint64_t needed = per_frame * ring.buffer_footprint(size);
  const Visibility visibility{.stages = VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT,
                              .access = VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT,
                              .prior_stages = VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT};
  VkCommandBuffer cmd = vk.begin_commands();
  StagingFrame frame = ring.begin(cmd, needed).value();
  int i = 0;
  const auto submit = [&] {  // paused: the GPU's part
    const RetirementPoint point = frame.finish(visibility).value();
    state.PauseTiming();
    vk.submit(cmd, point.submit_info());
    (void)ring.wait(point, std::chrono::seconds(10));
    vk.free_commands(cmd);
    cmd = vk.begin_commands();
    state.ResumeTiming();
  };
  for (auto _ : state) {
    (void)frame.upload(dst.buffer, static_cast<uint64_t>(i) * size, data);
    if (++i == per_frame) {
      submit();
      frame = ring.begin(cmd, needed).value();
      i = 0;
    }
  }
  if (i > 0) {  // the last, partial frame (untimed: the loop is over)
    const RetirementPoint point = frame.finish(visibility).value();
    vk.submit(cmd, point.submit_info());
    (void)ring.wait(point, std::chrono::seconds(10));
  } else {
    frame = StagingFrame();
  }
  vk.free_commands(cmd);
  vk.destroy(dst);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
  state.counters["fallbacks"] =
      static_cast<double>(ring.stats().oneoff_uploads + ring.stats().update_buffer_uploads);
}

void oneoff_buffer(benchmark::State& state) {
  example::Device& vk = device();
  if (!vk.ok()) {
    state.SkipWithError(vk.why().c_str());
    return;
  }
  const auto size = static_cast<uint64_t>(state.range(0));
  const staging::vulkan::Device d = vk.staging_device();
  DefaultMemory memory(d.physical_device, d.device, d.dispatch);
  const std::vector<std::byte> data(size, std::byte{0x5a});
  for (auto _ : state) {
    const StagingMemory m = memory.allocate(size).value();
    std::memcpy(m.mapped, data.data(), size);
    memory.release(m);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}

void memcpy_mapped(benchmark::State& state) {
  example::Device& vk = device();
  if (!vk.ok()) {
    state.SkipWithError(vk.why().c_str());
    return;
  }
  const auto size = static_cast<uint64_t>(state.range(0));
  // The footprint Ring/upload cycles through: a frame's bytes in each of the ring's slots.
  const uint64_t span =
      staging::STAGING_SLOTS * static_cast<uint64_t>(uploads_per_frame(size)) * size;
  const staging::vulkan::Device d = vk.staging_device();
  DefaultMemory memory(d.physical_device, d.device, d.dispatch);
  const StagingMemory m = memory.allocate(span).value();
  const std::vector<std::byte> data(size, std::byte{0x5a});
  uint64_t at = 0;
  for (auto _ : state) {
    std::memcpy(static_cast<std::byte*>(m.mapped) + at, data.data(), size);
    benchmark::ClobberMemory();
    at = at + size == span ? 0 : at + size;
  }
  memory.release(m);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}

BENCHMARK(ring_upload)->Name("Ring/upload")->Arg(64)->Arg(256)->Arg(4096)->Arg(65536)->Arg(1 << 20);
BENCHMARK(memcpy_mapped)
    ->Name("Memcpy/mapped")
    ->Arg(64)
    ->Arg(256)
    ->Arg(4096)
    ->Arg(65536)
    ->Arg(1 << 20);
BENCHMARK(oneoff_buffer)->Name("OneOffBuffer")->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);

}  // namespace
