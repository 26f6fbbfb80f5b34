// StreamScheduler: see include/staging/detail/core/stream_scheduler.hpp.
//
// State (under mutex_):
//   queues_[priority]  uploads from pointers with pieces left to cut, FIFO; the front one may be
//                      part way (its cursor advanced)
//   batches_           every batch cut and not yet retired, by token (tokens are consecutive):
//                      Cut (being filled, or an in-place piece being written), Submitted (value
//                      known) or Dropped (never submitted; its ring bytes were cancelled)
//   ring_              the byte ring; each batch is one reservation whose token is its number
// An upload's `pending` counts its pieces cut and not yet submitted or dropped; it ends (status
// past Streaming, StreamBackend::released) when that reaches 0 with nothing more to cut.
#include "staging/detail/core/stream_scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "staging/core/fill_pool.hpp"
#include "staging/core/observer.hpp"
#include "staging/core/stream.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/detail/core/clock.hpp"
#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/core/fill_engine.hpp"

namespace staging {

namespace detail {

struct StreamUpload {
  const StreamScheduler* scheduler = nullptr;
  uint64_t id = 0;
  uint64_t bytes = 0;
  StreamRequest request;  // request.pieces advances as pieces are cut (under the lock)
  std::atomic<StreamStatus> status{StreamStatus::Queued};
  std::atomic<TimelineValue> value{0};  // 0: not known
  // Under the scheduler's lock:
  bool in_place = false;
  bool queued = false;           // in queues_
  bool stopped = false;          // no more pieces will be cut (cancelled or failed)
  bool failed = false;           // a submission of its pieces failed
  bool piece_out = false;        // in place: a piece handed out and not yet committed
  uint32_t pending = 0;          // pieces cut, not yet submitted or dropped
  TimelineValue last_value = 0;  // the value of the last batch of its pieces submitted
};

}  // namespace detail

namespace {

// A batch is never aligned more strictly than this unless its first piece asks for it.
constexpr uint64_t kMaxBatchAlignment = uint64_t{64} << 10;

std::size_t index(StreamPriority p) noexcept {
  return static_cast<std::size_t>(p) < 2 ? static_cast<std::size_t>(p) : 1;
}

}  // namespace

// --- StreamTicket -------------------------------------------------------------------------------

uint64_t StreamTicket::id() const noexcept {
  return upload_ ? upload_->id : 0;
}

StreamStatus StreamTicket::status() const noexcept {
  return upload_ ? upload_->status.load(std::memory_order_acquire) : StreamStatus::Failed;
}

std::optional<TimelineValue> StreamTicket::value() const noexcept {
  if (!upload_) return std::nullopt;
  const TimelineValue v = upload_->value.load(std::memory_order_acquire);
  if (v == 0) return std::nullopt;
  return v;
}

uint64_t StreamTicket::bytes() const noexcept {
  return upload_ ? upload_->bytes : 0;
}

// --- Batch --------------------------------------------------------------------------------------

struct StreamScheduler::Batch {
  enum class State : uint8_t { Cut, Submitted, Dropped };
  uint64_t token = 0;
  Reservation reservation;
  std::vector<BatchPiece> pieces;
  std::vector<std::shared_ptr<detail::StreamUpload>> uploads;  // per piece
  State state = State::Cut;
  TimelineValue value = 0;
  bool in_place = false;
};

// A batch being filled: the pool's jobs for its large pieces (its small ones were copied when
// it was started).
struct StreamScheduler::Filling {
  Batch* batch = nullptr;
  std::vector<std::unique_ptr<detail::FillJob>> jobs;
};

// One upload's share of a batch being cut: its cursor after the cut.
struct StreamScheduler::Cut {
  std::shared_ptr<detail::StreamUpload> upload;
  PieceCursor cursor;
};

// --- creation -----------------------------------------------------------------------------------

Expected<std::unique_ptr<StreamScheduler>, CreateError> StreamScheduler::create(
    const StreamSchedulerConfig& config, Deps deps) {
  StreamSchedulerConfig c = config;
  if (c.ring_bytes == 0 || c.max_batch_pieces == 0 || c.buffer_granule == 0 ||
      c.wait_slice <= Duration{0}) {
    return unexpected(CreateError::InvalidConfig);
  }
  if (c.max_batch_bytes == 0) c.max_batch_bytes = std::max<uint64_t>(c.ring_bytes / 4, 1);
  c.max_batch_bytes = std::min(c.max_batch_bytes, c.ring_bytes);
  if (c.min_batch_bytes == 0) {
    c.min_batch_bytes =
        std::min<uint64_t>(uint64_t{64} << 10, std::max<uint64_t>(c.ring_bytes / 16, 1));
  }
  if (c.min_batch_bytes > c.max_batch_bytes) return unexpected(CreateError::InvalidConfig);
  if (c.max_queued_bytes == 0)
    c.max_queued_bytes = checked_mul(c.ring_bytes, 4).value_or(UINT64_MAX);
  if (deps.backend == nullptr || deps.allocator == nullptr) {
    return unexpected(CreateError::MissingDependency);
  }
  std::unique_ptr<StreamScheduler> s(new StreamScheduler(c, deps));
  ByteRingConfig rc;
  rc.capacity = c.ring_bytes;
  rc.cap = c.ring_bytes;
  rc.policy = ExhaustionPolicy::Defer;
  rc.check_invariants = c.check_invariants;
  detail::ByteRingDeps rd;
  rd.allocator = deps.allocator;
  rd.clock = s->clock_;
  rd.observer = deps.observer;
  rd.checker = deps.checker;
  auto ring = detail::create_byte_ring(rc, rd);
  if (!ring) return unexpected(ring.error());
  s->ring_.emplace(std::move(*ring));
  return s;
}

StreamScheduler::StreamScheduler(const StreamSchedulerConfig& config, Deps deps)
    : config_(config),
      deps_(deps),
      clock_(deps.clock != nullptr ? deps.clock : &SteadyClock::instance()) {
  if (deps_.fill_pool != nullptr) {
    detail::FillEngine& engine = detail::engine_of(*deps_.fill_pool);
    fill_limit_.store(engine.threads(), std::memory_order_relaxed);
    // A lane of its own: another user of a shared pool is neither limited by nor counted
    // against this scheduler's fill_limit_.
    fill_lane_ = engine.new_lane();
  }
}

StreamScheduler::~StreamScheduler() {
  stop();
  // Batches the pump was filling: no pool thread may touch their memory or sources any more.
  for (auto& f : filling_) {
    for (auto& job : f->jobs)
      detail::engine_of(*deps_.fill_pool).cancel(*job);
  }
  if (deps_.fill_pool != nullptr) detail::engine_of(*deps_.fill_pool).release_lane(fill_lane_);
  std::lock_guard lock(mutex_);
  for (auto& q : queues_) {
    while (!q.empty()) {
      auto upload = q.front();
      unqueue_locked(*upload);
      upload->stopped = true;
      if (upload->pending == 0) end_upload_locked(*upload, StreamStatus::Cancelled);
    }
  }
  for (auto& b : batches_) {
    if (b->state != Batch::State::Cut) continue;
    for (auto& u : b->uploads) {
      if (u->pending > 0 && --u->pending == 0) {
        u->stopped = true;
        end_upload_locked(*u, StreamStatus::Failed);
      }
    }
  }
  // In-place uploads between pieces (or not started): cancelled, as queued ones are.
  while (!in_place_.empty()) {
    const std::shared_ptr<detail::StreamUpload> u = in_place_.back();
    u->stopped = true;
    end_upload_locked(*u, StreamStatus::Cancelled);
  }
}

Duration StreamScheduler::now() const {
  return clock_->now();
}

// --- producers ----------------------------------------------------------------------------------

// A new upload's record (not yet numbered or queued). Errors: Empty, TooLarge (its smallest
// piece, with the alignment's padding, exceeds the ring).
Expected<std::shared_ptr<detail::StreamUpload>, EnqueueError> StreamScheduler::make_upload(
    const StreamRequest& request, bool in_place) const {
  if (request.pieces.total_bytes() == 0 || request.pieces.done()) {
    return unexpected(EnqueueError::Empty);
  }
  const uint64_t alignment =
      lcm(std::max<uint64_t>(request.alignment, 1), request.pieces.alignment()).value_or(0);
  if (alignment == 0) return unexpected(EnqueueError::TooLarge);
  if (request.pieces.smallest_next() >
      config_.ring_bytes - std::min(config_.ring_bytes, alignment - 1)) {
    return unexpected(EnqueueError::TooLarge);
  }
  auto upload = std::make_shared<detail::StreamUpload>();
  upload->scheduler = this;
  upload->request = request;
  upload->request.alignment = alignment;
  upload->bytes = request.pieces.total_bytes() - request.pieces.cut_bytes();
  upload->in_place = in_place;
  if (in_place) upload->request.source = nullptr;
  return upload;
}

Expected<StreamTicket, EnqueueError> StreamScheduler::enqueue(const StreamRequest& request,
                                                              Duration timeout) {
  if (request.source == nullptr) return unexpected(EnqueueError::Empty);
  auto made = make_upload(request, /*in_place=*/false);
  if (!made) return unexpected(made.error());
  std::shared_ptr<detail::StreamUpload> upload = std::move(*made);
  const std::size_t p = index(request.priority);

  std::unique_lock lock(mutex_);
  if (stopping_) return unexpected(EnqueueError::Stopped);
  if (check_lost_locked()) return unexpected(EnqueueError::DeviceLost);
  if (!queue_has_room_locked(*upload)) {
    const auto refuse = [&](bool timed_out) {
      if (deps_.observer != nullptr) {
        deps_.observer->on_event(Event{.kind = EventKind::UploadRefused,
                                       .time = now(),
                                       .bytes = upload->bytes,
                                       .timed_out = timed_out});
      }
    };
    if (timeout <= Duration{0}) {
      ++stats_.queue_refusals;
      refuse(false);
      return unexpected(EnqueueError::QueueFull);
    }
    ++stats_.queue_waits;
    const Deadline deadline(*clock_, timeout);
    const auto room = [&] { return stopping_ || lost_ || queue_has_room_locked(*upload); };
    while (!room() && !deadline.passed())
      room_cv_.wait_for(lock, deadline.remaining());
    if (!room()) {
      ++stats_.queue_timeouts;
      refuse(true);
      return unexpected(EnqueueError::Timeout);
    }
    if (stopping_) return unexpected(EnqueueError::Stopped);
    if (lost_) return unexpected(EnqueueError::DeviceLost);
  }
  upload->id = next_upload_++;
  upload->queued = true;
  queues_[p].push_back(upload);
  queued_bytes_[p] += upload->bytes;
  stats_.queued_bytes = queued_bytes_[0] + queued_bytes_[1];
  stats_.peak_queued_bytes = std::max(stats_.peak_queued_bytes, stats_.queued_bytes);
  ++stats_.enqueued;
  stats_.enqueued_bytes += upload->bytes;
  if (deps_.observer != nullptr) {
    deps_.observer->on_event(Event{.kind = EventKind::UploadAccepted,
                                   .time = now(),
                                   .id = upload->id,
                                   .bytes = upload->bytes,
                                   .owner = request.owner,
                                   .priority = request.priority});
  }
  lock.unlock();
  work_cv_.notify_one();
  return StreamTicket(std::move(upload));
}

uint64_t StreamScheduler::queued_limit_bytes() const noexcept {
  return config_.max_queued_bytes;
}

bool StreamScheduler::queue_has_room_locked(const detail::StreamUpload& upload) const {
  const std::size_t p = index(upload.request.priority);
  if (config_.max_queued_uploads != 0 && queues_[p].size() >= config_.max_queued_uploads) {
    return false;
  }
  return queued_bytes_[p] == 0 || queued_bytes_[p] + upload.bytes <= queued_limit_bytes();
}

Expected<StreamTicket, EnqueueError> StreamScheduler::write_in_place(const StreamRequest& request) {
  auto made = make_upload(request, /*in_place=*/true);
  if (!made) return unexpected(made.error());
  std::shared_ptr<detail::StreamUpload> upload = std::move(*made);
  std::lock_guard lock(mutex_);
  if (stopping_) return unexpected(EnqueueError::Stopped);
  if (check_lost_locked()) return unexpected(EnqueueError::DeviceLost);
  upload->id = next_upload_++;
  in_place_.push_back(upload);
  ++stats_.enqueued;
  stats_.enqueued_bytes += upload->bytes;
  if (deps_.observer != nullptr) {
    deps_.observer->on_event(Event{.kind = EventKind::UploadAccepted,
                                   .time = now(),
                                   .id = upload->id,
                                   .bytes = upload->bytes,
                                   .owner = request.owner,
                                   .priority = request.priority,
                                   .in_place = true});
  }
  return StreamTicket(std::move(upload));
}

std::optional<InPlacePiece> StreamScheduler::cut_in_place_piece_locked(const StreamTicket& ticket) {
  detail::StreamUpload* u = ticket.upload_.get();
  const uint64_t a = u->request.alignment;
  const uint64_t free = ring_->largest_free();
  const uint64_t left = u->request.pieces.total_bytes() - u->request.pieces.cut_bytes();
  const uint64_t max_batch = std::max(config_.max_batch_bytes, u->request.pieces.smallest_next());
  // First assuming no padding at the ring's head (the usual case), then leaving room for it.
  for (const uint64_t slack : {uint64_t{0}, a - 1}) {
    const uint64_t budget = std::min(free > slack ? free - slack : 0, max_batch);
    if (budget < std::min(config_.min_batch_bytes, left)) continue;
    PieceCursor cursor = u->request.pieces;
    const auto piece = cursor.next(budget);
    if (!piece) continue;
    ReserveRequest rr;
    rr.size = piece->staging_bytes;
    rr.alignment = a;
    rr.token = next_token_;
    rr.owner = u->request.owner;
    const auto res = ring_->reserve(rr);
    if (!res) continue;
    auto batch = std::make_unique<Batch>();
    batch->token = next_token_++;
    batch->reservation = *res;
    batch->in_place = true;
    batch->pieces.push_back({*piece, res->offset, u->id, u->request.context});
    batch->uploads.push_back(ticket.upload_);
    u->request.pieces = cursor;
    ++u->pending;
    u->piece_out = true;
    u->status.store(StreamStatus::Streaming, std::memory_order_release);
    ++stats_.pieces;
    ++stats_.in_place_pieces;
    ++stats_.in_flight_batches;
    InPlacePiece out;
    out.bytes = std::span(deps_.backend->mapped(res->region) + res->offset,
                          static_cast<std::size_t>(piece->staging_bytes));
    out.source_offset = piece->source_offset;
    out.source_bytes = piece->bytes;
    if (const TextureLayout& layout = piece->image.layout; layout.rows != 0 && !layout.tight()) {
      out.rows = uint64_t{layout.rows} * layout.images;
      out.row_bytes = layout.row_bytes;
      out.row_pitch = layout.row_pitch;
    } else {  // a buffer piece, or tight rows: one run
      out.row_bytes = out.row_pitch = piece->bytes;
    }
    out.token_ = batch->token;
    if (deps_.observer != nullptr) {
      deps_.observer->on_event(Event{.kind = EventKind::BatchCut,
                                     .time = now(),
                                     .id = u->id,
                                     .bytes = res->size,
                                     .token = batch->token,
                                     .pieces = 1,
                                     .priority = u->request.priority});
    }
    batches_.push_back(std::move(batch));
    return out;
  }
  return std::nullopt;
}

Expected<InPlacePiece, UploadError> StreamScheduler::next_piece(const StreamTicket& ticket,
                                                                Duration timeout) {
  detail::StreamUpload* u = ticket.upload_.get();
  if (!owns(ticket) || !u->in_place) {
    return unexpected(UploadError::InvalidArgument);
  }
  const Deadline deadline(*clock_, timeout);
  std::unique_lock lock(mutex_);
  if (u->piece_out) return unexpected(UploadError::InvalidArgument);
  const Duration started = now();
  bool waited = false;
  uint64_t waited_token = 0;
  const auto report_wait = [&] {
    if (waited && deps_.observer != nullptr) {
      deps_.observer->on_event(Event{.kind = EventKind::RoomWait,
                                     .time = started,
                                     .token = waited_token,
                                     .waited = now() - started,
                                     .in_place = true});
    }
  };
  for (;;) {
    if (stopping_) return unexpected(UploadError::Inactive);
    if (check_lost_locked()) {
      if (!u->stopped) {
        u->stopped = true;
        u->failed = true;
        if (u->pending == 0) end_upload_locked(*u, StreamStatus::Failed);
      }
      return unexpected(UploadError::DeviceLost);
    }
    if (u->stopped) return unexpected(u->failed ? UploadError::Failed : UploadError::Cancelled);
    if (u->request.pieces.done()) return unexpected(UploadError::Done);
    retire_locked(deps_.backend->completed());
    if (auto out = cut_in_place_piece_locked(ticket)) {
      report_wait();
      return *out;
    }
    if (deadline.remaining() <= Duration{0}) {
      ++stats_.in_place_timeouts;
      report_wait();
      if (deps_.observer != nullptr) {
        deps_.observer->on_event(Event{.kind = EventKind::UploadRefused,
                                       .time = now(),
                                       .bytes = u->bytes,
                                       .timed_out = timeout > Duration{0},
                                       .in_place = true});
      }
      return unexpected(UploadError::Timeout);
    }
    if (batches_.empty()) {
      // Nothing to wait for: the ring is empty and the piece still does not fit (a row larger
      // than the batch size is cut smaller than min_batch only by a larger ring).
      return unexpected(UploadError::TooLarge);
    }
    waited = true;
    waited_token = batches_.front()->token;
    (void)waited_for_ring(lock, waited_token, deadline.remaining());
  }
}

Expected<TimelineValue, UploadError> StreamScheduler::commit(const StreamTicket& ticket,
                                                             const InPlacePiece& piece) {
  detail::StreamUpload* u = ticket.upload_.get();
  if (!owns(ticket) || !u->in_place) {
    return unexpected(UploadError::InvalidArgument);  // not an in-place upload of this one
  }
  Batch* batch = nullptr;
  {
    std::lock_guard lock(mutex_);
    for (auto& b : batches_) {
      if (b->token == piece.token_) batch = b.get();
    }
    // A piece not handed out, committed twice, or another upload's.
    if (batch == nullptr || batch->state != Batch::State::Cut || !u->piece_out ||
        batch->uploads.empty() || batch->uploads.front().get() != u) {
      return unexpected(UploadError::InvalidArgument);
    }
  }
  Expected<TimelineValue, UploadError> result = unexpected(UploadError::Failed);
  {
    std::lock_guard submit_lock(submit_mutex_);
    StreamBatch view{batch->token, batch->reservation.region, batch->reservation.offset,
                     batch->reservation.size, batch->pieces};
    result = deps_.backend->submit(view);
  }
  std::lock_guard lock(mutex_);
  u->piece_out = false;
  finish_submit_locked(*batch, result);
  return result;
}

void StreamScheduler::abandon(const StreamTicket& ticket, const InPlacePiece& piece) {
  detail::StreamUpload* u = ticket.upload_.get();
  STAGING_ASSERT(owns(ticket) && u->in_place,
                 "StreamScheduler::abandon() of a ticket that is not an in-place upload here");
  std::lock_guard lock(mutex_);
  for (auto& b : batches_) {
    if (b->token != piece.token_ || b->state != Batch::State::Cut) continue;
    ring_->cancel(b->reservation.id);
    b->state = Batch::State::Dropped;
    u->piece_out = false;
    --u->pending;
    if (!u->stopped) {  // not counted yet (cancel() counts what it stops)
      u->stopped = true;
      ++(u->last_value != 0 ? stats_.stopped : stats_.cancelled);
    }
    if (u->pending == 0) end_upload_locked(*u, StreamStatus::Cancelled);
    retire_locked(completed_);
    state_cv_.notify_all();
    return;
  }
  STAGING_ASSERT(false, "StreamScheduler::abandon() of a piece not handed out");
}

StreamStatus StreamScheduler::cancel(const StreamTicket& ticket) {
  detail::StreamUpload* u = ticket.upload_.get();
  if (!owns(ticket)) return StreamStatus::Failed;
  {
    std::lock_guard lock(mutex_);
    if (u->stopped) return u->failed ? StreamStatus::Failed : StreamStatus::Cancelled;
    const StreamStatus s = u->status.load(std::memory_order_relaxed);
    // Every piece cut, or the upload past Streaming (Submitted, Complete, or ended).
    const bool too_late =
        u->request.pieces.done() || (s != StreamStatus::Queued && s != StreamStatus::Streaming);
    if (!too_late) return stop_locked(*u);
  }
  return status(ticket);  // too late (every piece is cut) or ended: as the status reads now
}

StreamStatus StreamScheduler::stop_locked(detail::StreamUpload& upload) {
  detail::StreamUpload* u = &upload;
  u->stopped = true;
  const bool started = u->request.pieces.cut_bytes() > 0 || u->pending > 0;
  if (u->queued) unqueue_locked(*u);
  if (started) {
    ++stats_.stopped;
  } else {
    ++stats_.cancelled;
  }
  if (u->pending == 0 && !u->piece_out) end_upload_locked(*u, StreamStatus::Cancelled);
  return StreamStatus::Cancelled;
}

bool StreamScheduler::owns(const StreamTicket& ticket) const noexcept {
  return ticket.upload_ != nullptr && ticket.upload_->scheduler == this;
}

StreamStatus StreamScheduler::status(const StreamTicket& ticket) {
  detail::StreamUpload* u = ticket.upload_.get();
  if (!owns(ticket)) return StreamStatus::Failed;
  StreamStatus s = u->status.load(std::memory_order_acquire);
  if (s != StreamStatus::Submitted) return s;
  if (deps_.backend->completed() >= u->value.load(std::memory_order_acquire)) {
    StreamStatus expected = StreamStatus::Submitted;
    u->status.compare_exchange_strong(expected, StreamStatus::Complete);
    return StreamStatus::Complete;
  }
  // Not complete, and never will be: the scheduler marks it Failed as it sees the loss.
  if (deps_.backend->lost()) return StreamStatus::Failed;
  return s;
}

StreamStatus StreamScheduler::wait(const StreamTicket& ticket, Duration timeout) {
  detail::StreamUpload* u = ticket.upload_.get();
  if (!owns(ticket)) return StreamStatus::Failed;
  const Deadline deadline(*clock_, timeout);
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      const StreamStatus s = u->status.load(std::memory_order_acquire);
      if (s != StreamStatus::Queued && s != StreamStatus::Streaming) break;
      // A lost device ends queued uploads at once and the pieces being filled at their failed
      // submission; an in-place upload between pieces ends here.
      if (check_lost_locked() && u->in_place && u->pending == 0 && !u->piece_out) {
        u->stopped = true;
        u->failed = true;
        end_upload_locked(*u, StreamStatus::Failed);
        break;
      }
      const Duration left = deadline.remaining();
      if (left <= Duration{0}) break;
      state_cv_.wait_for(lock, std::min(left, config_.wait_slice));
    }
  }
  StreamStatus s = status(ticket);
  if (s == StreamStatus::Submitted) {
    (void)deps_.backend->wait(u->value.load(std::memory_order_acquire), deadline.remaining());
    s = status(ticket);
  }
  return s;
}

