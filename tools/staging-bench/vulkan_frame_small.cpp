// frame-small: frames of many small uploads into one device-local buffer, on the graphics queue,
// `frames_in_flight` frames in flight, through five routes:
//   ring-slots  staging::vulkan::Ring, a slot ring (the default): begin, upload() each, finish
//   ring-bytes  the same with a byte ring (each upload one byte-ring reservation)
//               (both also on HOST_CACHED staging memory where the device has such a type apart
//               from the default one: rows "ring-slots/cached", "ring-bytes/cached")
//   oneoff      what wgpu's Queue::write_buffer does: per upload a staging buffer (DefaultMemory:
//               vkCreateBuffer + vkAllocateMemory + bind + vkMapMemory), memcpy, vkCmdCopyBuffer;
//               freed (unmap, vkFreeMemory, vkDestroyBuffer) once the frame has retired
//   update      vkCmdUpdateBuffer per upload (legal: <= 65536 bytes, multiples of 4)
//   handmade    the staging ring an engine writes by hand, without the library: one persistently
//               mapped buffer per frame in flight (the ring's default memory type), each upload
//               memcpy'd at the next offset aligned to optimalBufferCopyOffsetAlignment, one
//               vkCmdCopyBuffer of all the frame's regions. Its memcpy share is what writing
//               staging memory the device has just read costs: the floor of any staging ring,
//               which the ring routes are judged against (target: at most 150 ns above it)
//   shared      writer threads (--small-writers, one row each: "shared/N") uploading into one
//               frame at once through StagingFrame::share() and SharedWriter::upload(), each
//               writer the workload's COUNT uploads to its own part of the destination (a frame
//               of N writers holds N x COUNT uploads), on the default staging memory; beside each
//               row the same threads only memcpy'ing the same uploads into mapped staging memory
//               of that type (the floor of N writers)
// Every route records one barrier before the uploads (earlier draws and copies of the same
// buffer) and one after (to the vertex and fragment stages).
//
// CPU time per upload: the time from before begin() to after finish() (ring; shared: the writers'
// phase included, wall time, divided by every writer's uploads), or of the whole
// recording (oneoff, update, handmade) — plus, for oneoff, the time spent freeing the frame's
// buffers once it retired — divided by the uploads; median over frames. Submission,
// vkBeginCommandBuffer and the GPU are excluded. The memcpy share: the same uploads memcpy'd into
// mapped staging memory (measured apart, in bulk, into a buffer nothing else touches); oneoff
// times its own memcpy into each fresh buffer (first-touch page faults included), handmade its
// memcpy loop into the buffers the device reads. Frames per second: frames / wall time of the
// measured frames, GPU included. Objects created: vkCreateBuffer / vkAllocateMemory calls through
// the ring's dispatch table during the measured frames (after a warm-up that holds its first frames
// on a GPU gate, so that the ring reaches its full frames in flight). After the measured frames,
// one more frame with new data is read back and compared byte for byte.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "crew.hpp"
#include "staging/detail/vulkan/default_memory.hpp"
#include "vulkan_commands.hpp"
#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {
namespace {

using namespace staging::vulkan;

// The largest upload the per-upload CPU target (a hand-written ring's memcpy + 150 ns) is judged
// for.
constexpr uint64_t kSmallUpload = 4 * KiB;

struct Workload {
  uint32_t count = 0;
  uint64_t size = 0;
  std::string label;
};

std::optional<Workload> parse_workload(const std::string& s) {
  const auto x = s.find('x');
  if (x == std::string::npos) return std::nullopt;
  try {
    Workload w;
    w.count = static_cast<uint32_t>(std::stoul(s.substr(0, x)));
    w.size = std::stoull(s.substr(x + 1));
    if (w.count == 0 || w.size == 0) return std::nullopt;
    w.label = s;
    return w;
  } catch (...) {
    return std::nullopt;
  }
}

std::string pretty_bytes(uint64_t b) {
  if (b % MiB == 0) return std::to_string(b / MiB) + " MiB";
  if (b % KiB == 0) return std::to_string(b / KiB) + " KiB";
  return std::to_string(b) + " B";
}

constexpr VkPipelineStageFlags2 kConsumers = VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT |
                                             VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT |
                                             VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT;
constexpr VkAccessFlags2 kConsumerAccess = VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT |
                                           VK_ACCESS_2_UNIFORM_READ_BIT |
                                           VK_ACCESS_2_SHADER_READ_BIT;
// Earlier users of the destination: last frames' draws (write-after-read) and copies
// (write-after-write).
constexpr Visibility kVisibility{.stages = kConsumers,
                                 .access = kConsumerAccess,
                                 .prior_stages = kConsumers | VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
                                 .prior_access = VK_ACCESS_2_TRANSFER_WRITE_BIT};

// The same two barriers the ring records, as global barriers (oneoff and update routes).
void barrier_before(VkCommandBuffer cmd) {
  support::memory_barrier(cmd, {kVisibility.prior_stages, kVisibility.prior_access},
                          {VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT});
}
void barrier_after(VkCommandBuffer cmd) {
  support::memory_barrier(cmd,
                          {VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT},
                          {kConsumers, kConsumerAccess});
}

// One frame slot: its command buffer, the point its last submission signals, and (oneoff) the
// staging buffers that frame made.
struct Slot {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  RetirementPoint point;
  std::vector<StagingMemory> oneoffs;
};

// The staging memory of a ring route.
struct MemoryChoice {
  std::string name;              // system, cached
  std::optional<uint32_t> type;  // none: the ring's own DefaultMemory
};

struct LoopResult {
  std::vector<double> cpu_s;  // per measured frame: recording (+ freeing, oneoff)
  double free_s = 0;          // oneoff: freeing time, measured frames
  double wall_s = 0;
  uint64_t frames = 0;
  ObjectCounts created;  // during the measured frames
  bool failed = false;
};

// A ring route's frames split in three (three clock reads a frame): begin() (route shared: and
// share()), the uploads (placement + memcpy + bookkeeping; route shared: the writers' round),
// finish() (recording the copies and barriers); seconds per frame.
struct Phases {
  std::vector<double> begin_s, upload_s, finish_s;

