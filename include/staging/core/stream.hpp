// The vocabulary of streamed uploads: what a streamer (vulkan::Streamer) takes and answers —
// priorities, tickets and their statuses, in-place pieces, the configuration and the counters.
//
// A streamer moves uploads of any size from any thread through a byte ring of fixed size on a
// queue of its own:
//   - any size: an upload larger than the ring streams through it in pieces (buffers by byte
//     ranges, images by levels, layers, slices and rows of texel blocks), each submitted as soon
//     as it is filled; the staging memory stays at ring_bytes whatever the uploads' sizes;
//   - priorities: Now is cut before Prefetch, also between the pieces of a long Prefetch upload;
//   - backpressure: the queue holds at most max_queued_bytes (and max_queued_uploads) not yet
//     cut; an upload then waits up to the caller's timeout or is refused at once (timeout 0);
//   - cancellation: an upload not yet started is dropped; one partly submitted stops after the
//     pieces already cut (its destination is then partly written);
//   - completion: every upload's ticket gets a timeline value once its last piece is submitted;
//     the destination holds the data once the streamer's timeline reaches it.
//
// A streamer's timeline (uploads accepted, refused and ended, batches cut and submitted, waits for
// ring room) is reported as Events to an Observer (staging/core/observer.hpp), beside its byte
// ring's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "staging/core/fill_pool.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging {

class StreamScheduler;
namespace detail {
struct StreamUpload;
}

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

/// A handle to an upload, shared by the caller and the streamer. Copyable; cheap. The queries
/// read atomics and are safe from any thread; the streamer's status() also knows Complete.
class StreamTicket {
 public:
  /// A ticket of no upload (id 0).
  StreamTicket() noexcept = default;
  /// The upload's id (1, 2, ... per scheduler; 0 for an empty ticket).
  [[nodiscard]] uint64_t id() const noexcept;
  /// The status as the scheduler last set it (Submitted stays Submitted here after the timeline
  /// reaches the value: ask the streamer's status() for Complete). Failed for an empty ticket.
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

/// Staging bytes an upload is written into in place, and their row layout: a piece of a streamed
/// in-place upload (Streamer::write_in_place(), handed out by next_piece(): write the part of the
/// upload it names into `bytes`, then commit() it, or abandon() it), or a whole image region a
/// Vulkan frame reserved (StagingFrame::reserve(region) or SharedWriter::reserve(region):
/// source_offset 0, the whole region; write it before the frame's finish(), or the writer's
/// leave()).
///
/// The part is bytes [source_offset, source_offset + source_bytes) of the upload as it would be
/// packed tightly (a buffer: its bytes; an image: level after level, each layer after layer,
/// slice after slice, row after row of texel blocks). In `bytes` those are `rows` rows of
/// `row_bytes` bytes, row i starting at i × row_pitch. A streamed buffer piece, and a streamed
/// image piece whose rows need no padding, is one run (rows 1, row_bytes == row_pitch ==
/// source_bytes); an image
/// piece laid out with padded rows has rows of texel blocks, and the row_pitch - row_bytes bytes
/// after each row are never read. The Vulkan Streamer packs rows tightly (every piece is one
/// run); a writer that copies row by row at row_pitch is right either way.
///
/// A frame's image region is every row of every depth slice and array layer in turn, `rows` of
/// them, padded to row_pitch when the ring pads image rows (vulkan::RingConfig::pad_image_rows).
///
/// Threading: a piece is written by one thread at a time; a streamed piece is committed from any
/// thread.
class InPlacePiece {
 public:
  /// The staging bytes to write (a streamed piece's: valid until commit() or abandon(); a
  /// frame's: until its finish() or destruction; a shared writer's: until leave()).
  std::span<std::byte> bytes;
  /// Where the piece's part starts in the tightly packed upload.
  uint64_t source_offset = 0;
  /// The part's size in the tightly packed upload (rows × row_bytes).
  uint64_t source_bytes = 0;
  /// Rows of the part in `bytes` (>= 1).
  uint64_t rows = 1;
  /// Bytes of one row (row_bytes × rows == source_bytes).
  uint64_t row_bytes = 0;
  /// Bytes from one row's start to the next's in `bytes` (>= row_bytes).
  uint64_t row_pitch = 0;

