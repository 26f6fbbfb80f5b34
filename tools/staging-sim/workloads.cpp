#include "workloads.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

namespace staging::sim {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * 1024;

// splitmix64: the same sequence on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed ^ 0x5DEECE66Dull) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  uint64_t range(uint64_t lo, uint64_t hi) { return lo + next() % (hi - lo + 1); }
  /// True with probability p.
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t state_;
};

// Builds a workload's upload list; kinds are named once and referred to by index.
class Builder {
 public:
  explicit Builder(uint64_t seed) : rng(seed) {}
  Rng rng;

  void add(Duration t, uint64_t size, uint64_t alignment, std::string_view k, int64_t frame,
           uint64_t granularity = 1, RelativeSize rel = RelativeSize::None) {
    w_.uploads.push_back(Upload{t, size, alignment, w_.kind_id(k), frame, granularity, rel});
  }
  // A texture of `rows` rows of `pitch` bytes: split granularity is the row pitch.
  void texture(Duration t, uint64_t pitch, uint64_t rows, int64_t frame,
               std::string_view k = "texture") {
    add(t, pitch * rows, 512, k, frame, pitch);
  }
  void stall(Duration at, Duration length) { w_.stalls.push_back({at, length}); }
  Workload done() {
    std::stable_sort(w_.uploads.begin(), w_.uploads.end(),
                     [](const Upload& a, const Upload& b) { return a.time < b.time; });
    return std::move(w_);
  }

 private:
  Workload w_;
};

constexpr Duration kFrame = microseconds(16667);  // 60 Hz

// One ordinary frame's uploads: constants, dynamic vertex/instance data, sometimes a texture
// update. About 0.7 MiB on average.
void ordinary_frame(Builder& b, int64_t frame, Duration start) {
  Duration t = start;
  const auto step = [&] { t += microseconds(b.rng.range(20, 120)); };
  for (uint64_t i = 0, n = b.rng.range(4, 12); i < n; ++i, step()) {
    b.add(t, b.rng.range(256, 4 * KiB), 256, "constants", frame);
  }
  for (uint64_t i = 0, n = b.rng.range(2, 6); i < n; ++i, step()) {
    b.add(t, b.rng.range(16 * KiB, 256 * KiB) & ~uint64_t{15}, 16, "vertices", frame);
  }
  if (b.rng.chance(0.3)) {
    for (uint64_t i = 0, n = b.rng.range(1, 2); i < n; ++i, step()) {
      const uint64_t pitch = uint64_t{1} << b.rng.range(9, 12);  // 128..1024 px x 4 B
      b.texture(t, pitch, b.rng.range(64, 256), frame);
    }
  }
}

// A large asset of about `bytes`: mostly a texture (row-pitch granularity), sometimes a mesh.
void asset(Builder& b, Duration t, uint64_t bytes) {
  if (b.rng.chance(0.7)) {
    const uint64_t pitch = 16 * KiB;  // 4096 px x 4 B
    b.texture(t, pitch, std::max<uint64_t>(1, bytes / pitch), -1, "asset-texture");
  } else {
    b.add(t, bytes & ~uint64_t{15}, 16, "asset-mesh", -1);
  }
}

uint64_t asset_size(Rng& rng) {
  const uint64_t roll = rng.range(0, 99);
  if (roll < 70) return rng.range(256 * KiB, 4 * MiB);
  if (roll < 95) return rng.range(4 * MiB, 24 * MiB);
  return rng.range(40 * MiB, 48 * MiB);  // larger than the default ring, within the cap
}

// A burst of `n` assets starting at `t`, 0.2 ms apart.
void asset_burst(Builder& b, Duration t, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    asset(b, t + microseconds(200 * i), asset_size(b.rng));
  }
}

// One open-world chunk's uploads: heightmap, meshes, textures, collision data.
void chunk(Builder& b, Duration t) {
  const auto step = [&] { t += microseconds(b.rng.range(50, 150)); };
  b.add(t, 256 * KiB, 256, "heightmap", -1);
  step();
  for (uint64_t i = 0, n = b.rng.range(2, 6); i < n; ++i, step()) {
    b.add(t, b.rng.range(32 * KiB, 512 * KiB) & ~uint64_t{15}, 16, "chunk-mesh", -1);
  }
  for (uint64_t i = 0, n = b.rng.range(1, 4); i < n; ++i, step()) {
    const uint64_t pitch = uint64_t{1} << b.rng.range(10, 12);  // 256..1024 px x 4 B
    b.texture(t, pitch, pitch / 4, -1, "chunk-texture");
  }
  b.add(t, b.rng.range(16 * KiB, 128 * KiB) & ~uint64_t{15}, 16, "collision", -1);
}

// Chunks at a rate that changes as the player walks (one per 100 ms) or drives (one per 25 ms).
void chunk_stream(Builder& b, Duration from, Duration to) {
  Duration t = from;
  bool driving = false;
  Duration phase_end = from;
  while (t < to) {
    if (t >= phase_end) {
      driving = b.rng.chance(0.4);
      phase_end = t + milliseconds(b.rng.range(500, 2000));
    }
    chunk(b, t);
    t += milliseconds(driving ? b.rng.range(15, 35) : b.rng.range(70, 130));
  }
}

void frames_steady(Builder& b, Duration duration) {
  int64_t f = 0;
  for (Duration t{0}; t < duration; t += kFrame, ++f)
    ordinary_frame(b, f, t);
}