// --- bookkeeping --------------------------------------------------------------------------------

// Once the backend's device is lost (checked without a device call): every queued upload fails,
// every submitted upload not complete reads Failed, and producers and waiters wake. Pieces being
// filled fail at their submission (the backend refuses it). Nothing is cut any more, and the
// batches in flight never retire: their staging bytes are not reused. True when lost.
bool StreamScheduler::check_lost_locked() {
  if (lost_) return true;
  if (!deps_.backend->lost()) return false;
  lost_ = true;
  for (auto& q : queues_) {
    while (!q.empty()) {
      const std::shared_ptr<detail::StreamUpload> u = q.front();
      unqueue_locked(*u);
      u->stopped = true;
      u->failed = true;
      if (u->pending == 0 && !u->piece_out) end_upload_locked(*u, StreamStatus::Failed);
    }
  }
  for (auto& b : batches_) {
    if (b->state != Batch::State::Submitted) continue;
    for (auto& u : b->uploads) {
      if (u->value.load(std::memory_order_acquire) <= completed_) continue;
      StreamStatus expected = StreamStatus::Submitted;
      if (u->status.compare_exchange_strong(expected, StreamStatus::Failed)) ++stats_.failed;
    }
  }
  work_cv_.notify_all();
  room_cv_.notify_all();
  state_cv_.notify_all();
  return true;
}

