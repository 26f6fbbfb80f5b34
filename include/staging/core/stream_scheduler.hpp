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
//   partly submitted stops after the pieces already cut (its destination is then partly written).
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
#include "staging/core/expected.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/core/stream_backend.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/upload_pieces.hpp"

namespace staging {

class RingObserver;
class InvariantChecker;
class StreamObserver;

/// How urgently an upload is needed. Every Now upload is cut before any Prefetch upload.
enum class StreamPriority : uint8_t {
  /// Needed for the frame being prepared.
  Now,
  /// Wanted soon: streamed when nothing Now is waiting.
  Prefetch,
};

/// Names of StreamPriority's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<StreamPriority>) noexcept {
  return std::to_array<std::string_view>({"Now", "Prefetch"});
}
static_assert(enum_names_complete<StreamPriority>(), "StreamPriority: a value has no name");

/// Where an upload is.
enum class StreamStatus : uint8_t {
  /// Waiting in the queue; nothing cut yet.
  Queued,
  /// Some pieces cut (and perhaps submitted), not all.
  Streaming,
  /// Every piece submitted: value() is known; complete once the timeline reaches it.
  Submitted,
  /// The timeline reached value(): the destination holds the data.
  Complete,
  /// Cancelled. When pieces had been submitted, value() says when the device is done with the
  /// destination (its contents are then partly the upload's).
  Cancelled,
  /// A submission failed (the device was lost, or recording failed): the destination's contents
  /// are undefined.
  Failed,
};

/// Names of StreamStatus's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<StreamStatus>) noexcept {
  return std::to_array<std::string_view>(
      {"Queued", "Streaming", "Submitted", "Complete", "Cancelled", "Failed"});
}
static_assert(enum_names_complete<StreamStatus>(), "StreamStatus: a value has no name");

/// One upload: what to copy, where, and how urgently.
struct StreamRequest {
  /// The upload's shape and destination offsets (PieceCursor::buffer or PieceCursor::image).
  PieceCursor pieces;
  /// The packed source (pieces.total_bytes() bytes), read by the pump while it cuts and fills
  /// pieces: it must stay valid and unchanged until the ticket's status is past Streaming (or
  /// the upload is cancelled). Null: the upload is written in place (write_in_place()).
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

namespace detail {
struct StreamUpload;
}

/// A handle to an upload, shared by the caller and the scheduler. Copyable; cheap. The queries
/// read atomics and are safe from any thread; StreamScheduler::status() also knows Complete.
class StreamTicket {
 public:
  /// A ticket of no upload (id 0).
  StreamTicket() noexcept = default;
  /// The upload's id (1, 2, ... per scheduler; 0 for an empty ticket).
  [[nodiscard]] uint64_t id() const noexcept;
  /// The status as the scheduler last set it (Submitted stays Submitted here after the timeline
  /// reaches the value: ask StreamScheduler::status() for Complete). Failed for an empty ticket.
  [[nodiscard]] StreamStatus status() const noexcept;
  /// The timeline value after which the destination holds the upload (Submitted), or after
  /// which the device no longer writes it (Cancelled or Failed after some pieces were
  /// submitted). None before that is known.
  [[nodiscard]] std::optional<TimelineValue> value() const noexcept;
  /// The upload's packed size.
  [[nodiscard]] uint64_t bytes() const noexcept;
  /// True for a ticket of an upload.
  explicit operator bool() const noexcept { return upload_ != nullptr; }

