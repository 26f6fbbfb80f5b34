// StreamObserver: a StreamScheduler's timeline — uploads accepted and ended, batches cut and
// submitted, waits for ring room, refusals — stamped with the scheduler's Clock. The byte ring's
// own timeline (placements, retirements, wraps) goes to the RingObserver given beside it, so a
// trace shows both: what the streamer decided, and what its staging memory did.
//
// Threading: called synchronously from inside the scheduler's calls, on the calling thread (the
// pump, or a producer), with the scheduler's lock held: an observer must be quick, must not call
// the scheduler, and must not throw. Ownership: referenced by the scheduler, must outlive it.
#pragma once

#include <cstdint>

#include "staging/core/timeline.hpp"

namespace staging {

/// Declared in stream_scheduler.hpp: how urgently an upload is needed.
enum class StreamPriority : uint8_t;
/// Declared in stream_scheduler.hpp: where an upload is.
enum class StreamStatus : uint8_t;

/// An upload was accepted (queued from a pointer, or started in place).
struct StreamEnqueueEvent {
  Duration time{0};           ///< the scheduler's clock
  uint64_t upload = 0;        ///< its id
  uint64_t bytes = 0;         ///< its packed size
  StreamPriority priority{};  ///< Now or Prefetch
  bool in_place = false;      ///< written in place rather than copied from a pointer
  uint64_t owner = 0;         ///< the request's tag
};

/// A batch was cut: a ring reservation holding pieces of one or more uploads.
struct StreamBatchEvent {
  Duration time{0};           ///< the scheduler's clock
  uint64_t token = 0;         ///< the batch's number (its ring token)
  uint64_t bytes = 0;         ///< bytes of its reservation
  uint32_t pieces = 0;        ///< pieces in it
  uint64_t first_upload = 0;  ///< the upload of its first piece
  StreamPriority priority{};  ///< that upload's priority
};

/// A batch was submitted (or its submission failed).
struct StreamSubmitEvent {
  Duration time{0};         ///< the scheduler's clock, after the backend returned
  uint64_t token = 0;       ///< the batch's number
  TimelineValue value = 0;  ///< the timeline value it signals (0 when it failed)
  bool failed = false;      ///< the backend's submit() failed
};

/// An upload ended: its last piece was submitted, or it was cancelled or failed.
struct StreamEndEvent {
  Duration time{0};       ///< the scheduler's clock
  uint64_t upload = 0;    ///< its id
  StreamStatus status{};  ///< Submitted, Cancelled or Failed
  /// The timeline value after which the device is done with its destination (0: nothing of
  /// it was submitted).
  TimelineValue value = 0;
  uint64_t owner = 0;  ///< the request's tag
};

/// The pump (or a producer writing in place) waited for ring room.
struct StreamRingWaitEvent {
  Duration time{0};           ///< the scheduler's clock when the wait began
  Duration waited{0};         ///< how long it waited
  uint64_t oldest_token = 0;  ///< the batch whose retirement it waited for
  bool in_place = false;      ///< a producer's next_piece() rather than the pump
};

/// enqueue() or next_piece() refused or timed out.
struct StreamRefusalEvent {
  Duration time{0};        ///< the scheduler's clock
  bool timed_out = false;  ///< waited the whole timeout (else refused at once)
  bool in_place = false;   ///< next_piece() (ring room) rather than enqueue() (queue cap)
  uint64_t bytes = 0;      ///< the upload's bytes
};

/// Receives a StreamScheduler's timeline. Every method has an empty default.
class StreamObserver {
 public:
  virtual ~StreamObserver() = default;
  /// An upload was accepted.
  virtual void on_enqueue(const StreamEnqueueEvent& /*event*/) {}
  /// A batch was cut.
  virtual void on_batch(const StreamBatchEvent& /*event*/) {}
  /// A batch was submitted, or failed to be.
  virtual void on_submit(const StreamSubmitEvent& /*event*/) {}
  /// An upload ended.
  virtual void on_end(const StreamEndEvent& /*event*/) {}
  /// A wait for ring room ended.
  virtual void on_ring_wait(const StreamRingWaitEvent& /*event*/) {}
  /// A refusal or timeout.
  virtual void on_refusal(const StreamRefusalEvent& /*event*/) {}
};

}  // namespace staging