void StreamScheduler::unqueue_locked(detail::StreamUpload& upload) {
  const std::size_t p = index(upload.request.priority);
  auto& q = queues_[p];
  const auto it =
      std::find_if(q.begin(), q.end(), [&](const auto& x) { return x.get() == &upload; });
  STAGING_ASSERT(it != q.end(), "a queued upload is missing from its queue");
  queued_bytes_[p] -= upload.request.pieces.total_bytes() - upload.request.pieces.cut_bytes();
  stats_.queued_bytes = queued_bytes_[0] + queued_bytes_[1];
  q.erase(it);
  upload.queued = false;
  room_cv_.notify_all();
}

void StreamScheduler::end_upload_locked(detail::StreamUpload& upload, StreamStatus status) {
  if (upload.in_place) {
    std::erase_if(in_place_, [&](const auto& u) { return u.get() == &upload; });
  }
  if (upload.last_value != 0) upload.value.store(upload.last_value, std::memory_order_release);
  upload.status.store(status, std::memory_order_release);
  if (status == StreamStatus::Submitted) ++stats_.submitted;
  if (status == StreamStatus::Failed) ++stats_.failed;
  if (upload.request.context != nullptr) deps_.backend->released(upload.request.context);
  if (deps_.observer != nullptr) {
    deps_.observer->on_event(Event{.kind = EventKind::UploadEnded,
                                   .time = now(),
                                   .id = upload.id,
                                   .owner = upload.request.owner,
                                   .value = upload.last_value,
                                   .status = status});
  }
  state_cv_.notify_all();
}