 private:
  friend class StreamScheduler;
  explicit StreamTicket(std::shared_ptr<detail::StreamUpload> upload) noexcept
      : upload_(std::move(upload)) {}
  std::shared_ptr<detail::StreamUpload> upload_;
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

/// What cancel() did.
enum class CancelResult : uint8_t {
  /// The upload had not started: nothing of it reaches its destination.
  Cancelled,
  /// Some pieces were already cut: no more will be; the ticket's value says when the device is
  /// done with the destination (partly written).
  Stopped,
  /// Every piece had been cut already: the upload completes as if not cancelled.
  TooLate,
  /// The ticket is empty, of another scheduler, or its upload had ended (failed or cancelled).
  Unknown,
};

/// Names of CancelResult's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<CancelResult>) noexcept {
  return std::to_array<std::string_view>({"Cancelled", "Stopped", "TooLate", "Unknown"});
}
static_assert(enum_names_complete<CancelResult>(), "CancelResult: a value has no name");

/// A piece of an upload written in place: write `bytes` (the piece's region of the packed
/// source, `piece.bytes` of them), then commit() or abandon() it.
struct InPlacePiece {
  /// Where the bytes go (source_offset: which part of the upload they are).
  UploadPiece piece;
  /// The staging bytes to write (valid until commit() or abandon()).
  std::span<std::byte> bytes;
  /// The scheduler's batch number holding it (used by commit()).
  uint64_t token = 0;
};

/// Why next_piece() gave no piece.
enum class InPlaceError : uint8_t {
  /// The ticket is empty, not an in-place upload of this scheduler, or a piece of it is still
  /// uncommitted (one piece at a time per upload).
  BadTicket,
  /// Every piece has been handed out already.
  Done,
  /// The upload was cancelled (or failed).
  Cancelled,
  /// The ring had no room for the smallest next piece within the timeout (0: refused at once).
  Timeout,
  /// The smallest next piece (one row of blocks) is larger than the ring: it can never fit.
  TooLarge,
  /// The scheduler is stopping.
  Stopped,
  /// The backend's device is lost: the upload failed.
  DeviceLost,
};

/// Names of InPlaceError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<InPlaceError>) noexcept {
  return std::to_array<std::string_view>(
      {"BadTicket", "Done", "Cancelled", "Timeout", "TooLarge", "Stopped", "DeviceLost"});
}
static_assert(enum_names_complete<InPlaceError>(), "InPlaceError: a value has no name");