  // finish()es `frame`, begun at t0, its uploads from t1 to t2, and records the three phases.
  // The point its submission signals, or none with `error` set.
  std::optional<RetirementPoint> finish(StagingFrame& frame, Clock::time_point t0,
                                        Clock::time_point t1, Clock::time_point t2,
                                        std::string& error) {
    auto point = frame.finish(kVisibility);
    const auto t3 = Clock::now();
    begin_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    upload_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    finish_s.push_back(std::chrono::duration<double>(t3 - t2).count());
    if (!point) {
      error = "finish: " + std::string(to_string(point.error()));
      return std::nullopt;
    }
    return *point;
  }
};

// Records one frame into `cmd` (begun); returns the point its submission must signal, or none on
// failure. Timed.
using RecordFn = std::function<std::optional<RetirementPoint>(Slot&)>;
// Called once a slot's point is reached, before its command buffer is reused. Timed.
using RetireFn = std::function<void(Slot&)>;

class SmallBench {
 public:
  SmallBench(Context& vk, const CommonOptions& common, const VulkanOptions& options, Report& report)
      : vk_(vk), common_(common), o_(options), report_(report) {}

  ~SmallBench() {
    vkDeviceWaitIdle(vk_.device());
    for (Slot& s : slots_)
      vk_.free_commands(vk_.graphics(), s.cmd);
    if (semaphore_ != VK_NULL_HANDLE) vkDestroySemaphore(vk_.device(), semaphore_, nullptr);
    vk_.destroy(dst_);
    vk_.destroy(readback_);
    vk_.destroy(scratch_);
  }
  SmallBench(const SmallBench&) = delete;
  SmallBench& operator=(const SmallBench&) = delete;

  int run() {
    const VkSemaphoreTypeCreateInfo type{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                         .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    const VkSemaphoreCreateInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                     .pNext = &type};
    vkCreateSemaphore(vk_.device(), &info, nullptr, &semaphore_);
    gate_ = vk_.make_timeline();
    slots_.resize(std::max(1u, o_.frames_in_flight));
    for (Slot& s : slots_)
      s.cmd = vk_.allocate_commands(vk_.graphics());

    std::vector<Workload> workloads;
    for (const std::string& s : o_.small_workloads) {
      const auto w = parse_workload(s);
      if (!w) {
        std::fprintf(stderr, "staging-bench: bad --small-workloads entry '%s' (COUNTxBYTES)\n",
                     s.c_str());
        return 1;
      }
      workloads.push_back(*w);
    }
    report_.context("frame_small_frames_in_flight", slots_.size());
    report_.context("frame_small_queue",
                    "graphics (family " + std::to_string(vk_.graphics().family) + ")");
    for (const std::string& m : o_.small_memory) {
      if (m == "system") {
        memories_.push_back({"system", std::nullopt});
      } else if (m == "cached") {
        if (const auto t = vk_.cached_type()) {
          memories_.push_back({"cached", t});
          report_.context("frame_small_cached_memory", vk_.type_flags(*t));
        } else {
          report_.note(
              "frame-small: no HOST_CACHED system memory type apart from the default "
              "staging one; 'cached' skipped");
        }
      } else {
        std::fprintf(stderr, "staging-bench: unknown --small-memory entry '%s'\n", m.c_str());
        return 1;
      }
    }
    for (const Workload& w : workloads) {
      if (int rc = workload(w); rc != 0) return rc;
    }
    targets(workloads);
    summary(workloads);
    return failures_;
  }