void StreamScheduler::retire_locked(TimelineValue completed) {
  completed_ = std::max(completed_, completed);
  uint64_t last = 0;
  while (!batches_.empty()) {
    const Batch& b = *batches_.front();
    const bool done = (b.state == Batch::State::Submitted && b.value <= completed_) ||
                      b.state == Batch::State::Dropped;
    if (!done) break;
    last = b.token;
    batches_.pop_front();
    --stats_.in_flight_batches;
  }
  if (last != 0) ring_->retire(last);
}

std::shared_ptr<detail::StreamUpload> StreamScheduler::front_locked() {
  for (auto& q : queues_) {
    if (!q.empty()) return q.front();
  }
  return nullptr;
}

void StreamScheduler::finish_submit_locked(Batch& batch,
                                           Expected<TimelineValue, UploadError> result) {
  if (result) {
    batch.state = Batch::State::Submitted;
    batch.value = *result;
    newest_submitted_ = std::max(newest_submitted_, *result);
    ++stats_.batches;
  } else {
    ring_->cancel(batch.reservation.id);
    batch.state = Batch::State::Dropped;
    ++stats_.submit_errors;
  }
  if (deps_.observer != nullptr) {
    deps_.observer->on_event(Event{.kind = EventKind::BatchSubmitted,
                                   .time = now(),
                                   .token = batch.token,
                                   .value = result ? *result : 0,
                                   .failed = !result});
  }
  for (std::size_t i = 0; i < batch.pieces.size(); ++i) {
    detail::StreamUpload& u = *batch.uploads[i];
    --u.pending;
    if (result) {
      u.last_value = *result;
      stats_.submitted_bytes += batch.pieces[i].piece.bytes;
    } else if (!u.failed) {
      u.failed = true;
      u.stopped = true;
      if (u.queued) unqueue_locked(u);
    }
    if (u.pending > 0 || u.piece_out) continue;
    if (u.failed) {
      end_upload_locked(u, StreamStatus::Failed);
    } else if (u.stopped) {
      end_upload_locked(u, StreamStatus::Cancelled);
    } else if (u.request.pieces.done()) {
      end_upload_locked(u, StreamStatus::Submitted);
    }
  }
  if (!result) retire_locked(completed_);
  state_cv_.notify_all();
}

