// Names of the backend's enums, RetirementPoint::signal_info and format_stats.
#include <cinttypes>
#include <cstdio>
#include <span>

#include "staging/vulkan/ring.hpp"

namespace staging::vulkan {

VkSemaphoreSubmitInfo RetirementPoint::signal_info(VkPipelineStageFlags2 stages) const noexcept {
  return VkSemaphoreSubmitInfo{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
      .semaphore = semaphore,
      .value = value,
      .stageMask = stages,
      .deviceIndex = 0,
  };
}

std::string_view to_string(Route route) noexcept {
  switch (route) {
    case Route::Ring:
      return "Ring";
    case Route::Fallback:
      return "Fallback";
  }
  return "?";
}

std::string_view to_string(UploadError error) noexcept {
  switch (error) {
    case UploadError::Inactive:
      return "Inactive";
    case UploadError::NullDestination:
      return "NullDestination";
    case UploadError::ZeroSize:
      return "ZeroSize";
    case UploadError::Overflow:
      return "Overflow";
    case UploadError::UnsupportedFormat:
      return "UnsupportedFormat";
    case UploadError::BadAspect:
      return "BadAspect";
    case UploadError::Misaligned:
      return "Misaligned";
    case UploadError::SizeMismatch:
      return "SizeMismatch";
    case UploadError::OverlapsEarlierUpload:
      return "OverlapsEarlierUpload";
    case UploadError::ConflictingLayouts:
      return "ConflictingLayouts";
    case UploadError::FallbackCapReached:
      return "FallbackCapReached";
    case UploadError::AllocationFailed:
      return "AllocationFailed";
    case UploadError::RingFull:
      return "RingFull";
  }
  return "?";
}

std::string_view to_string(FinishError error) noexcept {
  switch (error) {
    case FinishError::Inactive:
      return "Inactive";
    case FinishError::NullSemaphore:
      return "NullSemaphore";
    case FinishError::PointAlreadyReached:
      return "PointAlreadyReached";
    case FinishError::DeviceLost:
      return "DeviceLost";
  }
  return "?";
}

std::string_view to_string(CreateError::Kind kind) noexcept {
  switch (kind) {
    case CreateError::Kind::MissingFunction:
      return "MissingFunction";
    case CreateError::Kind::ApiVersionTooOld:
      return "ApiVersionTooOld";
    case CreateError::Kind::InvalidSlotConfig:
      return "InvalidSlotConfig";
    case CreateError::Kind::PolicyNotSupported:
      return "PolicyNotSupported";
    case CreateError::Kind::InvalidByteRing:
      return "InvalidByteRing";
    case CreateError::Kind::SemaphoreFailed:
      return "SemaphoreFailed";
  }
  return "?";
}

std::string_view to_string(BeginError::Kind kind) noexcept {
  switch (kind) {
    case BeginError::Kind::NullCommandBuffer:
      return "NullCommandBuffer";
    case BeginError::Kind::Refused:
      return "Refused";
    case BeginError::Kind::Timeout:
      return "Timeout";
  }
  return "?";
}

std::string_view to_string(WaitError error) noexcept {
  switch (error) {
    case WaitError::Timeout:
      return "Timeout";
    case WaitError::DeviceLost:
      return "DeviceLost";
  }
  return "?";
}

std::string to_string(Strategy strategy) {
  return strategy == Strategy::Slots ? "Slots" : "Bytes";
}

namespace {

struct Row {
  std::string_view name;
  uint64_t value;
};

// "  name ........ value" lines, as the core's format_stats.
void append_rows(std::string& out, std::span<const Row> rows) {
  char line[96];
  for (const Row& row : rows) {
    const std::string dots(row.name.size() < 30 ? 30 - row.name.size() : 1, '.');
    std::snprintf(line, sizeof line, "  %.*s %s %12" PRIu64 "\n", static_cast<int>(row.name.size()),
                  row.name.data(), dots.c_str(), row.value);
    out += line;
  }
}

std::string format_byte_ring(const ByteRingStats& b) {
  const Row rows[] = {
      {"reservations", b.reservations},
      {"bytes reserved", b.bytes_reserved},
      {"retired", b.retired},
      {"cancelled", b.cancelled},
      {"wraps", b.wraps},
      {"bytes skipped by wraps", b.bytes_skipped},
      {"would-block answers", b.would_blocks},
      {"waits", b.waits},
      {"wait time (us)", static_cast<uint64_t>(b.wait_total.count() / 1000)},
      {"timeouts", b.timeouts},
      {"grows", b.grows},
      {"trims", b.trims},
      {"fallback regions", b.fallbacks},
      {"cap refusals", b.cap_refusals},
      {"allocation failures", b.allocation_failures},
      {"held bytes", b.held_bytes},
      {"peak held bytes", b.peak_held_bytes},
      {"peak bytes in flight", b.peak_in_flight_bytes},
  };
  std::string out;
  append_rows(out, rows);
  return out;
}

}  // namespace

std::string format_stats(const Stats& s) {
  const Row rows[] = {
      {"frames begun (all routes)", s.frames_begun},
      {"frames finished", s.frames_finished},
      {"frames dropped unfinished", s.frames_dropped},
      {"frames on the fallback route", s.frames_fallback},
      {"begin: refused", s.begin_refused},
      {"begin: timed out waiting", s.begin_timeouts},
      {"begin: waited", s.waits},
      {"begin: wait time (us)", static_cast<uint64_t>(s.wait_time.count() / 1000)},
      {"uploads staged in slots", s.staged_uploads},
      {"bytes staged in slots", s.staged_bytes},
      {"fallback: update-buffer", s.update_buffer_uploads},
      {"fallback: update-buffer bytes", s.update_buffer_bytes},
      {"fallback: one-off buffers", s.oneoff_uploads},
      {"fallback: one-off bytes", s.oneoff_bytes},
      {"fallback: ring had no room", s.ring_full_fallbacks},
      {"fallback: refused at cap", s.fallback_cap_refusals},
      {"refused: ring full", s.ring_full_refusals},
      {"one-off bytes held now", s.oneoff_live_bytes},
      {"one-off bytes held at peak", s.oneoff_peak_bytes},
      {"points retired", s.points_retired},
      {"points abandoned", s.points_abandoned},
      {"points failed (device lost)", s.points_failed},
      {"device lost", s.device_lost},
      {"copy commands", s.copy_commands},
      {"copy regions", s.copy_regions},
      {"update-buffer commands", s.update_commands},
      {"pipeline barriers", s.barriers},
      {"flushes", s.flushes},
      {"flushed bytes", s.flushed_bytes},
  };
  std::string out = s.strategy == Strategy::Slots ? "slot ring:\n" + format_stats(s.slots)
                                                  : "byte ring:\n" + format_byte_ring(s.bytes);
  out += "vulkan:\n";
  append_rows(out, rows);
  return out;
}

}  // namespace staging::vulkan