 private:
  int workload(const Workload& w) {
    // The destination, its read-back and the source hold the most writers' uploads (route shared).
    const uint64_t one = uint64_t{w.count} * w.size;  // one frame of the other routes
    const uint64_t bytes = one * max_writers();
    vk_.destroy(dst_);
    vk_.destroy(readback_);
    vk_.destroy(scratch_);
    dst_ = vk_.make_buffer(bytes,
                           VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                               VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
                           Memory::DeviceLocal);
    readback_ = vk_.make_buffer(bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, Memory::Readback);
    scratch_ = vk_.make_buffer(one * 2, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, Memory::Staging);
    if (dst_.buffer == VK_NULL_HANDLE || readback_.mapped == nullptr ||
        scratch_.mapped == nullptr) {
      std::fprintf(stderr, "staging-bench: cannot make frame-small buffers (%" PRIu64 " bytes)\n",
                   bytes);
      return 1;
    }
    source_.resize(bytes);
    fill_random(source_.data(), bytes, ++seed_);
    const double memcpy_ns = memcpy_reference(w, scratch_.mapped, scratch_.size);
    std::map<std::string, double> memcpy_by_memory;
    for (const MemoryChoice& m : memories_) {
      if (!m.type) {
        memcpy_by_memory[m.name] = memcpy_ns;
        continue;
      }
      TypedMemory hook(vk_, *m.type);
      auto scratch = hook.allocate(one * 2);
      if (!scratch) {
        std::fprintf(stderr, "staging-bench: cannot allocate %s staging memory\n", m.name.c_str());
        return 1;
      }
      memcpy_by_memory[m.name] = memcpy_reference(w, scratch->mapped, scratch->size);
      hook.release(*scratch);
    }
    for (const std::string& route : o_.small_routes) {
      int rc = 0;
      if (route == "ring-slots" || route == "ring-bytes") {
        for (const MemoryChoice& m : memories_) {
          rc = route_ring(w, /*byte_ring=*/route == "ring-bytes", m, memcpy_by_memory[m.name]);
          if (rc != 0) break;
        }
      } else if (route == "oneoff") {
        rc = route_oneoff(w);
      } else if (route == "update") {
        rc = route_update(w, memcpy_ns);
      } else if (route == "handmade") {
        rc = route_handmade(w);
      } else if (route == "shared") {
        for (const unsigned writers : o_.small_writers) {
          rc = route_shared(w, writers);
          if (rc != 0) break;
        }
      } else {
        std::fprintf(stderr, "staging-bench: unknown frame-small route '%s'\n", route.c_str());
        return 1;
      }
      if (rc != 0) return rc;
    }
    return 0;
  }

  // The memcpy share: the frame's uploads memcpy'd into mapped staging memory (the type the ring
  // uses) at the ring's aligned offsets, frame after frame; ns per upload, median over frames
  // (after one untimed frame that touches every page).
  double memcpy_reference(const Workload& w, std::byte* scratch, uint64_t capacity) {
    const uint64_t stride = (w.size + 255) & ~uint64_t{255};
    const uint64_t per_frame = std::min<uint64_t>(w.count, capacity / stride);
    const auto frame = [&] {
      for (uint64_t i = 0; i < per_frame; ++i)
        std::memcpy(scratch + i * stride, source_.data() + i * w.size, w.size);
    };
    return ns_per_upload(frame, per_frame);
  }

  // Runs `frame` (`uploads` uploads) once untimed (every page touched), then at least 20 times
  // and for at least a quarter of min_seconds; the median ns per upload.
  double ns_per_upload(const std::function<void()>& frame, uint64_t uploads) {
    frame();
    std::vector<double> per_upload;
    const auto t_start = Clock::now();
    const double budget = std::max(0.02, common_.min_seconds / 4);
    while (per_upload.size() < 20 || seconds_since(t_start) < budget) {
      const auto t0 = Clock::now();
      frame();
      per_upload.push_back(seconds_since(t0) / static_cast<double>(uploads) * 1e9);
    }
    return median(per_upload);
  }

  // Runs `warmup` frames, then measured frames until min_seconds and min_reps frames (at most
  // max_frames), `frames_in_flight` in flight; drains at the end. When the warm-up has at least
  // frames_in_flight frames, the first frames_in_flight of them wait on the GPU for a gate the
  // host opens once they are all submitted: the ring sees its most frames in flight during the
  // warm-up (a slot ring makes its slots lazily, as concurrency needs them) and the measured
  // frames are its steady state.
  LoopResult run_frames(unsigned warmup, uint64_t min_frames, uint64_t max_frames,
                        double min_seconds, const RecordFn& record, const RetireFn& retire) {
    LoopResult r;
    ObjectCounts at_start{};
    Clock::time_point measure_start;
    const bool hold = warmup >= slots_.size();
    const uint64_t gate = hold ? ++gate_value_ : 0;
    bool gate_open = !hold;
    const VkSemaphoreSubmitInfo gate_wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                          .semaphore = gate_,
                                          .value = gate,
                                          .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
    const auto open_gate = [&] {
      if (!gate_open) vk_.signal(gate_, gate);
      gate_open = true;
    };
    const auto wait_slot = [&](Slot& s) -> bool {
      if (s.point.semaphore == VK_NULL_HANDLE) return true;
      const VkSemaphoreWaitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                     .semaphoreCount = 1,
                                     .pSemaphores = &s.point.semaphore,
                                     .pValues = &s.point.value};
      if (vkWaitSemaphores(vk_.device(), &wait, uint64_t{30} * 1000000000) != VK_SUCCESS) {
        std::fprintf(stderr, "staging-bench: frame-small: a frame did not finish in 30 s\n");
        return false;
      }
      s.point = {};
      return true;
    };
    for (uint64_t n = 0;; ++n) {
      const bool measured = n >= warmup;
      if (n == warmup) {
        at_start = Context::counts();
        measure_start = Clock::now();
      }
      if (measured) {
        const uint64_t done = n - warmup;
        if (done >= max_frames ||
            (done >= min_frames && seconds_since(measure_start) >= min_seconds)) {
          break;
        }
      }
      if (n == slots_.size()) open_gate();
      Slot& slot = slots_[n % slots_.size()];
      if (!wait_slot(slot)) {
        r.failed = true;
        break;
      }
      const auto t_free = Clock::now();
      retire(slot);
      const double free_s = seconds_since(t_free);
      Context::begin(slot.cmd);
      const auto t0 = Clock::now();
      const std::optional<RetirementPoint> point = record(slot);
      const double cpu = seconds_since(t0);
      if (!point) {
        vkEndCommandBuffer(slot.cmd);
        vkResetCommandBuffer(slot.cmd, 0);
        r.failed = true;
        break;
      }
      const VkSemaphoreSubmitInfo signal = point->submit_info();
      vk_.submit(vk_.graphics(), slot.cmd, &signal, gate_open ? nullptr : &gate_wait);
      slot.point = *point;
      if (measured) {
        r.cpu_s.push_back(cpu + free_s);
        r.free_s += free_s;
        ++r.frames;
      }
    }
    open_gate();
    for (Slot& s : slots_) {
      if (!wait_slot(s)) r.failed = true;
      retire(s);
    }
    r.wall_s = seconds_since(measure_start);
    const ObjectCounts at_end = Context::counts();
    r.created = {at_end.buffers - at_start.buffers, at_end.memories - at_start.memories};
    return r;
  }