// --- the pump -----------------------------------------------------------------------------------

// Cuts pieces of the queued uploads, in priority order, into scratch_ at offsets relative to
// the batch's start — as many as `free` bytes of the ring and the batch limits hold (with
// `padded`, leaving room for the alignment padding the ring may add at its head). Fills `cuts`
// with each upload's cursor after the cut; returns the batch's size and sets its alignment.
uint64_t StreamScheduler::cut_locked(uint64_t free, bool padded, std::vector<Cut>& cuts,
                                     uint64_t* batch_alignment) {
  cuts.clear();
  scratch_.clear();
  const auto first = front_locked();
  // A batch may exceed max_batch_bytes when the first upload's smallest piece does.
  const uint64_t max_batch =
      std::max(config_.max_batch_bytes, first->request.pieces.smallest_next());
  uint64_t rel = 0;
  *batch_alignment = 1;
  for (auto& q : queues_) {
    for (auto& up : q) {
      if (scratch_.size() >= config_.max_batch_pieces) return rel;
      const uint64_t a = up->request.alignment;
      const auto l = lcm(*batch_alignment, a);
      if (!l || (*l > kMaxBatchAlignment && !scratch_.empty())) return rel;
      const uint64_t room = padded ? (free > *l - 1 ? free - (*l - 1) : 0) : free;
      const uint64_t limit = std::min(room, max_batch);
      const uint64_t at = *align_up(rel, a);
      if (at >= limit) return rel;
      Cut cut{up, up->request.pieces};
      const uint64_t left = cut.cursor.total_bytes() - cut.cursor.cut_bytes();
      if (scratch_.empty() && limit - at < std::min(config_.min_batch_bytes, left)) {
        return rel;  // a sliver: wait for room instead
      }
      uint64_t pos = at;
      const std::size_t before = scratch_.size();
      while (scratch_.size() < config_.max_batch_pieces && pos < limit) {
        auto piece = cut.cursor.next(limit - pos);
        if (!piece) break;
        scratch_.push_back({*piece, pos, up->id, up->request.context});
        pos = *align_up(pos + piece->staging_bytes, a);
      }
      if (scratch_.size() == before) return rel;
      rel = scratch_.back().staging_offset + scratch_.back().piece.staging_bytes;
      *batch_alignment = *l;
      const bool done = cut.cursor.done();
      cuts.push_back(std::move(cut));
      if (!done) return rel;  // the budget ended inside this upload
    }
  }
  return rel;
}