void frames_bursty(Builder& b, Duration duration) {
  int64_t f = 0;
  Duration next_burst = milliseconds(b.rng.range(500, 1500));
  int64_t burst_left = 0;
  for (Duration t{0}; t < duration; t += kFrame, ++f) {
    ordinary_frame(b, f, t);
    if (burst_left == 0 && t >= next_burst) {
      burst_left = static_cast<int64_t>(b.rng.range(5, 20));
      next_burst = t + milliseconds(b.rng.range(1000, 2000));
    }
    if (burst_left > 0) {
      --burst_left;
      Duration u = t + milliseconds(5);
      for (uint64_t i = 0, n = b.rng.range(2, 6); i < n; ++i, u += microseconds(100)) {
        b.texture(u, 8 * KiB, b.rng.range(128, 512), f, "streamed-texture");  // 1-4 MiB
      }
    }
  }
}

void asset_bursts(Builder& b, Duration duration) {
  for (Duration t = milliseconds(10); t < duration; t += milliseconds(b.rng.range(400, 900))) {
    asset_burst(b, t, b.rng.range(4, 12));
  }
}

void chunk_streaming(Builder& b, Duration duration) {
  chunk_stream(b, Duration{0}, duration);
}

void sizes_edge(Builder& b, Duration duration) {
  for (Duration t{0}; t < duration; t += milliseconds(2)) {
    b.add(t, b.rng.range(64 * KiB, 2 * MiB), b.rng.chance(0.5) ? 256 : 16, "background", -1);
  }
  struct Probe {
    RelativeSize rel;
    uint64_t size;
    uint64_t alignment;
  };
  static constexpr Probe kProbes[] = {
      {RelativeSize::FreeMinusOne, 0, 1},
      {RelativeSize::Free, 0, 1},
      {RelativeSize::FreePlusOne, 0, 1},
      {RelativeSize::Capacity, 0, 1},
      {RelativeSize::CapacityPlusOne, 0, 1},
      {RelativeSize::TwiceCapacity, 0, 256},
      {RelativeSize::None, 1, 1},
      {RelativeSize::None, 7, 3},
      {RelativeSize::None, 4096, 4096},
      {RelativeSize::Free, 0, 256},
      {RelativeSize::FreeMinusOne, 0, 12},
  };
  std::size_t i = 0;
  for (Duration t = milliseconds(25); t < duration; t += milliseconds(50), ++i) {
    const Probe& p = kProbes[i % std::size(kProbes)];
    b.add(t + microseconds(1), p.size, p.alignment, "probe", -1, 1, p.rel);
  }
}

void stalled_queue(Builder& b, Duration duration) {
  chunk_stream(b, Duration{0}, duration);
  for (Duration t = milliseconds(100); t < duration; t += milliseconds(b.rng.range(300, 600))) {
    asset(b, t + microseconds(8000), b.rng.range(512 * KiB, 6 * MiB));
  }
  const auto at = [&](double fraction) {
    return Duration{static_cast<Duration::rep>(static_cast<double>(duration.count()) * fraction)};
  };
  b.stall(at(0.2), milliseconds(250));
  b.stall(at(0.5), milliseconds(1500));
  b.stall(at(0.8), milliseconds(60));
}

void mixed(Builder& b, Duration duration) {
  frames_steady(b, duration);
  chunk_stream(b, milliseconds(3), duration);
  for (Duration t = milliseconds(700); t < duration; t += milliseconds(b.rng.range(1500, 2500))) {
    asset_burst(b, t, b.rng.range(3, 6));
  }
}

// The built-in workloads, in the order --compare runs them.
struct Spec {
  std::string_view name;
  std::string_view description;
  std::string_view delay;  // the delay model it is meant for
  void (*build)(Builder&, Duration);
};
constexpr Spec kWorkloads[] = {
    {"frames-steady",
     "60 Hz frames of constants, vertex data and texture updates (~0.7 MiB a frame)",
     "random:2ms:12ms", frames_steady},
    {"frames-bursty",
     "60 Hz frames with bursts of 5-20 heavy frames (2-6 textures of 1-4 MiB, ~10 MiB a frame) "
     "every 1-2 s; every 7th submission takes 40 ms",
     "bursty:2ms:40ms:6", frames_bursty},
    {"asset-burst",
     "bursts of 4-12 assets (256 KiB-48 MiB, some larger than the ring) every 0.4-0.9 s",
     "random:4ms:20ms", asset_bursts},
    {"chunk-stream",
     "open-world chunks (heightmap, meshes, textures, collision; ~6 MiB) every 25-130 ms",
     "random:1ms:8ms", chunk_streaming},
    {"sizes-edge",
     "background uploads keep the ring wrapped; every 50 ms a probe smaller than, equal to or "
     "larger than the contiguous free region, the capacity, 2x the capacity, or tiny with odd "
     "alignments",
     "random:1ms:6ms", sizes_edge},
    {"stalled-queue",
     "chunk and asset streaming while the queue stalls: 250 ms at 20%, 1.5 s at 50% and 60 ms at "
     "80% of the run",
     "random:2ms:10ms", stalled_queue},
    {"mixed", "60 Hz frames + open-world chunk streaming + an asset burst every ~2 s",
     "random:2ms:12ms", mixed},
};

}  // namespace

const std::vector<std::string_view>& workload_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const Spec& w : kWorkloads)
      out.push_back(w.name);
    return out;
  }();
  return names;
}

std::optional<Workload> make_workload(std::string_view name, uint64_t seed, Duration duration) {
  for (const Spec& spec : kWorkloads) {
    if (spec.name != name) continue;
    Builder b(seed);
    spec.build(b, duration);
    Workload w = b.done();
    w.name = spec.name;
    w.description = spec.description;
    w.default_delay = parse_delay(spec.delay, seed, nullptr);
    return w;
  }
  return std::nullopt;
}

}  // namespace staging::sim