  // The most writers of route shared (1 when it is not run).
  uint64_t max_writers() const {
    if (std::find(o_.small_routes.begin(), o_.small_routes.end(), "shared") ==
            o_.small_routes.end() ||
        o_.small_writers.empty()) {
      return 1;
    }
    return *std::max_element(o_.small_writers.begin(), o_.small_writers.end());
  }

  // One frame with new data, then the destination's first w.count * w.size bytes read back and
  // compared.
  bool check(const Workload& w, const RecordFn& record, const RetireFn& retire) {
    fill_random(source_.data(), source_.size(), ++seed_);
    const LoopResult r = run_frames(0, 1, 1, 0, record, retire);
    if (r.failed) return false;
    const uint64_t bytes = uint64_t{w.count} * w.size;
    if (!vk_.run_once(vk_.graphics(), [&](VkCommandBuffer cmd) {
          const VkBufferCopy region{0, 0, bytes};
          vkCmdCopyBuffer(cmd, dst_.buffer, readback_.buffer, 1, &region);
        })) {
      return false;
    }
    return !first_difference(readback_.mapped, source_.data(), bytes, 1).has_value();
  }

  void add_row(const Workload& w, const std::string& route, const LoopResult& r, double memcpy_ns,
               bool checked, const nlohmann::json& extra = nlohmann::json::object()) {
    const uint64_t bytes = uint64_t{w.count} * w.size;
    const double frame_s = median(r.cpu_s);
    const double per_upload_ns = frame_s / w.count * 1e9;
    double sum = 0;
    for (double s : r.cpu_s)
      sum += s;
    Row row;
    row.section = "frame-small";
    row.bytes = bytes;
    row.reps = static_cast<unsigned>(r.frames);
    row.gbps = frame_s > 0 ? static_cast<double>(bytes) / frame_s / 1e9 : 0;
    const double best = r.cpu_s.empty() ? 0 : *std::min_element(r.cpu_s.begin(), r.cpu_s.end());
    row.gbps_best = best > 0 ? static_cast<double>(bytes) / best / 1e9 : 0;
    row.fields["workload"] = w.label;
    row.fields["route"] = route;
    row.fields["cpu_ns"] = per_upload_ns;
    row.fields["cpu_ns_mean"] =
        r.frames ? sum / static_cast<double>(r.frames) / w.count * 1e9 : 0.0;
    row.fields["memcpy_ns"] = memcpy_ns;
    row.fields["other_ns"] = std::max(0.0, per_upload_ns - memcpy_ns);
    for (const auto& [key, value] : extra.items())
      row.fields[key] = value;
    row.fields["fps"] = r.wall_s > 0 ? static_cast<double>(r.frames) / r.wall_s : 0.0;
    row.fields["buffers_created"] = r.created.buffers;
    row.fields["memory_created"] = r.created.memories;
    row.fields["check"] = checked ? "ok" : "MISMATCH";
    results_[{w.label, route}] = {per_upload_ns, memcpy_ns, r.created.buffers + r.created.memories,
                                  row.fields["fps"].get<double>()};
    if (std::find(labels_.begin(), labels_.end(), route) == labels_.end()) labels_.push_back(route);
    report_.add(std::move(row));
    if (!checked) {
      std::fprintf(stderr, "staging-bench: frame-small %s %s: read back differs\n", w.label.c_str(),
                   route.c_str());
      ++failures_;
    }
  }

  // The device's optimalBufferCopyOffsetAlignment (at least 1): where the ring places uploads.
  uint64_t copy_alignment() const {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(vk_.staging_device().physical_device, &props);
    return std::max<uint64_t>(1, props.limits.optimalBufferCopyOffsetAlignment);
  }

  // Per-frame seconds of a route's recorded frames as ns per upload: the median of the measured
  // frames (the warm-up ones, run_frames' first frames_in_flight + 1, dropped).
  double measured_ns(std::vector<double> per_frame, const Workload& w) const {
    const std::size_t skip = std::min(per_frame.size(), slots_.size() + 1);
    per_frame.erase(per_frame.begin(), per_frame.begin() + static_cast<std::ptrdiff_t>(skip));
    return median(per_frame) / w.count * 1e9;
  }