// Cuts the next batch and reserves its ring bytes: first assuming the ring adds no padding at
// its head (the usual case: every batch is aligned), then leaving room for it. Returns the
// batch, or null with *wait_token naming the batch whose retirement it waits for (0: nothing
// queued, or nothing in flight to wait for).
StreamScheduler::Batch* StreamScheduler::plan_locked(uint64_t* wait_token) {
  *wait_token = 0;
  const auto first = front_locked();
  if (first == nullptr) return nullptr;
  STAGING_ASSERT(first->request.pieces.smallest_next() <= ring_->capacity(),
                 "an upload whose smallest piece exceeds the ring was queued");
  const uint64_t free = ring_->largest_free();
  std::optional<Reservation> res;
  uint64_t alignment = 1;
  for (const bool padded : {false, true}) {
    const uint64_t size = cut_locked(free, padded, cuts_, &alignment);
    if (size == 0) break;
    ReserveRequest rr;
    rr.size = size;
    rr.alignment = alignment;
    rr.token = next_token_;
    rr.owner = first->request.owner;
    if (auto r = ring_->reserve(rr)) {
      res = *r;
      break;
    }
  }
  if (!res) {
    if (!batches_.empty()) *wait_token = batches_.front()->token;
    return nullptr;
  }
  std::vector<Cut>& cuts = cuts_;
  auto batch = std::make_unique<Batch>();
  batch->token = next_token_++;
  batch->reservation = *res;
  batch->pieces.reserve(scratch_.size());
  std::size_t c = 0;
  for (BatchPiece p : scratch_) {
    while (cuts[c].upload->id != p.upload)
      ++c;
    p.staging_offset += res->offset;
    batch->pieces.push_back(p);
    batch->uploads.push_back(cuts[c].upload);
  }
  for (Cut& cut : cuts) {
    detail::StreamUpload& u = *cut.upload;
    const uint64_t cut_bytes = cut.cursor.cut_bytes() - u.request.pieces.cut_bytes();
    const std::size_t p = index(u.request.priority);
    queued_bytes_[p] -= cut_bytes;
    u.request.pieces = cut.cursor;
    u.status.store(StreamStatus::Streaming, std::memory_order_release);
    if (cut.cursor.done()) {
      auto& q = queues_[p];
      q.erase(std::find(q.begin(), q.end(), cut.upload));
      u.queued = false;
    }
  }
  for (auto& u : batch->uploads)
    ++u->pending;
  stats_.queued_bytes = queued_bytes_[0] + queued_bytes_[1];
  stats_.pieces += batch->pieces.size();
  ++stats_.in_flight_batches;
  if (deps_.observer != nullptr) {
    deps_.observer->on_event(Event{.kind = EventKind::BatchCut,
                                   .time = now(),
                                   .id = first->id,
                                   .bytes = res->size,
                                   .token = batch->token,
                                   .pieces = static_cast<uint32_t>(batch->pieces.size()),
                                   .priority = first->request.priority});
  }
  room_cv_.notify_all();
  Batch* out = batch.get();
  batches_.push_back(std::move(batch));
  return out;
}

