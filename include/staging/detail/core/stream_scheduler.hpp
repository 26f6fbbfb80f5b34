// StreamScheduler: uploads of any size from any thread, streamed through a byte ring of fixed
// size on a queue of their own — the GPU-free half of a streamer.
//
//   producers (any thread)        scheduler                                  backend (GPU)
//   enqueue(buffer, Now) ──┐      queue: Now  [a][b]
//   enqueue(image, Prefetch) ─┐   queue: Prefetch [C: 3 of 9 pieces cut]
//                          │  └─> pump: cut pieces into a batch (priority
//                          └────>   order, as much as the ring has room
//                                   for), fill it, submit ──────────────────> copies, signal v
//   ticket.value() <────────────── the value of the batch with an upload's last piece
//   write_in_place: next_piece()/commit() (the producer fills the piece itself)
//
// - Any size: an upload larger than the ring streams through it in pieces (upload_pieces.hpp:
//   buffers by byte ranges, images by levels, layers, slices and rows of texel blocks), each
//   submitted as soon as it is filled; the ring's bytes are reused as the batches retire, so the
//   staging memory stays at ring_bytes whatever the uploads' sizes.
// - Priorities: Now is cut before Prefetch, also between the pieces of a long Prefetch upload.
// - Backpressure: the queue holds at most max_queued_bytes (and max_queued_uploads) not yet cut;
//   enqueue() then waits up to the caller's timeout or refuses at once (timeout 0). A piece
//   written in place waits for ring room the same way.
// - Cancellation: an upload not yet started is dropped (nothing reaches its destination); one
//   partly submitted stops after the pieces already cut (its destination is then partly written),
//   and reads Streaming until those are filled and submitted.
// - Failure: a failed submission fails its uploads; their pieces already cut into later batches
//   are dropped unsubmitted, and such an upload reads Failed once no batch holds its pieces.
// - Completion: every upload's ticket gets a timeline value once its last piece is submitted;
//   the destination holds the data once the backend's timeline reaches it (status(), wait(), or a
//   GPU wait on the value).
//
// Retirement: batches are numbered; each one's reservation carries its number as ring token, and
// the ring is retired up to the highest number below which every batch's timeline value is
// reached (or which was never submitted) — read from the backend's completed(), never inferred.
//
// Threading: every public call is safe from any thread. The pump (pump_once(), or run() on a
// thread of the caller's) is one thread at a time; enqueue(), cancel(), status(), wait() and
// the in-place calls may run concurrently with it. One mutex guards the queue, the ring and the
// batch records (held for bookkeeping only: never while copying bytes, submitting or waiting).
//
// The engine behind vulkan::Streamer: a backend's building block, not part of the API. Its
// vocabulary (tickets, priorities, statuses, configuration, counters, observer) is public, in
// staging/core/stream.hpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/core/stream.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/fill_engine.hpp"
#include "staging/detail/core/stream_backend.hpp"
#include "staging/detail/core/upload_pieces.hpp"

namespace staging {

class Observer;
class InvariantChecker;

/// One upload: what to copy, where, and how urgently.
struct StreamRequest {
  /// The upload's shape and destination offsets (PieceCursor::buffer or PieceCursor::image).
  PieceCursor pieces;
  /// The packed source (pieces.total_bytes() bytes), read by the pump while it cuts and fills
  /// pieces: it must stay valid and unchanged until the ticket's status is past Streaming (also
  /// after cancel(): pieces cut before it may still be being filled). Null: the upload is written
  /// in place (write_in_place()).
  const std::byte* source = nullptr;
  /// Alignment of every piece's staging offset (>= 1; 0 is treated as 1; e.g. a texel block's
  /// size, or the device's optimal copy offset alignment).
  uint64_t alignment = 16;
  /// Now or Prefetch.
  StreamPriority priority = StreamPriority::Prefetch;
  /// The backend's record of the upload (destination handle, layouts, queue families), handed
  /// back in every BatchPiece and to StreamBackend::released(). Never dereferenced here.
  void* context = nullptr;
  /// The caller's tag, carried into the observer's events.
  uint64_t owner = 0;
};

/// Why enqueue() took no upload.
enum class EnqueueError : uint8_t {
  /// The request is empty (a default PieceCursor) or its source is null (use write_in_place()).
  Empty,
  /// The queue is at its cap and the caller asked not to wait (timeout 0).
  QueueFull,
  /// The queue stayed at its cap for the whole timeout.
  Timeout,
  /// The upload's smallest piece (a buffer granule, or one row of texel blocks of its largest
  /// level, with the alignment's padding) is larger than the ring: it can never stream.
  TooLarge,
  /// The scheduler is stopping (stop() was called).
  Stopped,
  /// The backend's device is lost (StreamBackend::lost()): nothing can stream any more.
  DeviceLost,
};

/// Names of EnqueueError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<EnqueueError>) noexcept {
  return std::to_array<std::string_view>(
      {"Empty", "QueueFull", "Timeout", "TooLarge", "Stopped", "DeviceLost"});
}
static_assert(enum_names_complete<EnqueueError>(), "EnqueueError: a value has no name");