  // A ring route's measured phases, ns per upload of `w` (begin_ns, upload_ns, finish_ns).
  nlohmann::json phases_ns(const Phases& p, const Workload& w) const {
    return {{"begin_ns", measured_ns(p.begin_s, w)},
            {"upload_ns", measured_ns(p.upload_s, w)},
            {"finish_ns", measured_ns(p.finish_s, w)}};
  }

  // A ring route's frames: warm-up (frames in flight + 1), then measured frames; none (reported,
  // with `error`) when one failed.
  std::optional<LoopResult> run_ring_frames(const Workload& w, const std::string& route,
                                            const RecordFn& record, const std::string& error) {
    LoopResult r = run_frames(static_cast<unsigned>(slots_.size()) + 1, common_.min_reps,
                              uint64_t{1} << 20, common_.min_seconds, record, [](Slot&) {});
    if (!r.failed) return r;
    std::fprintf(stderr, "staging-bench: frame-small %s %s failed: %s\n", w.label.c_str(),
                 route.c_str(), error.c_str());
    return std::nullopt;
  }

  // A route's ring: the slot ring (the default) or a byte ring, Defer, the memory hook (null: the
  // default memory).
  staging::vulkan::RingConfig ring_config(const Workload& w, bool byte_ring,
                                          MemoryHook* hook) const {
    staging::vulkan::RingConfig config;
    config.policy = staging::ExhaustionPolicy::Defer;
    config.memory = hook;
    // Byte ring: frames in flight + 1 frames (--small-byte-ring-frames), each at its worst-case
    // footprint. run_frames waits for frame n - frames_in_flight before recording frame n, so at
    // most frames_in_flight frames hold bytes at once: never the limit. The same footprint the
    // slot ring cycles through (one slot per frame in flight): the CPU writes the same amount of
    // memory per cycle on both routes, and a larger ring only spreads the writes over more
    // memory (more cache and TLB misses per upload, nothing gained).
    const uint64_t frame_bytes = w.count * (w.size + copy_alignment() - 1);
    const unsigned ring_frames = o_.small_byte_ring_frames != 0
                                     ? o_.small_byte_ring_frames
                                     : static_cast<unsigned>(slots_.size()) + 1;
    if (byte_ring) {
      config.strategy = staging::ByteRingConfig{
          .capacity = std::max<uint64_t>(uint64_t{ring_frames} * frame_bytes, 64 * KiB),
          .policy = staging::ExhaustionPolicy::Defer};
    }
    return config;
  }

  // Ring::create(config); none (reported) when it fails.
  std::optional<Ring> make_ring(const staging::vulkan::RingConfig& config) {
    auto made = Ring::create(vk_.staging_device(), config);
    if (made) return std::move(*made);
    std::fprintf(stderr, "staging-bench: Ring::create: %s\n",
                 std::string(to_string(made.error())).c_str());
    return std::nullopt;
  }

  int route_ring(const Workload& w, bool byte_ring, const MemoryChoice& memory, double memcpy_ns) {
    std::unique_ptr<TypedMemory> hook;
    if (memory.type) hook = std::make_unique<TypedMemory>(vk_, *memory.type);
    const staging::vulkan::RingConfig config = ring_config(w, byte_ring, hook.get());
    std::optional<Ring> made = make_ring(config);
    if (!made) return 1;
    Ring& ring = *made;
    const uint64_t frame_bytes = w.count * ring.buffer_footprint(w.size);
    Phases phases;
    const std::string route = std::string(byte_ring ? "ring-bytes" : "ring-slots") +
                              (memory.type ? "/" + memory.name : "");
    std::string error;
    const RecordFn record = [&](Slot& slot) -> std::optional<RetirementPoint> {
      const auto t0 = Clock::now();
      auto frame = ring.begin(slot.cmd, frame_bytes);
      const auto t1 = Clock::now();
      if (!frame) {
        error = "begin: " + std::string(to_string(frame.error()));
        return std::nullopt;
      }
      for (uint32_t i = 0; i < w.count; ++i) {
        auto up =
            frame->upload(dst_.buffer, uint64_t{i} * w.size, source_.data() + i * w.size, w.size);
        if (!up) [[unlikely]] {
          error = "upload: " + std::string(to_string(up.error()));
          return std::nullopt;
        }
      }
      return phases.finish(*frame, t0, t1, Clock::now(), error);
    };
    const RetireFn retire = [](Slot&) {};
    const std::optional<LoopResult> r = run_ring_frames(w, route, record, error);
    if (!r) return 1;
    const bool ok = !o_.check || check(w, record, retire);
    count_fallbacks(ring, w, route);
    nlohmann::json extra = phases_ns(phases, w);
    if (byte_ring) {
      extra["byte_ring_kib"] =
          static_cast<double>(std::get<staging::ByteRingConfig>(config.strategy).capacity) / KiB;
    }
    add_row(w, route, *r, memcpy_ns, ok, extra);
    if (ring.memory_type() && !memory.type) memory_type_ = vk_.type_flags(*ring.memory_type());
    return 0;
  }

  // Uploads that fell back from the ring (none expected: its frames are sized for them) fail
  // the route.
  void count_fallbacks(Ring& ring, const Workload& w, const std::string& route) {
    const Stats s = ring.stats();
    if (s.oneoff_uploads + s.update_buffer_uploads != 0) {
      std::fprintf(stderr, "staging-bench: frame-small %s %s: %" PRIu64 " uploads fell back\n",
                   w.label.c_str(), route.c_str(), s.oneoff_uploads + s.update_buffer_uploads);
      ++failures_;
    }
  }