void StreamScheduler::start_fill(Filling& f) {
  const Batch& batch = *f.batch;
  std::byte* base = deps_.backend->mapped(batch.reservation.region);
  std::vector<detail::FillJob*> submit;
  // The batch's jobs share one thread limit (none when every pool thread may take part: the
  // pool's own rule).
  unsigned max_threads = 0;
  if (deps_.fill_pool != nullptr) {
    const unsigned limit = fill_limit_.load(std::memory_order_relaxed);
    max_threads = limit < detail::engine_of(*deps_.fill_pool).threads() ? limit : 0;
  }
  for (std::size_t i = 0; i < batch.pieces.size(); ++i) {
    const BatchPiece& p = batch.pieces[i];
    std::byte* dst = base + p.staging_offset;
    const std::byte* src = batch.uploads[i]->request.source + p.piece.source_offset;
    // Padded rows (an API's row pitch alignment) are repacked row by row on this thread; tight
    // pieces are one copy, on the pool when large.
    const bool tight = p.piece.image.layout.tight();  // buffer pieces: no rows, tight
    if (!tight) {
      repack_rows(dst, src, p.piece.image.layout);
      continue;
    }
    if (deps_.fill_pool == nullptr || p.piece.bytes < config_.pool_min_bytes) {
      copy_to_staging(dst, src, static_cast<std::size_t>(p.piece.bytes), config_.fill_method);
      continue;
    }
    std::unique_ptr<detail::FillJob> job;
    if (!spare_jobs_.empty()) {
      job = std::move(spare_jobs_.back());
      spare_jobs_.pop_back();
    } else {
      job = std::make_unique<detail::FillJob>();
    }
    job->dst = dst;
    job->src = src;
    job->bytes = p.piece.bytes;
    job->method = config_.fill_method;
    job->lane = fill_lane_;
    job->max_threads = max_threads;
    submit.push_back(job.get());
    f.jobs.push_back(std::move(job));
  }
  if (!submit.empty()) detail::engine_of(*deps_.fill_pool).submit(submit);
}

void StreamScheduler::fewer_fill_threads() noexcept {
  const unsigned limit = fill_limit_.load(std::memory_order_relaxed);
  if (config_.adapt_fill_threads && limit > 1) {
    fill_limit_.store(limit - 1, std::memory_order_relaxed);
  }
}

void StreamScheduler::more_fill_threads_if_starved() {
  // A batch ready after a quiet spell did not wait for the fill: only work that kept coming
  // counts.
  if (!config_.adapt_fill_threads || !std::exchange(pump_busy_, true)) return;
  const unsigned limit = fill_limit_.load(std::memory_order_relaxed);
  if (limit >= detail::engine_of(*deps_.fill_pool).threads()) return;
  TimelineValue newest = 0;
  {
    std::lock_guard lock(mutex_);
    newest = newest_submitted_;
  }
  if (newest != 0 && deps_.backend->completed() >= newest) {
    fill_limit_.store(limit + 1, std::memory_order_relaxed);
  }
}

void StreamScheduler::finish_fill(Filling& f) {
  for (auto& job : f.jobs) {
    detail::engine_of(*deps_.fill_pool)
        .wait(*job);  // copies its unclaimed slices on this thread meanwhile
    spare_jobs_.push_back(std::move(job));
  }
  f.jobs.clear();
}

// Takes out of `batch` the pieces of uploads that failed since it was cut (a submission of their
// earlier pieces failed, or the device was lost): they are never submitted, and such an upload
// ends Failed once no batch holds its pieces. True when no piece is left: the batch is dropped.
bool StreamScheduler::drop_failed_pieces_locked(Batch& batch) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < batch.pieces.size(); ++i) {
    detail::StreamUpload& u = *batch.uploads[i];
    if (u.failed) {
      if (--u.pending == 0 && !u.piece_out) end_upload_locked(u, StreamStatus::Failed);
      continue;
    }
    batch.pieces[kept] = batch.pieces[i];
    batch.uploads[kept] = std::move(batch.uploads[i]);
    ++kept;
  }
  batch.pieces.resize(kept);
  batch.uploads.resize(kept);
  if (kept != 0) return false;
  ring_->cancel(batch.reservation.id);
  batch.state = Batch::State::Dropped;
  retire_locked(completed_);
  state_cv_.notify_all();
  return true;
}

PumpResult StreamScheduler::submit(Batch& batch) {
  {
    // Only the pump submits these batches, and only a submission fails an upload whose pieces
    // are in them: nothing fails between this check and the submission.
    std::lock_guard lock(mutex_);
    if (drop_failed_pieces_locked(batch)) return PumpResult::SubmitFailed;
  }
  Expected<TimelineValue, UploadError> result = unexpected(UploadError::Failed);
  {
    std::lock_guard submit_lock(submit_mutex_);
    StreamBatch view{batch.token, batch.reservation.region, batch.reservation.offset,
                     batch.reservation.size, batch.pieces};
    result = deps_.backend->submit(view);
  }
  std::lock_guard lock(mutex_);
  finish_submit_locked(batch, result);
  return result ? PumpResult::Submitted : PumpResult::SubmitFailed;
}