/// What one round of the pump (pump_once()) did.
enum class PumpResult : uint8_t {
  /// Submitted a batch.
  Submitted,
  /// Nothing to cut (the queue is empty); waited up to the given time for work.
  Idle,
  /// Work is waiting but the ring has no room: waited up to the given time for the oldest batch
  /// to retire.
  RingFull,
  /// A batch's submission failed (its uploads are Failed), or a batch held only pieces of
  /// uploads that had failed since it was cut (it was dropped unsubmitted).
  SubmitFailed,
  /// stop() was called.
  Stopped,
};

/// Names of PumpResult's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<PumpResult>) noexcept {
  return std::to_array<std::string_view>(
      {"Submitted", "Idle", "RingFull", "SubmitFailed", "Stopped"});
}
static_assert(enum_names_complete<PumpResult>(), "PumpResult: a value has no name");

/// See the file comment.
///
/// Ownership: owns its byte ring (its regions come from Deps::allocator) and its queue;
/// references the backend, allocator, clock and observers, which must outlive it. Destroying it
/// stops it (stop()), cancels what is still queued and the in-place uploads between pieces,
/// fails in-place pieces handed out and not committed, and destroys the ring: first make sure the
/// backend's queue has finished (e.g. wait for the last submitted value; drain()).
class StreamScheduler {
 public:
  /// What a scheduler works with. The pointees must outlive it.
  struct Deps {
    StreamBackend* backend = nullptr;      ///< required
    RegionAllocator* allocator = nullptr;  ///< required: the ring's staging memory
    Clock* clock = nullptr;                ///< null: steady_clock (waits and deadlines)
    /// The uploads' and the byte ring's timeline (both kinds of Event); may be null.
    Observer* observer = nullptr;
    InvariantChecker* checker = nullptr;  ///< fed by the ring when given; may be null
    /// Copies pieces from the uploads' sources in parallel (shared with other users of the
    /// pool); null: the pump thread copies them alone.
    FillPool* fill_pool = nullptr;
  };
  /// Makes a scheduler and its ring. Errors (CreateError): InvalidConfig (ring_bytes is 0,
  /// max_batch_pieces 0, buffer_granule 0, wait_slice <= 0, or min_batch_bytes above
  /// max_batch_bytes), MissingDependency (Deps::backend or Deps::allocator is null),
  /// AllocationFailed (the ring's memory could not be created).
  static Expected<std::unique_ptr<StreamScheduler>, CreateError> create(
      const StreamSchedulerConfig& config, Deps deps);
  /// Stops, cancels what is queued and ends the in-place uploads (see the class comment).
  ~StreamScheduler();
  StreamScheduler(const StreamScheduler&) = delete;
  StreamScheduler& operator=(const StreamScheduler&) = delete;

  // --- producers (any thread) -----------------------------------------------------------------

  /// Queues an upload from a pointer. When the queue is at its cap, waits up to `timeout` for
  /// room (0: refuses at once). Errors: Empty, TooLarge, QueueFull, Timeout, Stopped,
  /// DeviceLost (the backend's device is lost; a producer waiting for room wakes with it).
  Expected<StreamTicket, EnqueueError> enqueue(const StreamRequest& request,
                                               Duration timeout = Duration{0});