  int route_oneoff(const Workload& w) {
    const staging::vulkan::Device d = vk_.staging_device();
    DefaultMemory memory(d.physical_device, d.device, d.dispatch);
    std::vector<double> memcpy_s;  // per frame recorded (the first one is the warm-up)
    bool failed = false;
    const RecordFn record = [&](Slot& slot) -> std::optional<RetirementPoint> {
      memcpy_s.push_back(0);
      barrier_before(slot.cmd);
      for (uint32_t i = 0; i < w.count; ++i) {
        auto m = memory.allocate(w.size);
        if (!m) {
          failed = true;
          return std::nullopt;
        }
        const auto t0 = Clock::now();
        std::memcpy(m->mapped, source_.data() + i * w.size, w.size);
        memcpy_s.back() += seconds_since(t0);
        if (!m->coherent && !memory.flush(*m, 0, w.size)) {
          memory.release(*m);
          failed = true;
          return std::nullopt;
        }
        const VkBufferCopy region{0, uint64_t{i} * w.size, w.size};
        vkCmdCopyBuffer(slot.cmd, m->buffer, dst_.buffer, 1, &region);
        slot.oneoffs.push_back(*m);
      }
      barrier_after(slot.cmd);
      return RetirementPoint{semaphore_, ++value_};
    };
    const RetireFn retire = [&](Slot& slot) {
      for (const StagingMemory& m : slot.oneoffs)
        memory.release(m);
      slot.oneoffs.clear();
    };
    // A few frames only: each upload costs about a millisecond on real drivers.
    LoopResult r =
        run_frames(1, std::max(2u, common_.min_reps), 50, common_.min_seconds, record, retire);
    if (r.failed || failed) {
      std::fprintf(stderr, "staging-bench: frame-small %s oneoff failed (allocation)\n",
                   w.label.c_str());
      return 1;
    }
    memcpy_s.erase(memcpy_s.begin());  // the warm-up frame
    const double memcpy_ns = median(memcpy_s) / w.count * 1e9;
    const bool ok = !o_.check || check(w, record, retire);
    add_row(
        w, "oneoff", r, memcpy_ns, ok,
        {{"free_ns", r.frames ? r.free_s / static_cast<double>(r.frames) / w.count * 1e9 : 0.0}});
    return 0;
  }

  int route_update(const Workload& w, double memcpy_ns) {
    if (w.size > 65536 || w.size % 4 != 0) {
      report_.note("frame-small " + w.label +
                   ": vkCmdUpdateBuffer not legal (size > 65536 or not a multiple of 4)");
      return 0;
    }
    const RecordFn record = [&](Slot& slot) -> std::optional<RetirementPoint> {
      barrier_before(slot.cmd);
      for (uint32_t i = 0; i < w.count; ++i) {
        vkCmdUpdateBuffer(slot.cmd, dst_.buffer, uint64_t{i} * w.size, w.size,
                          source_.data() + i * w.size);
      }
      barrier_after(slot.cmd);
      return RetirementPoint{semaphore_, ++value_};
    };
    const RetireFn retire = [](Slot&) {};
    const LoopResult r = run_frames(static_cast<unsigned>(slots_.size()) + 1, common_.min_reps,
                                    uint64_t{1} << 20, common_.min_seconds, record, retire);
    if (r.failed) return 1;
    const bool ok = !o_.check || check(w, record, retire);
    add_row(w, "update", r, memcpy_ns, ok);
    return 0;
  }

