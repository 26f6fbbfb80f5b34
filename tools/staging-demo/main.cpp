// staging-demo: a short scripted session of the slot ring on a fake device, printing the
// slots' states after every step and the ring's stats at the end. Needs no GPU. The slot ring is
// the engine under vulkan::Ring (a slot ring, the default) and webgpu::StagingRing, not API: this
// demo shows its states, as staging-sim shows the rings' timelines.
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <string>

#include "cli.hpp"
#include "exception_exit.hpp"
#include "staging/core.hpp"
#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

namespace {

using staging::FenceToken;
using staging::SlotState;
using Ring = staging::StagingRing<staging::testing::FakeBuffer>;

void show(const Ring& ring, const char* what) {
  std::printf("%-44s", what);
  for (std::size_t i = 0; i < ring.slot_count(); ++i) {
    const uint64_t kib = ring.capacity(i) >> 10;
    std::printf(" [%-9s %5" PRIu64 "K]", std::string(staging::to_string(ring.state(i))).c_str(),
                kib);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"staging-demo: the slot ring in a scripted session on a fake device (no GPU).",
               "staging-demo"};
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;

  staging::testing::FakeSlotAllocator allocator;
  std::deque<FenceToken> gpu;  // frames the fake GPU is still reading, oldest first
  auto made = Ring::create(allocator);
  if (!made) return 1;
  Ring ring = std::move(*made);

  std::printf("staging-demo: the slot ring (%zu slots, %" PRIu64 " KiB..%" PRIu64
              " MiB) on a fake device\n\n",
              ring.slot_count(), staging::MIN_SLOT_BYTES >> 10, staging::MAX_SLOT_BYTES >> 20);
  show(ring, "new ring (slots created on first use)");

  const auto frame = [&](uint64_t bytes, const char* label) {
    auto lease = ring.begin(bytes);
    if (!lease) {
      std::printf("%-44s -> refused (%s): fall back to queue writes\n", label,
                  std::string(staging::to_string(lease.error())).c_str());
      return;
    }
    for (uint64_t left = bytes; left > 0;) {  // a handful of uploads, back to back
      const uint64_t piece = left < 4096 ? left : 4096;
      if (!lease->place(piece, staging::BUFFER_COPY_ALIGNMENT)) break;
      left -= piece;
    }
    gpu.push_back(std::move(*ring.finish(std::move(*lease))));
    show(ring, label);
  };

  frame(40 << 10, "frame 1: 40 KiB");
  frame(40 << 10, "frame 2: 40 KiB");
  gpu.front().signal();
  gpu.pop_front();
  show(ring, "GPU finished frame 1");
  frame(40 << 10, "frame 3: 40 KiB (reuses slot 0)");
  frame(300 << 10, "frame 4: 300 KiB (creates slot 2 at 512K)");
  // Every slot is in flight. The caller looks at its queue before beginning a frame (the ring
  // asks nobody): the GPU has just finished its oldest frame, whose token it fires.
  gpu.front().signal();
  gpu.pop_front();
  frame(40 << 10, "frame 5: all in flight, polled -> slot 1");
  gpu.clear();  // the caller drops every queued command buffer unsubmitted: tokens die unfired
  show(ring, "frames dropped unsubmitted (abandoned)");
  frame(100 << 10, "frame 6: abandoned slot replaced");
  frame(staging::MAX_SLOT_BYTES + 1, "frame 7: larger than MAX_SLOT_BYTES");
  while (!gpu.empty()) {
    gpu.front().signal();
    gpu.pop_front();
  }
  show(ring, "GPU idle");

  std::printf("\nstats:\n%s", staging::format_stats(ring.stats()).c_str());
  return 0;
} catch (...) {
  return staging::tools::exception_exit("staging-demo");
}
