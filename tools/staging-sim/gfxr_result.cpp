// The Tracker's result: frames, times, the workload, the application's staging peak and the
// completion lags (gfxr_import.hpp describes each).
#include <fmt/format.h>

#include <algorithm>

#include "delay_spec.hpp"
#include "gfxr_tracker.hpp"
#include "units.hpp"

namespace staging::sim::gfxr {
namespace {

uint64_t percentile(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// The most bytes alive at once of (call number, +-bytes) events.
uint64_t peak_of(std::vector<std::pair<uint64_t, int64_t>> events) {
  std::sort(events.begin(), events.end());
  int64_t alive = 0, peak = 0;
  for (const auto& [at, delta] : events) {
    alive = delta > 0 && alive > INT64_MAX - delta ? INT64_MAX : alive + delta;
    peak = std::max(peak, alive);
  }
  return static_cast<uint64_t>(peak);
}

// The uploads of `kept` into `w`, their frame by presents (or submissions), their times spread
// evenly over their frame. Frames never decrease in capture order.
void add_uploads(const std::vector<const RawUpload*>& kept, bool presents, Workload& w) {
  const auto frame_of = [&](const RawUpload& u) {
    return presents ? u.present_frame : u.submission;
  };
  for (std::size_t begin = 0; begin < kept.size();) {
    const uint64_t f = frame_of(*kept[begin]);
    std::size_t end = begin;
    while (end < kept.size() && frame_of(*kept[end]) == f)
      ++end;
    const auto n = static_cast<int64_t>(end - begin);
    for (std::size_t i = begin; i < end; ++i) {
      const RawUpload& r = *kept[i];
      Upload u;
      const int64_t period = kImportFramePeriod.count();
      u.time =
          Duration{static_cast<int64_t>(f) * period + period * static_cast<int64_t>(i - begin) / n};
      u.size = r.size;
      u.alignment = r.alignment;
      u.granularity = r.granularity;
      u.frame = static_cast<int64_t>(f);
      u.kind = w.kind_id(kMovedNames[static_cast<std::size_t>(r.moved)]);
      w.uploads.push_back(u);
    }
    begin = end;
  }
}

}  // namespace

GfxrImport Tracker::finish(std::string_view name) {
  for (const auto& [id, cb] : command_buffers_) {
    if (cb.unsubmitted) skip("never_submitted", cb.recorded.size());
  }
  for (const auto& [id, m] : memory_)
    add_staging_interval(m);
  stats_.app_staging_peak_bytes = peak_of(std::move(staging_events_));
  const bool presents = stats_.presents > 0;
  const auto frame_of = [&](uint64_t present_frame, uint64_t submission) {
    return presents ? present_frame : submission;
  };
  for (const Submission& s : submissions_)
    stats_.frames = std::max(stats_.frames, frame_of(s.frame, 0) + 1);
  if (!presents) stats_.frames = submissions_.size();

  GfxrImport out;
  Workload& w = out.workload;
  w.name = fmt::format("gfxr:{}", name.substr(name.find_last_of('/') + 1));
  std::vector<const RawUpload*> kept;
  for (const RawUpload& u : uploads_) {
    if (u.moved == Moved::HostWrite) {
      if (copy_source_memory_.count(u.memory) != 0) {
        skip("host_write_to_copy_source");
        continue;
      }
      if (u.submission >= submissions_.size()) {
        skip("host_write_not_submitted");
        continue;
      }
      ++stats_.imported_host_writes;
      stats_.imported_host_write_bytes = add_sat(stats_.imported_host_write_bytes, u.size);
    } else {
      const auto k = static_cast<std::size_t>(u.moved);
      ++stats_.imported_uploads[k];
      stats_.imported_bytes[k] = add_sat(stats_.imported_bytes[k], u.size);
    }
    kept.push_back(&u);
  }
  add_uploads(kept, presents, w);

  std::vector<uint64_t> lags;
  for (uint64_t s = 0; s < submissions_.size(); ++s) {
    const Submission& sub = submissions_[s];
    if (!sub.learned_frame) continue;
    lags.push_back(presents ? *sub.learned_frame - sub.frame : *sub.learned_submissions - 1 - s);
  }
  std::sort(lags.begin(), lags.end());
  stats_.completions_learned = lags.size();
  stats_.completions_unknown = submissions_.size() - lags.size();
  stats_.lag_frames = {percentile(lags, 0.5), percentile(lags, 0.99),
                       lags.empty() ? 0 : lags.back()};
  if (!lags.empty()) {
    const int64_t period_us = kImportFramePeriod.count() / 1000;
    const int64_t delay_us = static_cast<int64_t>(stats_.lag_frames[0]) * period_us + period_us / 2;
    w.default_delay = parse_delay(fmt::format("fixed:{}us", delay_us), 0, nullptr);
  }
  w.description = fmt::format(
      "uploads imported from {} ({} submissions, {} frames, {} at 60 Hz; completion seen after "
      "{} frames (median))",
      name.substr(name.find_last_of('/') + 1), stats_.submissions, stats_.frames,
      presents ? "frames end at each present" : "one frame per submission", stats_.lag_frames[0]);
  out.stats = std::move(stats_);
  return out;
}

}  // namespace staging::sim::gfxr