  // The hand-written ring (see the file comment): the memcpy loop timed as a whole, apart from
  // the regions and the one vkCmdCopyBuffer.
  int route_handmade(const Workload& w) {
    const staging::vulkan::Device d = vk_.staging_device();
    const uint64_t align = copy_alignment();
    const uint64_t stride = (w.size + align - 1) / align * align;
    DefaultMemory memory(d.physical_device, d.device, d.dispatch);
    std::vector<StagingMemory> buffers;  // one per slot
    const auto release = [&] {
      for (const StagingMemory& m : buffers)
        memory.release(m);
    };
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      auto m = memory.allocate(stride * w.count);
      if (!m) {
        release();
        std::fprintf(stderr, "staging-bench: frame-small handmade: cannot allocate staging\n");
        return 1;
      }
      std::memset(m->mapped, 0x5a, m->size);  // touched once, as a ring's memory is after warm-up
      buffers.push_back(*m);
    }
    std::vector<VkBufferCopy> regions(w.count);
    std::vector<double> memcpy_s;  // per frame recorded
    std::size_t next = 0;
    const RecordFn record = [&](Slot& slot) -> std::optional<RetirementPoint> {
      const StagingMemory& m = buffers[next++ % buffers.size()];
      barrier_before(slot.cmd);
      const auto t0 = Clock::now();
      for (uint32_t i = 0; i < w.count; ++i)
        std::memcpy(m.mapped + i * stride, source_.data() + i * w.size, w.size);
      memcpy_s.push_back(seconds_since(t0));
      for (uint32_t i = 0; i < w.count; ++i)
        regions[i] = {i * stride, uint64_t{i} * w.size, w.size};
      if (!m.coherent && !memory.flush(m, 0, stride * w.count)) return std::nullopt;
      vkCmdCopyBuffer(slot.cmd, m.buffer, dst_.buffer, w.count, regions.data());
      barrier_after(slot.cmd);
      return RetirementPoint{semaphore_, ++value_};
    };
    const RetireFn retire = [](Slot&) {};
    const LoopResult r = run_frames(static_cast<unsigned>(slots_.size()) + 1, common_.min_reps,
                                    uint64_t{1} << 20, common_.min_seconds, record, retire);
    if (r.failed) {
      release();
      return 1;
    }
    const double memcpy_ns = measured_ns(memcpy_s, w);
    const bool ok = !o_.check || check(w, record, retire);
    release();
    add_row(w, "handmade", r, memcpy_ns, ok);
    return 0;
  }

  // Route shared (see the file comment): `writers` threads of a Crew (at a barrier between
  // frames), each joining the frame's shared space and uploading the workload's uploads to its own
  // part of the destination; the owner begins the frame, shares the space, releases the writers
  // and finishes the frame once every one has left.
  int route_shared(const Workload& w, unsigned writers) {
    std::optional<Ring> made = make_ring(ring_config(w, /*byte_ring=*/false, nullptr));
    if (!made) return 1;
    Ring& ring = *made;
    // Every writer's uploads and, per writer, one block it may leave unused (a writer that
    // finishes while another holds the bytes after its last block strands that block's end) and
    // one upload's alignment.
    const uint64_t footprint = ring.buffer_footprint(w.size);
    const uint64_t space =
        writers * (w.count * footprint + SharedUploads::kDefaultBlockBytes + 2 * footprint);
    const uint64_t frame_bytes = ring.buffer_footprint(space);
    SharedUploads current;  // set by the owner before each round
    std::mutex error_lock;
    std::string error;
    const auto fail = [&](const char* what, UploadError e) {
      const std::lock_guard lock(error_lock);
      if (error.empty()) error = std::string(what) + ": " + std::string(to_string(e));
    };
    Crew crew(writers, [&](unsigned t) {
      auto writer = current.join();
      if (!writer) return fail("join", writer.error());
      for (uint64_t i = uint64_t{t} * w.count, end = i + w.count; i < end; ++i) {
        auto up =
            writer->upload(dst_.buffer, i * w.size, std::span(source_.data() + i * w.size, w.size));
        if (!up) [[unlikely]] {
          return fail("upload", up.error());
        }
      }
      writer->leave();
    });
    Phases phases;
    const RecordFn record = [&](Slot& slot) -> std::optional<RetirementPoint> {
      const auto t0 = Clock::now();
      auto frame = ring.begin(slot.cmd, frame_bytes);
      if (!frame) {
        error = "begin: " + std::string(to_string(frame.error()));
        return std::nullopt;
      }
      auto shared = frame->share(space);
      if (!shared) {
        error = "share: " + std::string(to_string(shared.error()));
        return std::nullopt;
      }
      current = *shared;
      const auto t1 = Clock::now();
      crew.round();
      const auto t2 = Clock::now();
      current = {};
      if (!error.empty()) return std::nullopt;
      return phases.finish(*frame, t0, t1, t2, error);
    };
    const RetireFn retire = [](Slot&) {};
    const std::string route = "shared/" + std::to_string(writers);
    const std::optional<LoopResult> r = run_ring_frames(w, route, record, error);
    if (!r) return 1;
    Workload all = w;  // the frame's uploads: every writer's
    all.count = w.count * writers;
    const bool ok = !o_.check || check(all, record, retire);
    const double memcpy_ns = crew_memcpy_ns(w, writers, footprint);
    count_fallbacks(ring, w, route);
    const double cpu_ns = median(r->cpu_s) / all.count * 1e9;
    nlohmann::json extra = phases_ns(phases, all);
    extra["writers"] = writers;
    extra["uploads_per_s"] = cpu_ns > 0 ? 1e9 / cpu_ns : 0.0;
    extra["memcpy_uploads_per_s"] = memcpy_ns > 0 ? 1e9 / memcpy_ns : 0.0;
    extra["of_memcpy"] = cpu_ns > 0 ? memcpy_ns / cpu_ns : 0.0;
    if (const auto one = results_.find({w.label, "shared/1"}); one != results_.end()) {
      extra["x_one_writer"] = cpu_ns > 0 ? one->second.cpu_ns / cpu_ns : 0.0;
    }
    add_row(all, route, *r, memcpy_ns, ok, extra);
    return 0;
  }

  // The floor of route shared with `writers`: the same threads each memcpy'ing the workload's
  // uploads, `stride` apart, into its own part of a mapped staging buffer of the ring's default
  // memory type, frame after frame; ns per upload over all threads (ns_per_upload).
  double crew_memcpy_ns(const Workload& w, unsigned writers, uint64_t stride) {
    Buffer scratch = vk_.make_buffer(stride * w.count * writers, VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                     Memory::Staging);
    if (scratch.mapped == nullptr) return 0;
    Crew crew(writers, [&](unsigned t) {
      std::byte* out = scratch.mapped + uint64_t{t} * w.count * stride;
      const std::byte* in = source_.data() + uint64_t{t} * w.count * w.size;
      for (uint64_t i = 0; i < w.count; ++i)
        std::memcpy(out + i * stride, in + i * w.size, w.size);
    });
    const double ns = ns_per_upload([&] { crew.round(); }, w.count * writers);
    vk_.destroy(scratch);
    return ns;
  }

  void targets(const std::vector<Workload>& workloads) {
    char buf[512];
    for (const Workload& w : workloads) {
      const auto oneoff = results_.find({w.label, "oneoff"});
      if (oneoff == results_.end()) continue;
      for (const std::string& label : labels_) {
        if (label.rfind("ring", 0) != 0) continue;
        const char* route = label.c_str();
        const auto ring = results_.find({w.label, label});
        if (ring == results_.end()) continue;
        const double ratio = oneoff->second.cpu_ns / ring->second.cpu_ns;
        const double ring_other = std::max(1.0, ring->second.cpu_ns - ring->second.memcpy_ns);
        const double oneoff_other = std::max(0.0, oneoff->second.cpu_ns - oneoff->second.memcpy_ns);
        std::snprintf(buf, sizeof buf,
                      "%.0fx: %s %.0f ns per upload (memcpy %.0f ns of it) vs one-off buffer "
                      "%.1f us; without the memcpy %.0fx",
                      ratio, route, ring->second.cpu_ns, ring->second.memcpy_ns,
                      oneoff->second.cpu_ns / 1e3, oneoff_other / ring_other);
        report_.target("frame-small " + w.label + " " + label +
                           " CPU per upload >= 1000x lower than a staging buffer per upload",
                       ratio >= 1000, buf);
      }
    }
    // The ring's own cost over the floor: its CPU per upload against the hand-written ring's
    // memcpy of the same bytes into staging memory the device has read. Judged for uploads up to
    // kSmallUpload; above it a frame holds a few uploads and its fixed costs (begin, barriers)
    // divided among them are not a cost per upload.
    for (const Workload& w : workloads) {
      const auto hand = results_.find({w.label, "handmade"});
      if (hand == results_.end()) continue;
      for (const std::string& label : labels_) {
        if (label.rfind("ring", 0) != 0 || label.find('/') != std::string::npos) continue;
        const auto ring = results_.find({w.label, label});
        if (ring == results_.end()) continue;
        const double over = ring->second.cpu_ns - hand->second.memcpy_ns;
        std::snprintf(buf, sizeof buf,
                      "%s %.0f ns per upload; a hand-written ring %.0f ns, its memcpy %.0f ns "
                      "(%.0f ns above it; memcpy into untouched memory %.0f ns)",
                      label.c_str(), ring->second.cpu_ns, hand->second.cpu_ns,
                      hand->second.memcpy_ns, over, ring->second.memcpy_ns);
        const std::string what = "frame-small " + w.label + " " + label +
                                 " CPU per upload <= a hand-written ring's memcpy + 150 ns";
        if (w.size <= kSmallUpload) {
          report_.target(what, over <= 150, buf);
        } else {  // a frame's fixed costs over a few large uploads: no per-upload target
          report_.note(what + " (not judged above 4 KiB): " + buf);
        }
      }
    }
    uint64_t created = 0;
    std::string where;
    for (const auto& [key, r] : results_) {
      if (key.second.rfind("ring", 0) != 0) continue;
      created += r.created;
      if (r.created) where += " " + key.first + "/" + key.second;
    }
    std::snprintf(buf, sizeof buf,
                  "%" PRIu64 " vkCreateBuffer/vkAllocateMemory calls by the ring%s", created,
                  where.empty() ? " after warm-up" : where.c_str());
    report_.target("frame-small ring creates no buffer or memory object in steady state",
                   created == 0, buf);
  }

  void summary(const std::vector<Workload>& workloads) {
    char line[256];
    std::snprintf(line, sizeof line, "frame-small summary, CPU ns per upload (fps); staging %s",
                  memory_type_.c_str());
    report_.note(line);
    std::string head = "  workload    ";
    for (const std::string& route : labels_) {
      std::snprintf(line, sizeof line, " %22s", route.c_str());
      head += line;
    }
    report_.note(head);
    for (const Workload& w : workloads) {
      std::snprintf(line, sizeof line, "  %-12s", w.label.c_str());
      std::string s = line;
      for (const std::string& route : labels_) {
        const auto r = results_.find({w.label, route});
        if (r == results_.end()) {
          std::snprintf(line, sizeof line, " %22s", "-");
        } else {
          std::snprintf(line, sizeof line, " %12.0f (%6.0f)", r->second.cpu_ns, r->second.fps);
        }
        s += line;
      }
      report_.note(s + "   [" + pretty_bytes(w.size) + " uploads]");
    }
  }

  struct Result {
    double cpu_ns = 0;
    double memcpy_ns = 0;
    uint64_t created = 0;
    double fps = 0;
  };

  Context& vk_;
  const CommonOptions& common_;
  const VulkanOptions& o_;
  Report& report_;
  std::vector<Slot> slots_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  uint64_t value_ = 0;
  VkSemaphore gate_ = VK_NULL_HANDLE;  // holds the warm-up's first frames (run_frames)
  uint64_t gate_value_ = 0;
  Buffer dst_, readback_, scratch_;
  std::vector<std::byte> source_;
  uint64_t seed_ = 7;
  std::map<std::pair<std::string, std::string>, Result> results_;
  std::vector<std::string> labels_;  // routes measured, in order
  std::vector<MemoryChoice> memories_;
  std::string memory_type_ = "?";
  int failures_ = 0;
};

}  // namespace

int run_frame_small(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                    Report& report) {
  SmallBench bench(vk, common, options, report);
  return bench.run();
}

}  // namespace staging::bench::vk