std::optional<TimelineValue> StreamScheduler::wait_token_value_locked(uint64_t token) const {
  for (const auto& b : batches_) {
    if (b->token == token) {
      if (b->state == Batch::State::Submitted) return b->value;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Waits (lock released) up to `max_wait` for batch `token` to retire: on the backend's timeline
// when it is submitted, else for a state change (an in-place piece committed). Returns true when
// the wait ended early (progress).
bool StreamScheduler::waited_for_ring(std::unique_lock<std::mutex>& lock, uint64_t token,
                                      Duration max_wait) {
  const Duration slice = std::min(max_wait, config_.wait_slice);
  if (const auto value = wait_token_value_locked(token)) {
    lock.unlock();
    const TimelineValue reached = deps_.backend->wait(*value, slice);
    lock.lock();
    retire_locked(reached);
    if (check_lost_locked()) return true;  // progress of a kind: nothing more will retire
    return reached >= *value;
  }
  return state_cv_.wait_for(lock, slice) == std::cv_status::no_timeout;
}

PumpResult StreamScheduler::pump_once(Duration max_wait) {
  std::unique_lock lock(mutex_);
  if (stopping_) return PumpResult::Stopped;
  retire_locked(deps_.backend->completed());
  (void)check_lost_locked();  // empties the queues: nothing more is cut
  // Cut as many batches as the ring has room for (one at a time without a pool) and start
  // filling them; the oldest is submitted as soon as it is filled.
  const std::size_t depth = deps_.fill_pool == nullptr         ? 1
                            : config_.max_filling_batches == 0 ? SIZE_MAX
                                                               : config_.max_filling_batches;
  uint64_t wait_token = 0;
  std::size_t started = filling_.size();
  while (filling_.size() < depth) {
    Batch* batch = plan_locked(&wait_token);
    if (batch == nullptr) break;
    auto f = std::make_unique<Filling>();
    f->batch = batch;
    filling_.push_back(std::move(f));
  }
  const bool queued = front_locked() != nullptr;
  lock.unlock();
  for (; started < filling_.size(); ++started)
    start_fill(*filling_[started]);
  if (!filling_.empty()) {
    std::unique_ptr<Filling> f = std::move(filling_.front());
    filling_.pop_front();
    if (deps_.fill_pool != nullptr) {
      const bool pooled = !f->jobs.empty();
      finish_fill(*f);
      if (pooled) more_fill_threads_if_starved();
    }
    return submit(*f->batch);
  }
  lock.lock();
  if (!queued && front_locked() == nullptr) {
    work_cv_.wait_for(lock, std::min(max_wait, config_.wait_slice),
                      [&] { return stopping_ || front_locked() != nullptr; });
    pump_busy_ = false;
    return stopping_ ? PumpResult::Stopped : PumpResult::Idle;
  }
  ++stats_.ring_full;
  if (deps_.fill_pool != nullptr) fewer_fill_threads();
  const Duration began = now();
  if (wait_token != 0) {
    (void)waited_for_ring(lock, wait_token, max_wait);
  } else {
    // Nothing in flight to wait for (an alignment larger than the room the ring has): let
    // time pass rather than spin.
    state_cv_.wait_for(lock, std::min(max_wait, config_.wait_slice));
  }
  const Duration waited = now() - began;
  stats_.ring_full_time += waited;
  if (deps_.observer != nullptr) {
    deps_.observer->on_event(
        Event{.kind = EventKind::RoomWait, .time = began, .token = wait_token, .waited = waited});
  }
  return PumpResult::RingFull;
}

void StreamScheduler::run() {
  while (pump_once(config_.wait_slice) != PumpResult::Stopped) {
  }
}

bool StreamScheduler::idle_locked() const {
  for (const auto& b : batches_) {
    const bool owed = b->state == Batch::State::Submitted
                          ? b->value > completed_
                          : b->state == Batch::State::Cut && !b->in_place;
    if (owed) return false;
  }
  return true;
}

uint64_t StreamScheduler::newest_owed_token_locked() const {
  for (auto it = batches_.rbegin(); it != batches_.rend(); ++it) {
    const Batch& b = **it;
    if (b.state == Batch::State::Submitted && b.value > completed_) return b.token;
  }
  return batches_.back()->token;
}

bool StreamScheduler::drain(Duration timeout) {
  const Deadline deadline(*clock_, timeout);
  for (;;) {
    if (filling_.empty()) {
      std::unique_lock lock(mutex_);
      retire_locked(deps_.backend->completed());
      if (check_lost_locked()) return false;
      if (front_locked() == nullptr) {
        if (idle_locked()) return true;
        if (deadline.remaining() <= Duration{0}) return false;
        (void)waited_for_ring(lock, newest_owed_token_locked(), deadline.remaining());
        continue;
      }
    }
    if (deadline.remaining() <= Duration{0}) return false;
    if (pump_once(deadline.remaining()) == PumpResult::Stopped) return false;
  }
}

bool StreamScheduler::wait_idle(Duration timeout) {
  const Deadline deadline(*clock_, timeout);
  std::unique_lock lock(mutex_);
  for (;;) {
    retire_locked(deps_.backend->completed());
    if (check_lost_locked()) return false;
    const bool queued = front_locked() != nullptr;
    if (!queued && idle_locked()) return true;
    const Duration left = deadline.remaining();
    if (left <= Duration{0}) return false;
    if (queued) {
      state_cv_.wait_for(lock, std::min(left, config_.wait_slice));
    } else {
      (void)waited_for_ring(lock, newest_owed_token_locked(), left);
    }
  }
}

void StreamScheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  room_cv_.notify_all();
  state_cv_.notify_all();
}

StreamStats StreamScheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

ByteRingStats StreamScheduler::ring_stats() const {
  std::lock_guard lock(mutex_);
  return ring_->stats();
}

TimelineValue StreamScheduler::completed() const {
  return deps_.backend->completed();
}

}  // namespace staging