/// What one pump_once() did.
enum class PumpResult : uint8_t {
  /// Submitted a batch.
  Submitted,
  /// Nothing to cut (the queue is empty); waited up to the given time for work.
  Idle,
  /// Work is waiting but the ring has no room: waited up to the given time for the oldest batch
  /// to retire.
  RingFull,
  /// A batch's submission failed (its uploads are Failed).
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

/// How a StreamScheduler is sized.
struct StreamSchedulerConfig {
  /// Bytes of staging memory (the byte ring's capacity and cap; > 0).
  uint64_t ring_bytes = 0;
  /// Most bytes one batch (one submission) holds; 0: ring_bytes / 4. Smaller batches are
  /// submitted sooner (less latency); larger ones cost fewer submissions.
  uint64_t max_batch_bytes = 0;
  /// Most pieces one batch holds (>= 1).
  uint32_t max_batch_pieces = 1024;
  /// A batch is not cut smaller than this while the first upload it would hold has more left:
  /// the pump waits for ring room instead of sending slivers. 0: min(64 KiB, ring_bytes / 16).
  uint64_t min_batch_bytes = 0;
  /// Buffer uploads are cut at multiples of this (their last piece excepted; >= 1).
  uint64_t buffer_granule = 4096;
  /// Most bytes of queued uploads not yet cut (Now uploads are counted apart, so prefetches
  /// never keep a Now upload out); 0: 4 × ring_bytes. An upload larger than the cap is taken
  /// when nothing of its priority is queued.
  uint64_t max_queued_bytes = 0;
  /// Most uploads queued per priority (0: no limit).
  uint32_t max_queued_uploads = 0;
  /// With a fill pool (Deps::fill_pool): pieces of at least this many bytes are copied by the
  /// pool's threads (in slices, in parallel); smaller ones by the pump thread itself.
  uint64_t pool_min_bytes = uint64_t{64} << 10;
  /// With a fill pool: most batches being filled at once (the pump cuts the next batches while
  /// the pool fills the first; each is submitted as soon as it is filled). 0: as many as the
  /// ring has room for. Without a pool batches are filled one at a time by the pump.
  uint32_t max_filling_batches = 0;
  /// How the bytes are copied into staging memory (fill_copy.hpp).
  FillMethod fill_method = FillMethod::Auto;
  /// The longest single wait of the pump (for the GPU, or for work), so that stop() and new
  /// work are noticed (> 0).
  Duration wait_slice = std::chrono::milliseconds(2);
  /// Runs the byte ring's invariant checker on every operation (ByteRingConfig).
  bool check_invariants = false;
};

/// What a StreamScheduler has done. Plain data; a diagnostic, never a decision input.
struct StreamStats {
  uint64_t enqueued = 0;           ///< uploads accepted (queued or in place)
  uint64_t enqueued_bytes = 0;     ///< their bytes
  uint64_t submitted = 0;          ///< uploads whose last piece was submitted
  uint64_t submitted_bytes = 0;    ///< bytes of pieces submitted
  uint64_t cancelled = 0;          ///< uploads cancelled before they started
  uint64_t stopped = 0;            ///< uploads cancelled part way (pieces had been cut)
  uint64_t failed = 0;             ///< uploads failed by a submission error
  uint64_t pieces = 0;             ///< pieces cut
  uint64_t batches = 0;            ///< batches submitted
  uint64_t submit_errors = 0;      ///< batches whose submission failed
  uint64_t queue_refusals = 0;     ///< enqueue() answers QueueFull
  uint64_t queue_timeouts = 0;     ///< enqueue() answers Timeout
  uint64_t queue_waits = 0;        ///< enqueue() calls that waited for room in the queue
  uint64_t ring_full = 0;          ///< pump rounds that found work but no ring room
  Duration ring_full_time{0};      ///< time the pump spent waiting for ring room
  uint64_t in_place_pieces = 0;    ///< pieces handed out by next_piece()
  uint64_t in_place_timeouts = 0;  ///< next_piece() answers Timeout
  uint64_t queued_bytes = 0;       ///< bytes queued, not yet cut, now (both priorities)
  uint64_t peak_queued_bytes = 0;  ///< the most queued_bytes has been
  uint64_t in_flight_batches = 0;  ///< batches cut and not yet retired, now
};

/// StreamStats' counters, in declaration order (counters.hpp: formatting, comparison,
/// serialisation).
constexpr auto counters_of(std::type_identity<StreamStats>) noexcept {
  using S = StreamStats;
  constexpr CounterUnit bytes = CounterUnit::Bytes;
  return std::tuple{counter("enqueued", "uploads accepted", &S::enqueued),
                    counter("enqueued_bytes", "bytes accepted", &S::enqueued_bytes, bytes),
                    counter("submitted", "uploads submitted", &S::submitted),
                    counter("submitted_bytes", "bytes submitted", &S::submitted_bytes, bytes),
                    counter("cancelled", "uploads cancelled", &S::cancelled),
                    counter("stopped", "uploads stopped part way", &S::stopped),
                    counter("failed", "uploads failed", &S::failed),
                    counter("pieces", "pieces", &S::pieces),
                    counter("batches", "batches submitted", &S::batches),
                    counter("submit_errors", "failed submissions", &S::submit_errors),
                    counter("queue_refusals", "queue refusals", &S::queue_refusals),
                    counter("queue_timeouts", "queue timeouts", &S::queue_timeouts),
                    counter("queue_waits", "waits for queue room", &S::queue_waits),
                    counter("ring_full", "rounds without ring room", &S::ring_full),
                    counter("ring_full_time_ns", "time without ring room (ns)", &S::ring_full_time),
                    counter("in_place_pieces", "pieces written in place", &S::in_place_pieces),
                    counter("in_place_timeouts", "in-place timeouts", &S::in_place_timeouts),
                    counter("queued_bytes", "bytes queued", &S::queued_bytes, bytes),
                    counter("peak_queued_bytes", "peak bytes queued", &S::peak_queued_bytes, bytes),
                    counter("in_flight_batches", "batches in flight", &S::in_flight_batches)};
}
static_assert(counters_complete<StreamStats>(),
              "StreamStats: a member is missing from counters_of");

/// See the file comment.
///
/// Ownership: owns its byte ring (its regions come from Deps::allocator) and its queue;
/// references the backend, allocator, clock and observers, which must outlive it. Destroying it
/// stops it (stop()), fails what is still queued, and destroys the ring: first make sure the
/// backend's queue has finished (e.g. wait for the last submitted value; drain()).
class StreamScheduler {
 public:
  /// What a scheduler works with. The pointees must outlive it.
  struct Deps {
    StreamBackend* backend = nullptr;       ///< required
    RegionAllocator* allocator = nullptr;   ///< required: the ring's staging memory
    Clock* clock = nullptr;                 ///< null: SteadyClock (waits and deadlines)
    RingObserver* ring_observer = nullptr;  ///< the byte ring's timeline; may be null
    StreamObserver* observer = nullptr;     ///< the uploads' timeline; may be null
    InvariantChecker* checker = nullptr;    ///< fed by the ring when given; may be null
    /// Copies pieces from the uploads' sources in parallel (shared with other users of the
    /// pool); null: the pump thread copies them alone.
    FillPool* fill_pool = nullptr;
  };
  /// Why create() made no scheduler.
  enum class CreateError : uint8_t {
    /// ring_bytes is 0, max_batch_pieces 0, buffer_granule 0, wait_slice <= 0, or
    /// min_batch_bytes above max_batch_bytes.
    InvalidConfig,
    /// Deps::backend or Deps::allocator is null.
    MissingDependency,
    /// The ring's memory could not be created.
    AllocationFailed,
  };
  /// Makes a scheduler and its ring. Errors: InvalidConfig, MissingDependency,
  /// AllocationFailed.
  static Expected<std::unique_ptr<StreamScheduler>, CreateError> create(
      const StreamSchedulerConfig& config, Deps deps);
  /// Stops and fails what is queued (see the class comment).
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
  /// Errors: BadTicket, Done, Cancelled, Timeout, TooLarge, Stopped, DeviceLost.
  Expected<InPlacePiece, InPlaceError> next_piece(const StreamTicket& ticket,
                                                  Duration timeout = Duration{0});
  /// Submits a written piece (a batch of its own). Returns the timeline value it signals, or
  /// the submission's error (the upload is then Failed).
  Expected<TimelineValue, SubmitError> commit(const StreamTicket& ticket,
                                              const InPlacePiece& piece);
  /// Gives a piece back unwritten: its bytes are reclaimed, and the upload is cancelled (as
  /// cancel() would: Stopped when pieces had been committed).
  void abandon(const StreamTicket& ticket, const InPlacePiece& piece);

