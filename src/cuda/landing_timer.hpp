// LandingTimer: how long an upload took from its call until its last copy landed on the device,
// for the planner's choice of fill method (upload_planner.hpp).
//
// upload() returns once its last copy is queued, not once it has run: a fill method that writes
// the ring quickly but leaves it where the copy engine reads it slowly looks fast by the call's own
// duration. The timer measures the whole: a timing CUDA event recorded on the upload's stream when
// the upload starts and one after its last copy; once the second has completed, their distance is
// the device's side of the upload. The sample is max(call, device span): on an idle stream the
// first event completes as the call starts, so the span runs from the call to the last copy's end;
// on a busy one it starts when the stream reached it, and the call's own duration bounds it below.
//
// One pair of events, so one upload timed at a time: start() answers false while another upload's
// sample is open or not yet collected (that upload simply goes untimed). A device that cannot time
// (DeviceApi::event_create_timed answers an error) gives a timer that never starts, and so does
// one whose timing calls (records, queries, elapsed times) fail 8 times in a row: available()
// then turns false for good, and the caller judges without it.
//
// Ownership: owns its two events, destroyed through the same DeviceApi (which must outlive it).
// Threading: every member is safe from any thread (one mutex); start(), finish() and abandon() of
// one sample come from the thread of the upload that started it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "staging/core/timeline.hpp"
#include "staging/detail/cuda/device_api.hpp"
#include "upload_planner.hpp"

namespace staging::cuda::detail {

/// A timed upload, as collect() hands it back.
struct LandedUpload {
  UploadPlan plan;     ///< what the upload did
  uint64_t bytes = 0;  ///< its size
  Duration landed{0};  ///< from its call until its last copy completed (at least the call)
};

/// See the file comment.
class LandingTimer {
 public:
  /// Makes the pair of timing events (a device that cannot: available() is false).
  explicit LandingTimer(DeviceApi& api) noexcept;
  /// Destroys the pair (a pending sample is dropped; CUDA frees the events once they complete).
  ~LandingTimer();
  LandingTimer(const LandingTimer&) = delete;
  LandingTimer& operator=(const LandingTimer&) = delete;

  /// Whether this timer still times (the device can, and its timing calls have not kept failing).
  [[nodiscard]] bool available() const noexcept {
    return start_ != nullptr && !given_up_.load(std::memory_order_relaxed);
  }
  /// Starts timing an upload on `stream` (records the first event there). False when the timer
  /// is not available, another upload holds it, or the record failed: the upload goes untimed.
  bool start(cudaStream_t stream) noexcept;
  /// The upload that start()ed issued its last copy on `stream`: records the second event after
  /// it. `plan`, `bytes` and the call's duration are kept for collect(). A failed record drops the
  /// sample.
  void finish(cudaStream_t stream, const UploadPlan& plan, uint64_t bytes, Duration call) noexcept;
  /// The upload that start()ed failed: the timer is free again, nothing is kept.
  void abandon() noexcept;
  /// The finished sample once its last copy has completed (the timer is then free again); none
  /// while it has not, or when there is none. A failing query or elapsed-time call drops it.
  std::optional<LandedUpload> collect() noexcept;

 private:
  enum class State : uint8_t { Free, Started, Finished };
  // Counts a failed timing call (under mu_); gives up after too many in a row.
  void failed() noexcept;

  DeviceApi& api_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t end_ = nullptr;
  std::mutex mu_;
  State state_ = State::Free;
  LandedUpload sample_;    // the finished sample, its `landed` the call's duration until collected
  unsigned failures_ = 0;  // timing calls failed in a row (guarded by mu_)
  std::atomic<bool> given_up_{false};
};

}  // namespace staging::cuda::detail
