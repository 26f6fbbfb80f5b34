#include "replay_plan.hpp"

#include <map>

namespace staging::bench {
namespace {

constexpr uint64_t kDstAlignment = 256;
constexpr uint64_t kUpdateLimit = 65536;

uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// Counts of what was replayed differently, turned into notes at the end.
struct Deviations {
  std::map<std::string, uint64_t> other_kinds;
  uint64_t images_as_buffers = 0;
  uint64_t updates_as_copies = 0;
};

// The kind as the replay issues it, and the image it fills (image_copy that divides into rows).
ReplayKind classify(const sim::Upload& u, const std::string& kind, const PlanLimits& limits,
                    ReplayPlan& plan, Deviations& dev, int& image) {
  image = -1;
  if (kind == "image_copy") {
    const uint64_t pitch = u.granularity;
    const bool rows = pitch >= 4 && pitch % 4 == 0 && u.size % pitch == 0;
    const uint64_t width = pitch / 4, height = rows ? u.size / pitch : 0;
    if (rows && width <= limits.max_image_dimension && height <= limits.max_image_dimension) {
      image = static_cast<int>(plan.images.size());
      plan.images.push_back({static_cast<uint32_t>(width), static_cast<uint32_t>(height)});
      return ReplayKind::ImageCopy;
    }
    ++dev.images_as_buffers;
    return ReplayKind::BufferCopy;
  }
  if (kind == "update") {
    if (u.size <= kUpdateLimit && u.size % 4 == 0) return ReplayKind::Update;
    ++dev.updates_as_copies;
    return ReplayKind::BufferCopy;
  }
  if (kind == "host_write") return ReplayKind::HostWrite;
  if (kind != "buffer_copy") ++dev.other_kinds[kind];
  return ReplayKind::BufferCopy;
}

void add_notes(const Deviations& dev, ReplayPlan& plan) {
  std::string others;
  for (const auto& [kind, n] : dev.other_kinds)
    others += (others.empty() ? "" : ", ") + kind + " (" + std::to_string(n) + ")";
  if (!others.empty()) plan.notes.push_back("kinds replayed as buffer_copy: " + others);
  if (dev.images_as_buffers != 0) {
    plan.notes.push_back(std::to_string(dev.images_as_buffers) +
                         " image_copy uploads replayed as buffer copies (size is not whole rows "
                         "of granularity / 4 RGBA8 texels, or too large for an image)");
  }
  if (dev.updates_as_copies != 0) {
    plan.notes.push_back(std::to_string(dev.updates_as_copies) +
                         " update uploads replayed as buffer copies (over 65536 bytes or not a "
                         "multiple of 4: not legal for vkCmdUpdateBuffer)");
  }
}

}  // namespace

const char* to_string(ReplayKind kind) noexcept {
  switch (kind) {
    case ReplayKind::BufferCopy:
      return "buffer_copy";
    case ReplayKind::ImageCopy:
      return "image_copy";
    case ReplayKind::Update:
      return "update";
    case ReplayKind::HostWrite:
      return "host_write";
  }
  return "?";
}

Expected<ReplayPlan, std::string> plan_replay(const sim::Workload& trace,
                                              const PlanLimits& limits) {
  ReplayPlan plan;
  Deviations dev;
  bool have_frame = false, skipping = false;
  int64_t current = -1;
  for (const sim::Upload& u : trace.uploads) {
    if (!have_frame || u.frame < 0 || u.frame != current) {
      ++plan.trace_frames;
      have_frame = true;
      current = u.frame;
      skipping = limits.max_frames != 0 && plan.frames.size() >= limits.max_frames;
      if (!skipping) plan.frames.emplace_back();
    }
    if (skipping) continue;
    PlannedUpload p;
    p.kind = classify(u, trace.kinds[u.kind], limits, plan, dev, p.image);
    p.size = u.size;
    p.source_offset = plan.source_bytes;
    plan.source_bytes += u.size;
    if (p.kind != ReplayKind::ImageCopy) {
      p.dst_offset = plan.buffer_bytes;
      plan.buffer_bytes = round_up(plan.buffer_bytes + u.size, kDstAlignment);
    }
    p.streamed = u.size > limits.frame_budget;
    plan.frames.back().push_back(p);
    ++plan.uploads;
  }
  if (plan.uploads == 0) return unexpected(std::string("the trace has no uploads"));
  add_notes(dev, plan);
  return plan;
}

}  // namespace staging::bench