 private:
  friend class StreamScheduler;
  uint64_t token_ = 0;  // the scheduler's batch holding it (commit() and abandon() find it)
};

/// How a streamer is sized (vulkan::StreamerConfig::schedule).
struct StreamSchedulerConfig {
  /// Bytes of staging memory (the byte ring's capacity and cap; > 0).
  uint64_t ring_bytes = 0;
  /// Most bytes one batch (one submission) holds; 0: ring_bytes / 4; a larger value is lowered
  /// to ring_bytes. Smaller batches are submitted sooner (less latency); larger ones cost fewer
  /// submissions. A batch holding an upload's smallest piece (one row of texel blocks, one
  /// buffer granule) takes it whole, even when that is larger.
  uint64_t max_batch_bytes = 0;
  /// Most pieces one batch holds (>= 1).
  uint32_t max_batch_pieces = 1024;
  /// A batch is not cut smaller than this while the first upload it would hold has more left:
  /// the pump waits for ring room instead of sending slivers. 0: min(64 KiB, ring_bytes / 16).
  /// Must not be above max_batch_bytes (as resolved), the default included: a max_batch_bytes
  /// below 64 KiB needs a min_batch_bytes of its own (create() answers InvalidConfig).
  uint64_t min_batch_bytes = 0;
  /// Buffer uploads are cut at multiples of this (their last piece excepted; >= 1).
  uint64_t buffer_granule = 4096;
  /// Most bytes of queued uploads not yet cut (Now uploads are counted apart, so prefetches
  /// never keep a Now upload out); 0: 4 × ring_bytes. An upload larger than the cap is taken
  /// when nothing of its priority is queued.
  uint64_t max_queued_bytes = 0;
  /// Most uploads queued per priority (0: no limit).
  uint32_t max_queued_uploads = 0;
  /// With a fill pool (the streamer's fill threads): pieces of at least this many bytes are copied
  /// by the pool's threads (in slices, in parallel); smaller ones by the pump thread itself.
  uint64_t pool_min_bytes = uint64_t{64} << 10;
  /// With a fill pool: most batches being filled at once (the pump cuts the next batches while
  /// the pool fills the first; each is submitted as soon as it is filled). 0: as many as the
  /// ring has room for. Without a pool batches are filled one at a time by the pump.
  uint32_t max_filling_batches = 0;
  /// With a fill pool: how many of its threads fill the pump's pieces at once is adjusted from
  /// what the pump sees (true), or every pool thread takes part (false). The pump starts with
  /// all of them; each round that finds the ring full (the fill is ahead of the copies: more
  /// threads only take memory bandwidth from the copies reading the same memory) it lets one
  /// fewer in, down to one; each time a batch filled by the pool is ready while nothing
  /// submitted earlier is still copying, and the pump has had work since its last idle round
  /// (the copies waited for the fill), one more, up to the pool's size. The pump thread helps
  /// every fill and is not counted. Another user's jobs on a shared pool are not limited.
  bool adapt_fill_threads = true;
  /// How the bytes are copied into staging memory (fill_pool.hpp: FillMethod).
  FillMethod fill_method = FillMethod::Auto;
  /// The longest single wait of the pump (for the GPU, or for work), so that stop() and new
  /// work are noticed (> 0).
  Duration wait_slice = std::chrono::milliseconds(2);
  /// Runs the byte ring's invariant checker on every operation (ByteRingConfig).
  bool check_invariants = false;
};

/// What a streamer has done. Plain data; a diagnostic, never a decision input.
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
  uint64_t queue_refusals = 0;     ///< uploads refused: the queue was full
  uint64_t queue_timeouts = 0;     ///< uploads refused: the queue stayed full for the timeout
  uint64_t queue_waits = 0;        ///< uploads that waited for room in the queue
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

}  // namespace staging