  /// Cancels an upload: see CancelResult. Any thread.
  CancelResult cancel(const StreamTicket& ticket);

  /// The upload's status, Complete once the backend's timeline has reached its value; Failed
  /// when it had not when the backend's device was lost (StreamBackend::lost()).
  [[nodiscard]] StreamStatus status(const StreamTicket& ticket);
  /// Waits up to `timeout` for the upload to be complete (or to end otherwise) and returns its
  /// status: until its last piece is submitted, then on the backend's timeline. Returns Failed
  /// within about wait_slice once the backend's device is lost.
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

 private:
  struct Batch;
  struct Cut;
  StreamScheduler(const StreamSchedulerConfig& config, Deps deps);

  Duration now() const;
  Expected<std::shared_ptr<detail::StreamUpload>, EnqueueError> make_upload(
      const StreamRequest& request, bool in_place) const;
  void retire_locked(TimelineValue completed);
  uint64_t cut_locked(uint64_t free, bool padded, std::vector<Cut>& cuts,
                      uint64_t* batch_alignment);
  Batch* plan_locked(uint64_t* wait_token);
  struct Filling;
  void start_fill(Filling& filling);
  void finish_fill(Filling& filling);
  PumpResult submit(Batch& batch);
  void finish_submit_locked(Batch& batch, Expected<TimelineValue, SubmitError> result);
  void end_upload_locked(detail::StreamUpload& upload, StreamStatus status);
  void unqueue_locked(detail::StreamUpload& upload);
  uint64_t queued_limit_bytes() const noexcept;
  bool queue_has_room_locked(const detail::StreamUpload& upload) const;
  std::shared_ptr<detail::StreamUpload> front_locked();
  std::optional<TimelineValue> wait_token_value_locked(uint64_t token) const;
  bool waited_for_ring(std::unique_lock<std::mutex>& lock, uint64_t token, Duration max_wait);
  bool check_lost_locked();
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
  std::vector<BatchPiece> scratch_;             // the batch being cut
  std::vector<Cut> cuts_;                       // its uploads' cursors after the cut
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
  std::vector<std::unique_ptr<FillJob>> spare_jobs_;
};

/// Names of StreamScheduler::CreateError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<StreamScheduler::CreateError>) noexcept {
  return std::to_array<std::string_view>(
      {"InvalidConfig", "MissingDependency", "AllocationFailed"});
}
static_assert(enum_names_complete<StreamScheduler::CreateError>(),
              "StreamScheduler::CreateError: a value has no name");

}  // namespace staging