  /// Starts an upload written in place (request.source is ignored): the caller takes its pieces
  /// one at a time with next_piece(), writes and commits each. Not queued and not counted in
  /// the queue's cap (the ring is its backpressure). Errors: Empty, TooLarge, Stopped,
  /// DeviceLost.
  Expected<StreamTicket, EnqueueError> write_in_place(const StreamRequest& request);
  /// Reserves the next piece of an in-place upload, as large as the ring's room and the batch
  /// size allow; waits up to `timeout` for room (0: refuses at once). The piece's bytes hold
  /// back the reuse of every later piece of the ring until committed: write them promptly.
  /// Errors (UploadError): InvalidArgument, Done, Cancelled, Failed (a commit of the upload
  /// failed), Timeout, TooLarge, Inactive (stopping), DeviceLost.
  Expected<InPlacePiece, UploadError> next_piece(const StreamTicket& ticket,
                                                 Duration timeout = Duration{0});
  /// Submits a written piece (a batch of its own). Returns the timeline value it signals, or
  /// the submission's error (the upload is then Failed); InvalidArgument (nothing changes) for a
  /// ticket that is not an in-place upload of this scheduler, or a piece that is not the one
  /// next_piece() handed out for it.
  Expected<TimelineValue, UploadError> commit(const StreamTicket& ticket,
                                              const InPlacePiece& piece);
  /// Gives a piece back unwritten: its bytes are reclaimed, and the upload is cancelled (as
  /// cancel() would: the ticket keeps a value when pieces had been committed).
  void abandon(const StreamTicket& ticket, const InPlacePiece& piece);

  /// Cancels an upload: see Streamer::cancel(). Any thread.
  StreamStatus cancel(const StreamTicket& ticket);
  /// Whether `ticket` names an upload of this scheduler (not empty, not another's). Any thread.
  [[nodiscard]] bool owns(const StreamTicket& ticket) const noexcept;

  /// The upload's status, Complete once the backend's timeline has reached its value; Failed
  /// when it had not when the backend's device was lost (StreamBackend::lost()), and for an
  /// empty ticket or another scheduler's.
  [[nodiscard]] StreamStatus status(const StreamTicket& ticket);
  /// Waits up to `timeout` for the upload to be complete (or to end otherwise) and returns its
  /// status: until its last piece is submitted, then on the backend's timeline. Returns Failed
  /// within about wait_slice once the backend's device is lost, and at once for an empty ticket
  /// or another scheduler's.
  StreamStatus wait(const StreamTicket& ticket, Duration timeout);

  // --- the pump (one thread at a time) --------------------------------------------------------

  /// One round: retires what the timeline completed, cuts the next batches (Now first) as large
  /// as the ring's room allows and starts filling them from the uploads' sources (on the fill
  /// pool, when given), then waits for the oldest batch being filled (helping to copy it) and
  /// submits it. When there is nothing to cut or fill, waits up to `max_wait` (capped at
  /// wait_slice) for work; when the ring has no room, for the oldest batch to retire.
  PumpResult pump_once(Duration max_wait = Duration{0});
  /// Pumps until stop(). For a thread of the caller's.
  void run();
  /// Pumps until the queue is empty and every batch retired, or `timeout` passes; true when
  /// idle. For tests and shutdown (in-place uploads not committed are not waited for).
  bool drain(Duration timeout);
  /// Waits, without pumping (another thread runs the pump), until the queue is empty and every
  /// batch retired, or `timeout` passes; true when idle.
  bool wait_idle(Duration timeout);
  /// Makes run() return and every later enqueue(), write_in_place() and next_piece() answer
  /// Stopped; waiting producers wake. Queued uploads stay queued (the destructor fails them).
  void stop();

  // --- queries (any thread) -------------------------------------------------------------------

  /// A copy of the counters.
  [[nodiscard]] StreamStats stats() const;
  /// A copy of the byte ring's counters.
  [[nodiscard]] ByteRingStats ring_stats() const;
  /// The configuration with its 0s resolved.
  [[nodiscard]] const StreamSchedulerConfig& config() const noexcept { return config_; }
  /// The backend's completed value (read now).
  [[nodiscard]] TimelineValue completed() const;
  /// Pool threads the pump lets fill its pieces at once now (StreamSchedulerConfig::
  /// adapt_fill_threads; the pool's size when it does not adapt), 0 without a pool. Any thread.
  [[nodiscard]] unsigned fill_threads() const noexcept {
    return fill_limit_.load(std::memory_order_relaxed);
  }

 private:
  struct Batch;
  struct Cut;
  StreamScheduler(const StreamSchedulerConfig& config, Deps deps);

  Duration now() const;
  Expected<std::shared_ptr<detail::StreamUpload>, EnqueueError> make_upload(
      const StreamRequest& request, bool in_place) const;
  void retire_locked(TimelineValue completed);
  // cancel() of an upload not fully cut: no more pieces of it are cut. Returns Cancelled.
  StreamStatus stop_locked(detail::StreamUpload& upload);
  uint64_t cut_locked(uint64_t free, bool padded, std::vector<Cut>& cuts,
                      uint64_t* batch_alignment);
  Batch* plan_locked(uint64_t* wait_token);
  struct Filling;
  void start_fill(Filling& filling);
  void finish_fill(Filling& filling);
  // adapt_fill_threads: one pool thread fewer (the ring was full) or more (a pooled batch was
  // ready with nothing copying). The pump's own.
  void fewer_fill_threads() noexcept;
  void more_fill_threads_if_starved();
  PumpResult submit(Batch& batch);
  void finish_submit_locked(Batch& batch, Expected<TimelineValue, UploadError> result);
  void end_upload_locked(detail::StreamUpload& upload, StreamStatus status);
  void unqueue_locked(detail::StreamUpload& upload);
  uint64_t queued_limit_bytes() const noexcept;
  bool queue_has_room_locked(const detail::StreamUpload& upload) const;
  std::shared_ptr<detail::StreamUpload> front_locked();
  std::optional<TimelineValue> wait_token_value_locked(uint64_t token) const;
  bool waited_for_ring(std::unique_lock<std::mutex>& lock, uint64_t token, Duration max_wait);
  bool check_lost_locked();
  bool drop_failed_pieces_locked(Batch& batch);
  // Nothing owed: every batch retired, complete, dropped, or an in-place piece its writer holds.
  bool idle_locked() const;
  // The newest batch submitted and not complete (else the newest batch): what to wait for.
  uint64_t newest_owed_token_locked() const;
  // next_piece()'s cut and reservation of one in-place piece of `ticket`'s upload, when the ring
  // has room for one now (mutex_ held).
  std::optional<InPlacePiece> cut_in_place_piece_locked(const StreamTicket& ticket);

  StreamSchedulerConfig config_;
  Deps deps_;
  Clock* clock_;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;   // queue gained work, or stop
  std::condition_variable room_cv_;   // queue lost bytes (a producer may enqueue), or stop
  std::condition_variable state_cv_;  // an upload's status changed, a batch was submitted
  std::optional<ByteRing> ring_;
  std::deque<std::shared_ptr<detail::StreamUpload>> queues_[2];
  uint64_t queued_bytes_[2] = {0, 0};
  std::deque<std::unique_ptr<Batch>> batches_;  // cut and not yet retired, by token
  // In-place uploads not ended (the destructor cancels those between pieces).
  std::vector<std::shared_ptr<detail::StreamUpload>> in_place_;
  std::vector<BatchPiece> scratch_;  // the batch being cut
  std::vector<Cut> cuts_;            // its uploads' cursors after the cut
  uint64_t next_token_ = 1;
  uint64_t next_upload_ = 1;
  TimelineValue completed_ = 0;
  StreamStats stats_;
  bool stopping_ = false;
  bool lost_ = false;        // the backend's device is lost: every upload not complete failed
  std::mutex submit_mutex_;  // one submit() at a time
  // The pump's own (one pump thread at a time; no lock): batches being filled, oldest first,
  // and fill jobs kept for reuse.
  std::deque<std::unique_ptr<Filling>> filling_;
  std::vector<std::unique_ptr<detail::FillJob>> spare_jobs_;
  bool pump_busy_ = false;  // the pump has had work since its last idle round
  // Pool threads a fill job of the pump may have at once (written by the pump, read anywhere).
  std::atomic<unsigned> fill_limit_{0};
  unsigned fill_lane_ = 0;  // the pool's lane of the pump's fill jobs (FillEngine::new_lane)
  TimelineValue newest_submitted_ = 0;  // the newest value a submission signals (mutex_)
};

}  // namespace staging
