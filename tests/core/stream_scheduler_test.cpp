// StreamScheduler with a FakeStreamBackend: uploads of any size through a small ring, priorities,
// cancellation, backpressure, in-place pieces, a stalled queue, failed submissions. The fake
// carries out a batch's copies only when its value completes, so every test that compares the
// destinations' bytes with the sources also checks that no staging byte was reused early.
//
// Sketch notation for the ring (capacity 64 KiB unless a test says otherwise), one character per
// 4 KiB: digits are batch numbers, '-' free.
//   [ 1 1 1 1 2 2 2 2 - - - - - - - - ]
#include "staging/detail/core/stream_scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "random_bytes.hpp"
#include "staging/core/observer.hpp"
#include "staging/core/stream.hpp"
#include "staging/detail/core/fill_engine.hpp"
#include "staging/testing/fake_stream_backend.hpp"

namespace staging {
namespace {

using namespace std::chrono_literals;
using testing::DelayModel;
using testing::FakeStreamBackend;
using testing::FakeStreamTarget;

constexpr uint64_t K = 1024;

using test::random_bytes;

// The timeline the scheduler reports, by kind: its own events and its byte ring's, in the order
// they came.
struct Events : Observer {
  std::vector<Event> batches;
  std::vector<Event> ends;
  std::vector<Event> waits;
  std::vector<Event> reserves;  // the ring's
  std::vector<EventKind> order;
  void on_event(const Event& e) override {
    order.push_back(e.kind);
    if (e.kind == EventKind::BatchCut) batches.push_back(e);
    if (e.kind == EventKind::UploadEnded) ends.push_back(e);
    if (e.kind == EventKind::RoomWait) waits.push_back(e);
    if (e.kind == EventKind::Reserve) reserves.push_back(e);
  }
};

struct StreamTest : ::testing::Test {
  FakeStreamBackend backend{DelayModel::fixed(Duration{100'000})};  // 100 us per submission
  Events events;
  // Destinations and sources outlive the scheduler (its destructor releases what is queued).
  std::vector<std::unique_ptr<FakeStreamTarget>> targets;
  std::vector<std::vector<std::byte>> sources;
  std::unique_ptr<StreamScheduler> scheduler;

  void make(StreamSchedulerConfig config, FillPool* pool = nullptr) {
    config.check_invariants = true;
    scheduler.reset();  // its ring's region goes back to the backend first
    StreamScheduler::Deps deps;
    deps.backend = &backend;
    deps.allocator = &backend;
    deps.observer = &events;
    deps.fill_pool = pool;
    scheduler = std::move(StreamScheduler::create(config, deps).value());
  }
  void SetUp() override { make({.ring_bytes = 64 * K}); }

  // A buffer upload of `bytes` random bytes into a fresh target.
  StreamRequest buffer(uint64_t bytes, StreamPriority priority = StreamPriority::Prefetch) {
    sources.push_back(random_bytes(bytes, sources.size() + 1));
    targets.push_back(std::make_unique<FakeStreamTarget>());
    targets.back()->buffer.assign(bytes, std::byte{0});
    StreamRequest r;
    r.pieces = PieceCursor::buffer(bytes, 0, 4 * K).value();
    r.source = sources.back().data();
    r.priority = priority;
    r.context = targets.back().get();
    return r;
  }
  // An image upload of `shape`.
  StreamRequest image(const ImageShape& shape, StreamPriority priority = StreamPriority::Prefetch) {
    auto cursor = PieceCursor::image(shape).value();
    sources.push_back(random_bytes(cursor.total_bytes(), sources.size() + 1));
    targets.push_back(std::make_unique<FakeStreamTarget>());
    targets.back()->image.emplace(shape);
    StreamRequest r;
    r.pieces = cursor;
    r.source = sources.back().data();
    r.alignment = shape.block.bytes;
    r.priority = priority;
    r.context = targets.back().get();
    return r;
  }
  // True when target i holds source i, every byte.
  bool arrived(std::size_t i) const {
    const auto& t = *targets[i];
    const auto& s = sources[i];
    if (t.image) return std::equal(s.begin(), s.end(), t.image->packed().begin());
    return t.buffer == s;
  }
  void pump_all() { ASSERT_TRUE(scheduler->drain(10s)); }
  // Writes the rest of an in-place upload from `decoded` (its packed source), piece by piece,
  // committing each, until next_piece() answers Done. Returns the bytes written.
  uint64_t write_pieces(const StreamTicket& ticket, const std::vector<std::byte>& decoded) {
    uint64_t written = 0;
    for (;;) {
      auto piece = scheduler->next_piece(ticket, 1s);
      if (!piece) {
        EXPECT_EQ(piece.error(), UploadError::Done);
        return written;
      }
      std::memcpy(piece->bytes.data(), decoded.data() + piece->source_offset, piece->bytes.size());
      written += piece->bytes.size();
      EXPECT_TRUE(scheduler->commit(ticket, *piece));
    }
  }
};

TEST_F(StreamTest, ABufferFourTimesTheRingStreamsThroughInPieces) {
  // 256 KiB through a 64 KiB ring in batches of at most 16 KiB:
  //   [ 1 1 1 1 2 2 2 2 3 3 3 3 4 4 4 4 ]  then 5.. reuse the bytes 1.. held once retired.
  auto ticket = scheduler->enqueue(buffer(256 * K)).value();
  EXPECT_EQ(ticket.status(), StreamStatus::Queued);
  pump_all();
  EXPECT_EQ(scheduler->status(ticket), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
  const auto subs = backend.submissions();
  EXPECT_EQ(subs.size(), 16u);
  EXPECT_EQ(ticket.value(), subs.back().value);
  EXPECT_LE(scheduler->ring_stats().peak_held_bytes, 64 * K);
  EXPECT_EQ(targets[0]->released, 1u);
  EXPECT_TRUE(backend.guards_intact());
}

TEST_F(StreamTest, ManySmallUploadsShareABatch) {
  std::vector<StreamTicket> tickets;
  for (int i = 0; i < 40; ++i)
    tickets.push_back(scheduler->enqueue(buffer(100 + i)).value());
  EXPECT_EQ(scheduler->pump_once(), PumpResult::Submitted);
  EXPECT_EQ(backend.submissions().size(), 1u);
  EXPECT_EQ(backend.submissions()[0].pieces.size(), 40u);
  pump_all();
  for (std::size_t i = 0; i < tickets.size(); ++i) {
    EXPECT_TRUE(arrived(i)) << i;
    EXPECT_EQ(scheduler->status(tickets[i]), StreamStatus::Complete);
  }
}

TEST_F(StreamTest, ImagesFourTimesTheRingStreamByLevelsAndRows) {
  // RGBA8 256 x 256 (256 KiB level 0), 9 levels, 2 layers; and BC7 512 x 512 with its mips:
  // each several times the 64 KiB ring.
  const ImageShape rgba{.block = {4, 1, 1, 1}, .extent = {256, 256, 1}, .levels = 9, .layers = 2};
  const ImageShape bc7{.block = {16, 4, 4, 1}, .extent = {512, 512, 1}, .levels = 10};
  make({.ring_bytes = 64 * K, .max_queued_bytes = 4096 * K});  // both queued at once
  auto a = scheduler->enqueue(image(rgba)).value();
  auto b = scheduler->enqueue(image(bc7)).value();
  EXPECT_GE(a.bytes(), 8 * 64 * K);
  pump_all();
  EXPECT_EQ(scheduler->status(a), StreamStatus::Complete);
  EXPECT_EQ(scheduler->status(b), StreamStatus::Complete);
  for (uint32_t level = 0; level < 9; ++level) {  // every level equal to its source
    const LevelLayout l = level_layout(rgba, level).value();
    const auto got = targets[0]->image->level(level);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), sources[0].begin() + l.offset)) << level;
  }
  EXPECT_TRUE(arrived(0));
  EXPECT_TRUE(arrived(1));
  EXPECT_LE(scheduler->ring_stats().peak_held_bytes, 64 * K);
  // Pieces are aligned to their texel block, and every batch's bytes stay inside the ring.
  for (const auto& s : backend.submissions()) {
    for (const auto& p : s.pieces) {
      const auto* t = static_cast<FakeStreamTarget*>(p.context);
      EXPECT_EQ(p.staging_offset % t->image->shape().block.bytes, 0u);
    }
  }
}

TEST_F(StreamTest, PaddedRowsAreRepackedIntoStaging) {
  // Under a 256-byte row pitch (an API that wants one), a 37-texel-wide RGBA8 image's rows take
  // 256 staging bytes each: the pump repacks them; the image arrives whole.
  CopyLimits limits;
  limits.texture_row_pitch_alignment = 256;
  const ImageShape s{.block = {4, 1, 1, 1}, .extent = {37, 300, 1}, .levels = 6, .layers = 2};
  StreamRequest r = image(s);
  r.pieces = PieceCursor::image(s, limits).value();
  auto t = scheduler->enqueue(r).value();
  pump_all();
  EXPECT_EQ(scheduler->status(t), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
  for (const auto& sub : backend.submissions()) {
    for (const auto& p : sub.pieces) {
      EXPECT_EQ(p.piece.image.layout.row_pitch % 256, 0u);
      EXPECT_EQ(p.staging_offset % 512, 0u);  // the texture copy alignment
    }
  }
}

TEST_F(StreamTest, NowIsCutBeforePrefetchEvenInsideALongUpload) {
  auto prefetch = scheduler->enqueue(buffer(256 * K, StreamPriority::Prefetch)).value();
  ASSERT_EQ(scheduler->pump_once(), PumpResult::Submitted);  // the prefetch's first piece
  auto now = scheduler->enqueue(buffer(8 * K, StreamPriority::Now)).value();
  ASSERT_EQ(scheduler->pump_once(), PumpResult::Submitted);
  const auto subs = backend.submissions();
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[1].pieces.front().upload, now.id());  // the Now upload leads the next batch
  EXPECT_EQ(now.status(), StreamStatus::Submitted);
  EXPECT_EQ(prefetch.status(), StreamStatus::Streaming);
  EXPECT_LT(*now.value(), 3u);
  pump_all();
  EXPECT_TRUE(arrived(0));
  EXPECT_TRUE(arrived(1));
  EXPECT_LT(*now.value(), *prefetch.value());
}

TEST_F(StreamTest, CancellingAQueuedUploadDropsIt) {
  auto a = scheduler->enqueue(buffer(32 * K)).value();
  EXPECT_EQ(scheduler->cancel(a), StreamStatus::Cancelled);
  EXPECT_EQ(a.status(), StreamStatus::Cancelled);
  EXPECT_FALSE(a.value());  // nothing was cut: no value, nothing reaches the destination
  EXPECT_EQ(scheduler->cancel(a), StreamStatus::Cancelled);  // again: still cancelled
  pump_all();
  EXPECT_TRUE(backend.submissions().empty());
  EXPECT_EQ(targets[0]->pieces, 0u);
  EXPECT_EQ(targets[0]->released, 1u);
  EXPECT_EQ(scheduler->stats().cancelled, 1u);
}

TEST_F(StreamTest, CancellingAStartedUploadStopsItAfterThePiecesCut) {
  auto a = scheduler->enqueue(buffer(256 * K)).value();
  ASSERT_EQ(scheduler->pump_once(), PumpResult::Submitted);
  ASSERT_EQ(scheduler->pump_once(), PumpResult::Submitted);
  EXPECT_EQ(scheduler->cancel(a), StreamStatus::Cancelled);
  EXPECT_EQ(a.status(), StreamStatus::Cancelled);
  ASSERT_TRUE(a.value());
  EXPECT_EQ(*a.value(), backend.submissions().back().value);  // when the device is done with it
  pump_all();
  EXPECT_EQ(backend.submissions().size(), 2u);
  EXPECT_EQ(targets[0]->pieces, 2u);
  // The first 32 KiB arrived, the rest did not.
  EXPECT_TRUE(
      std::equal(sources[0].begin(), sources[0].begin() + 32 * K, targets[0]->buffer.begin()));
  EXPECT_EQ(targets[0]->buffer[32 * K], std::byte{0});
}

TEST_F(StreamTest, CancellingWhenEveryPieceIsCutIsTooLate) {
  auto a = scheduler->enqueue(buffer(8 * K)).value();
  ASSERT_EQ(scheduler->pump_once(), PumpResult::Submitted);
  // Too late: it completes; cancel() answers the status as status() reads it.
  const StreamStatus late = scheduler->cancel(a);
  EXPECT_TRUE(late == StreamStatus::Submitted || late == StreamStatus::Complete) << to_string(late);
  pump_all();
  EXPECT_TRUE(arrived(0));
  EXPECT_EQ(scheduler->cancel(a), scheduler->status(a));
  EXPECT_NE(a.status(), StreamStatus::Cancelled);
  EXPECT_EQ(scheduler->cancel(StreamTicket{}), StreamStatus::Failed);
}

TEST_F(StreamTest, TheQueueCapRefusesOrWaitsAsTheCallerChooses) {
  make({.ring_bytes = 64 * K, .max_queued_bytes = 100 * K});
  ASSERT_TRUE(scheduler->enqueue(buffer(80 * K)));
  EXPECT_EQ(scheduler->enqueue(buffer(30 * K)).error(), EnqueueError::QueueFull);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(scheduler->enqueue(buffer(30 * K), 20ms).error(), EnqueueError::Timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  // Now uploads are counted apart: a prefetch backlog never keeps them out.
  EXPECT_TRUE(scheduler->enqueue(buffer(30 * K, StreamPriority::Now)));
  // A waiting producer gets in once the pump cuts enough.
  const StreamRequest late = buffer(30 * K);
  std::thread pump([&] {
    while (scheduler->stats().queue_waits < 2)  // the producer below is waiting
      std::this_thread::yield();
    for (int i = 0; i < 4; ++i)
      (void)scheduler->pump_once();
  });
  auto waited = scheduler->enqueue(late, 10s);
  pump.join();
  EXPECT_TRUE(waited);
  pump_all();
  const auto s = scheduler->stats();
  EXPECT_EQ(s.queue_refusals, 1u);
  EXPECT_EQ(s.queue_timeouts, 1u);
  EXPECT_EQ(s.queue_waits, 2u);
  EXPECT_TRUE(arrived(0));
  EXPECT_TRUE(arrived(3));
  EXPECT_TRUE(arrived(4));
}

TEST_F(StreamTest, AnUploadLargerThanTheQueueCapIsTakenAlone) {
  make({.ring_bytes = 64 * K, .max_queued_bytes = 16 * K});
  EXPECT_TRUE(scheduler->enqueue(buffer(1024 * K)));
  EXPECT_EQ(scheduler->enqueue(buffer(1 * K)).error(), EnqueueError::QueueFull);
  pump_all();
  EXPECT_TRUE(arrived(0));
}

TEST_F(StreamTest, AnUploadWhoseSmallestPieceExceedsTheRingIsRefused) {
  // One row of RGBA8 32768 texels wide is 128 KiB: more than the 64 KiB ring.
  const ImageShape wide{.block = {4, 1, 1, 1}, .extent = {32768, 2, 1}};
  EXPECT_EQ(scheduler->enqueue(image(wide)).error(), EnqueueError::TooLarge);
  StreamRequest empty;
  empty.source = sources.back().data();
  EXPECT_EQ(scheduler->enqueue(empty).error(), EnqueueError::Empty);
}

TEST_F(StreamTest, AStalledQueueBoundsEveryWaitAndRecovers) {
  make({.ring_bytes = 64 * K, .max_queued_bytes = 128 * K, .wait_slice = 1ms});
  backend.stall();
  auto a = scheduler->enqueue(buffer(512 * K)).value();
  // The ring fills (four batches of 16 KiB), then every round waits a bounded slice.
  int submitted = 0, full = 0;
  for (int i = 0; i < 10; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const PumpResult r = scheduler->pump_once(1ms);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
    submitted += r == PumpResult::Submitted;
    full += r == PumpResult::RingFull;
  }
  EXPECT_EQ(submitted, 4);
  EXPECT_EQ(full, 6);
  EXPECT_EQ(scheduler->enqueue(buffer(64 * K)).error(), EnqueueError::QueueFull);
  EXPECT_EQ(scheduler->wait(a, 5ms), StreamStatus::Streaming);
  EXPECT_FALSE(events.waits.empty());
  backend.release();
  pump_all();
  EXPECT_EQ(scheduler->wait(a, 1s), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
  EXPECT_GT(scheduler->stats().ring_full, 0u);
}

TEST_F(StreamTest, APieceWrittenInPlaceArrives) {
  const ImageShape bc1{.block = {8, 4, 4, 1}, .extent = {512, 512, 1}, .levels = 10};
  StreamRequest r = image(bc1);  // the source is what the "decoder" writes
  const std::vector<std::byte>& decoded = sources.back();
  auto ticket = scheduler->write_in_place(r).value();
  EXPECT_EQ(write_pieces(ticket, decoded), ticket.bytes());
  EXPECT_EQ(scheduler->wait(ticket, 1s), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
}

// Misusing a ticket or a piece is answered, not aborted: commit() of another scheduler's ticket,
// of a piece twice, or of an upload that is not written in place answers InvalidArgument and
// changes nothing; status(), wait() and owns() see another scheduler's ticket as not theirs. The
// upload then finishes normally, every byte checked.
TEST_F(StreamTest, AMisusedTicketOrPieceIsAnsweredNotAborted) {
  FakeStreamBackend other_backend{DelayModel::fixed(Duration{100'000})};
  StreamScheduler::Deps deps;
  deps.backend = &other_backend;
  deps.allocator = &other_backend;
  auto other = std::move(StreamScheduler::create({.ring_bytes = 64 * K}, deps).value());
  const ImageShape rgba{.block = {4, 1, 1, 1}, .extent = {64, 64, 1}, .levels = 1};
  StreamRequest r = image(rgba);
  const std::vector<std::byte> decoded = sources.back();  // a copy: buffer() grows `sources`
  auto ticket = scheduler->write_in_place(r).value();
  auto copied = scheduler->enqueue(buffer(8 * K)).value();  // not written in place
  EXPECT_TRUE(scheduler->owns(ticket));
  EXPECT_FALSE(other->owns(ticket));
  EXPECT_FALSE(scheduler->owns(StreamTicket{}));
  EXPECT_EQ(other->status(ticket), StreamStatus::Failed);
  EXPECT_EQ(other->wait(ticket, 0s), StreamStatus::Failed);

  auto piece = scheduler->next_piece(ticket, 1s).value();
  std::memcpy(piece.bytes.data(), decoded.data() + piece.source_offset, piece.bytes.size());
  EXPECT_EQ(other->commit(ticket, piece).error(), UploadError::InvalidArgument);
  EXPECT_EQ(scheduler->commit(copied, piece).error(), UploadError::InvalidArgument);
  EXPECT_EQ(scheduler->commit(StreamTicket{}, piece).error(), UploadError::InvalidArgument);
  ASSERT_TRUE(scheduler->commit(ticket, piece));
  EXPECT_EQ(scheduler->commit(ticket, piece).error(), UploadError::InvalidArgument);  // twice
  write_pieces(ticket, decoded);
  pump_all();  // the copied upload
  EXPECT_EQ(scheduler->wait(ticket, 1s), StreamStatus::Complete);
  EXPECT_EQ(scheduler->wait(copied, 1s), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
  EXPECT_TRUE(arrived(1));
  other.reset();  // before its backend
}

// A device that wants image rows padded: every in-place piece is rows at a pitch, and the writer
// fills row by row. 37 texels × 4 bytes = 148-byte rows, 256 apart in staging memory:
//
//   bytes:  [ row 0 (148) | pad (108) ][ row 1 (148) | pad ] ... [ last row (148) ]
//
// Every byte of the image is checked after the copies.
TEST_F(StreamTest, InPlacePiecesWithPaddedRowsAreWrittenRowByRow) {
  CopyLimits limits;
  limits.texture_row_pitch_alignment = 256;
  const ImageShape s{.block = {4, 1, 1, 1}, .extent = {37, 300, 1}, .levels = 3, .layers = 2};
  StreamRequest r = image(s);
  r.pieces = PieceCursor::image(s, limits).value();
  const std::vector<std::byte>& decoded = sources.back();
  auto ticket = scheduler->write_in_place(r).value();
  uint64_t written = 0;
  bool padded = false;
  for (;;) {
    auto piece = scheduler->next_piece(ticket, 1s);
    if (!piece) {
      ASSERT_EQ(piece.error(), UploadError::Done);
      break;
    }
    ASSERT_EQ(piece->rows * piece->row_bytes, piece->source_bytes);
    ASSERT_GE(piece->row_pitch, piece->row_bytes);
    ASSERT_EQ((piece->rows - 1) * piece->row_pitch + piece->row_bytes, piece->bytes.size());
    padded = padded || piece->row_pitch > piece->row_bytes;
    for (uint64_t row = 0; row < piece->rows; ++row) {
      std::memcpy(piece->bytes.data() + row * piece->row_pitch,
                  decoded.data() + piece->source_offset + row * piece->row_bytes,
                  static_cast<std::size_t>(piece->row_bytes));
    }
    written += piece->source_bytes;
    ASSERT_TRUE(scheduler->commit(ticket, *piece));
  }
  EXPECT_TRUE(padded);
  EXPECT_EQ(written, ticket.bytes());
  EXPECT_EQ(scheduler->wait(ticket, 1s), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
}

TEST_F(StreamTest, InPlacePiecesWaitForRoomThenTimeOut) {
  backend.stall();
  auto ticket = scheduler->write_in_place(buffer(256 * K)).value();
  for (int i = 0; i < 4; ++i) {
    auto piece = scheduler->next_piece(ticket).value();
    std::memcpy(piece.bytes.data(), sources[0].data() + piece.source_offset, piece.bytes.size());
    ASSERT_TRUE(scheduler->commit(ticket, piece));
  }
  EXPECT_EQ(scheduler->next_piece(ticket).error(), UploadError::Timeout);  // refused at once
  backend.sleep_while_stalled = true;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(scheduler->next_piece(ticket, 10ms).error(), UploadError::Timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 10ms);
  backend.release();
  auto piece = scheduler->next_piece(ticket, 1s);
  ASSERT_TRUE(piece);
  EXPECT_EQ(scheduler->stats().in_place_timeouts, 2u);
  // One piece at a time.
  EXPECT_EQ(scheduler->next_piece(ticket).error(), UploadError::InvalidArgument);
  scheduler->abandon(ticket, *piece);
  EXPECT_EQ(ticket.status(), StreamStatus::Cancelled);
  EXPECT_EQ(scheduler->next_piece(ticket).error(), UploadError::Cancelled);
  pump_all();
  EXPECT_EQ(targets[0]->pieces, 4u);
  EXPECT_TRUE(
      std::equal(sources[0].begin(), sources[0].begin() + 64 * K, targets[0]->buffer.begin()));
}

TEST_F(StreamTest, AFailedSubmissionFailsItsUploadsAndFreesItsBytes) {
  auto a = scheduler->enqueue(buffer(8 * K)).value();
  auto b = scheduler->enqueue(buffer(8 * K)).value();
  backend.fail_next_submit(UploadError::Failed);
  EXPECT_EQ(scheduler->pump_once(), PumpResult::SubmitFailed);
  EXPECT_EQ(a.status(), StreamStatus::Failed);
  EXPECT_EQ(b.status(), StreamStatus::Failed);
  EXPECT_EQ(scheduler->ring_stats().in_flight_bytes, 0u);
  auto c = scheduler->enqueue(buffer(8 * K)).value();
  pump_all();
  EXPECT_EQ(scheduler->status(c), StreamStatus::Complete);
  EXPECT_TRUE(arrived(2));
  EXPECT_EQ(scheduler->stats().failed, 2u);
}

TEST_F(StreamTest, ALostDeviceFailsEveryUploadNotCompleteAtOnceAndRefusesNewOnes) {
  // ring (16 KiB): [ a: submitted, never completes ]   queue: b (no room)
  make({.ring_bytes = 16 * K, .max_batch_bytes = 16 * K});
  backend.stall();
  auto a = scheduler->enqueue(buffer(16 * K)).value();
  EXPECT_EQ(scheduler->pump_once(), PumpResult::Submitted);
  auto b = scheduler->enqueue(buffer(8 * K)).value();
  EXPECT_EQ(scheduler->pump_once(), PumpResult::RingFull);
  EXPECT_EQ(scheduler->status(a), StreamStatus::Submitted);
  backend.lose_device();
  // A waiter on the queued upload wakes at once (no pump runs), not at its timeout.
  const auto began = std::chrono::steady_clock::now();
  EXPECT_EQ(scheduler->wait(b, 10s), StreamStatus::Failed);
  EXPECT_EQ(scheduler->wait(a, 10s), StreamStatus::Failed);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  EXPECT_EQ(a.status(), StreamStatus::Failed);
  EXPECT_EQ(scheduler->status(b), StreamStatus::Failed);
  EXPECT_EQ(scheduler->enqueue(buffer(4 * K)).error(), EnqueueError::DeviceLost);
  EXPECT_EQ(scheduler->write_in_place(buffer(4 * K)).error(), EnqueueError::DeviceLost);
  EXPECT_EQ(scheduler->pump_once(), PumpResult::Idle);
  EXPECT_FALSE(scheduler->drain(10ms));
  // a's staging bytes are never reused: the device may still read them.
  EXPECT_EQ(scheduler->ring_stats().in_flight_bytes, 16 * K);
  EXPECT_EQ(scheduler->stats().failed, 2u);
  EXPECT_EQ(targets[0]->released, 1u);
  EXPECT_EQ(targets[1]->released, 1u);
}

TEST_F(StreamTest, StopRefusesNewWorkAndWakesWaiters) {
  make({.ring_bytes = 64 * K, .max_queued_bytes = 16 * K});
  ASSERT_TRUE(scheduler->enqueue(buffer(16 * K)));
  std::thread waiter(
      [&] { EXPECT_EQ(scheduler->enqueue(buffer(16 * K), 10s).error(), EnqueueError::Stopped); });
  std::this_thread::sleep_for(5ms);
  scheduler->stop();
  waiter.join();
  EXPECT_EQ(scheduler->pump_once(), PumpResult::Stopped);
}

TEST_F(StreamTest, AFillPoolFillsSeveralBatchesAtOnceAndTheyAreSubmittedInOrder) {
  // Pieces of 16 KiB or more go to the pool's two threads; the pump cuts the next batches while
  // the pool fills the first, and submits each as it is filled, oldest first.
  auto pool = FillPool::create({.threads = 2, .pinning = ThreadPinning::None}).value();
  make({.ring_bytes = 64 * K, .max_queued_bytes = 8192 * K, .pool_min_bytes = 16 * K}, pool.get());
  const ImageShape rgba{.block = {4, 1, 1, 1}, .extent = {300, 200, 1}, .levels = 9};
  std::vector<StreamTicket> tickets;
  tickets.push_back(scheduler->enqueue(buffer(1024 * K + 5)).value());
  tickets.push_back(scheduler->enqueue(image(rgba)).value());
  for (int i = 0; i < 20; ++i)
    tickets.push_back(scheduler->enqueue(buffer(100 + 7 * i)).value());  // copied by the pump
  pump_all();
  for (std::size_t i = 0; i < tickets.size(); ++i) {
    EXPECT_EQ(scheduler->status(tickets[i]), StreamStatus::Complete) << i;
    EXPECT_TRUE(arrived(i)) << i;
  }
  const auto subs = backend.submissions();
  for (std::size_t i = 1; i < subs.size(); ++i)
    EXPECT_LT(subs[i - 1].token, subs[i].token);
  EXPECT_GT(pool->stats().jobs, 0u);
  EXPECT_LE(scheduler->ring_stats().peak_held_bytes, 64 * K);
  scheduler.reset();  // before the pool it refers to
}

// How many pool threads fill the pump's batches adapts (adapt_fill_threads, on by default).
// A ring of 64 KiB in batches of 16 KiB, each filled by the pool, the queue stalled:
//
//   ring: [b1 copying][b2 copying][b3 copying][b4 copying]   no room: RingFull
//
// every round that finds the ring full lets one pool thread fewer in, down to one.
TEST_F(StreamTest, ARingFullOfCopiesLetsFewerPoolThreadsFill) {
  auto pool = FillPool::create({.threads = 4, .pinning = ThreadPinning::None}).value();
  // Another user of the pool holds its first lane: the scheduler's jobs queue in a lane of their
  // own (the next), so that its limit neither binds nor counts the other's.
  detail::FillEngine& engine = detail::engine_of(*pool);
  const unsigned other = engine.new_lane();
  ASSERT_EQ(other, 0u);
  make({.ring_bytes = 64 * K, .max_queued_bytes = 8192 * K, .pool_min_bytes = 16 * K}, pool.get());
  EXPECT_EQ(scheduler->fill_threads(), 4u);  // every pool thread at first
  backend.stall();
  const StreamTicket ticket = scheduler->enqueue(buffer(1024 * K + 4096)).value();
  int full = 0;
  for (int round = 0; round < 40 && full < 6; ++round) {
    if (scheduler->pump_once() != PumpResult::RingFull) continue;
    ++full;
    EXPECT_EQ(scheduler->fill_threads(), static_cast<unsigned>(std::max(1, 4 - full))) << full;
  }
  ASSERT_EQ(full, 6);
  EXPECT_EQ(scheduler->fill_threads(), 1u);
  // The copies keep the ring full to the end (each takes 100 us of the queue's time, waited
  // for only when there is no room): from now on one pool thread at a time fills a batch.
  backend.release();
  pump_all();
  EXPECT_EQ(scheduler->status(ticket), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
  EXPECT_EQ(scheduler->fill_threads(), 1u);
  EXPECT_LE(engine.lane_peak(1), 1u);  // the scheduler's lane
  EXPECT_EQ(engine.lane_peak(other), 0u);
  scheduler.reset();                 // before the pool it refers to
  EXPECT_EQ(engine.new_lane(), 1u);  // the scheduler gave its lane back
  engine.release_lane(1);
  engine.release_lane(other);
}

TEST_F(StreamTest, WithoutAdaptingEveryPoolThreadFillsWhateverTheRing) {
  auto pool = FillPool::create({.threads = 4, .pinning = ThreadPinning::None}).value();
  make({.ring_bytes = 64 * K,
        .max_queued_bytes = 8192 * K,
        .pool_min_bytes = 16 * K,
        .adapt_fill_threads = false},
       pool.get());
  backend.stall();
  const StreamTicket ticket = scheduler->enqueue(buffer(1024 * K + 4096)).value();
  int full = 0;
  for (int round = 0; round < 40 && full < 6; ++round)
    full += scheduler->pump_once() == PumpResult::RingFull ? 1 : 0;
  ASSERT_EQ(full, 6);
  EXPECT_EQ(scheduler->fill_threads(), 4u);
  backend.release();
  pump_all();
  EXPECT_EQ(scheduler->status(ticket), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
  EXPECT_EQ(detail::engine_of(*pool).lane_peak(0), 0u);  // no job was limited
  scheduler.reset();
}

// Copies that complete as soon as they are submitted wait for the fill: each batch the pool
// filled that is ready while nothing submitted earlier is copying lets one more pool thread in,
// up to the pool's size.
TEST(StreamSchedulerFillThreads, CopiesWaitingForTheFillLetMorePoolThreadsIn) {
  FakeStreamBackend backend(DelayModel::fixed(Duration{0}));
  auto pool = FillPool::create({.threads = 4, .pinning = ThreadPinning::None}).value();
  StreamScheduler::Deps deps;
  deps.backend = &backend;
  deps.allocator = &backend;
  deps.fill_pool = pool.get();
  auto scheduler = StreamScheduler::create({.ring_bytes = 64 * K,
                                            .max_queued_bytes = 8192 * K,
                                            .pool_min_bytes = 16 * K,
                                            .check_invariants = true},
                                           deps)
                       .value();
  const std::vector<std::byte> source = random_bytes(2048 * K + 4096, 91);
  FakeStreamTarget target;
  target.buffer.assign(source.size(), std::byte{0});
  StreamRequest r;
  r.pieces = PieceCursor::buffer(source.size(), 0, 4 * K).value();
  r.source = source.data();
  r.context = &target;
  // First the ring full of stalled copies brings the pool down to one thread.
  backend.stall();
  const StreamTicket ticket = scheduler->enqueue(r).value();
  int full = 0;
  for (int round = 0; round < 40 && full < 3; ++round)
    full += scheduler->pump_once() == PumpResult::RingFull ? 1 : 0;
  ASSERT_EQ(full, 3);
  ASSERT_EQ(scheduler->fill_threads(), 1u);
  // Then every copy completes at once: the pump submits batch after batch with the queue idle.
  backend.release();
  unsigned most = 1;
  for (int round = 0; round < 400 && scheduler->status(ticket) != StreamStatus::Complete; ++round) {
    const unsigned before = scheduler->fill_threads();
    EXPECT_NE(scheduler->pump_once(), PumpResult::RingFull);
    EXPECT_LE(scheduler->fill_threads(), before + 1);  // one at a time
    most = std::max(most, scheduler->fill_threads());
  }
  EXPECT_EQ(scheduler->status(ticket), StreamStatus::Complete);
  EXPECT_EQ(most, 4u);
  EXPECT_EQ(scheduler->fill_threads(), 4u);
  EXPECT_EQ(target.buffer, source);
  scheduler.reset();  // before the pool it refers to
}

TEST_F(StreamTest, APoolWithoutThreadsIsFilledByThePump) {
  auto pool = FillPool::create({.threads = 0, .pinning = ThreadPinning::None}).value();
  make({.ring_bytes = 64 * K, .pool_min_bytes = 4 * K}, pool.get());
  auto a = scheduler->enqueue(buffer(300 * K)).value();
  pump_all();
  EXPECT_EQ(scheduler->status(a), StreamStatus::Complete);
  EXPECT_TRUE(arrived(0));
  EXPECT_EQ(pool->stats().helped_bytes, 300 * K);
  scheduler.reset();  // before the pool it refers to
}

// A failed submission fails its uploads, and their pieces already cut into later batches (being
// filled meanwhile) are never submitted: the upload ends Failed once no batch holds them.
//   ring: [ 1 1 1 1 2 2 2 2 3 3 3 3 4 4 4 4 ]   every batch a's; 1's submission fails
TEST_F(StreamTest, AFailedSubmissionDropsTheUploadsPiecesInLaterBatches) {
  auto pool = FillPool::create({.threads = 0, .pinning = ThreadPinning::None}).value();
  make({.ring_bytes = 64 * K, .pool_min_bytes = 4 * K}, pool.get());
  auto a = scheduler->enqueue(buffer(256 * K)).value();
  backend.fail_next_submit(UploadError::Failed);
  ASSERT_EQ(scheduler->pump_once(), PumpResult::SubmitFailed);
  auto b = scheduler->enqueue(buffer(8 * K)).value();
  pump_all();
  EXPECT_EQ(a.status(), StreamStatus::Failed);
  EXPECT_EQ(scheduler->status(b), StreamStatus::Complete);
  EXPECT_TRUE(arrived(1));
  for (const auto& s : backend.submissions()) {
    for (const auto& p : s.pieces)
      EXPECT_NE(p.upload, a.id()) << "batch " << s.token;
  }
  EXPECT_EQ(targets[0]->pieces, 0u);
  EXPECT_EQ(targets[0]->released, 1u);
  EXPECT_EQ(scheduler->stats().failed, 1u);
  EXPECT_EQ(scheduler->stats().submitted_bytes, 8 * K);
  EXPECT_EQ(scheduler->ring_stats().in_flight_bytes, 0u);
  scheduler.reset();  // before the pool it refers to
}

// cancel() stops cutting at once, but pieces cut before it are still being filled from the
// source: the upload reads Streaming until they are submitted, then Cancelled (the caller keeps
// the source until then).
TEST_F(StreamTest, AnUploadCancelledWhileItsPiecesAreFilledStaysStreamingUntilTheyAreSubmitted) {
  auto pool = FillPool::create({.threads = 0, .pinning = ThreadPinning::None}).value();
  make({.ring_bytes = 64 * K, .pool_min_bytes = 4 * K}, pool.get());
  auto a = scheduler->enqueue(buffer(256 * K)).value();
  ASSERT_EQ(scheduler->pump_once(), PumpResult::Submitted);  // batches 2-4 are being filled
  EXPECT_EQ(scheduler->cancel(a), StreamStatus::Cancelled);
  EXPECT_EQ(a.status(), StreamStatus::Streaming);
  pump_all();
  EXPECT_EQ(a.status(), StreamStatus::Cancelled);
  ASSERT_TRUE(a.value());
  EXPECT_EQ(*a.value(), backend.submissions().back().value);
  EXPECT_TRUE(
      std::equal(sources[0].begin(), sources[0].begin() + 64 * K, targets[0]->buffer.begin()));
  EXPECT_EQ(targets[0]->buffer[64 * K], std::byte{0});
  EXPECT_EQ(targets[0]->released, 1u);
  scheduler.reset();  // before the pool it refers to
}

// An in-place piece held by its writer blocks the ring's retirement (batches retire in order),
// but drain() and wait_idle() do not wait for it: the upload copied after it completes.
//   ring: [ t t t t c c - - - - - - - - - - ]   t: held in place; c: submitted, complete
TEST_F(StreamTest, DrainingDoesNotWaitForAnInPlacePieceStillHeld) {
  auto t = scheduler->write_in_place(buffer(64 * K)).value();
  auto piece = scheduler->next_piece(t).value();
  auto c = scheduler->enqueue(buffer(8 * K)).value();
  EXPECT_TRUE(scheduler->drain(5s));
  EXPECT_TRUE(scheduler->wait_idle(5s));
  EXPECT_EQ(scheduler->status(c), StreamStatus::Complete);
  EXPECT_TRUE(arrived(1));
  scheduler->abandon(t, piece);
  EXPECT_EQ(t.status(), StreamStatus::Cancelled);
}

// Destroying the scheduler ends in-place uploads paused between pieces (or never started):
// Cancelled, and released once each, as queued uploads are.
TEST_F(StreamTest, DestroyingEndsInPlaceUploadsPausedBetweenPieces) {
  auto started = scheduler->write_in_place(buffer(64 * K)).value();
  auto piece = scheduler->next_piece(started).value();
  std::memcpy(piece.bytes.data(), sources[0].data() + piece.source_offset, piece.bytes.size());
  ASSERT_TRUE(scheduler->commit(started, piece));
  auto idle = scheduler->write_in_place(buffer(16 * K)).value();
  ASSERT_TRUE(scheduler->drain(5s));
  scheduler.reset();
  EXPECT_EQ(started.status(), StreamStatus::Cancelled);
  EXPECT_TRUE(started.value());  // when the device is done with the piece committed
  EXPECT_EQ(idle.status(), StreamStatus::Cancelled);
  EXPECT_EQ(targets[0]->released, 1u);
  EXPECT_EQ(targets[1]->released, 1u);
}

// An in-place upload cancelled with a piece out, then the piece abandoned, counts once.
TEST_F(StreamTest, CancellingThenAbandoningAnInPlaceUploadCountsItOnce) {
  auto t = scheduler->write_in_place(buffer(64 * K)).value();
  auto piece = scheduler->next_piece(t).value();
  EXPECT_EQ(scheduler->cancel(t), StreamStatus::Cancelled);
  scheduler->abandon(t, piece);
  EXPECT_EQ(t.status(), StreamStatus::Cancelled);
  const StreamStats s = scheduler->stats();
  EXPECT_EQ(s.cancelled + s.stopped, 1u);
  EXPECT_EQ(targets[0]->released, 1u);
}

// After a failed commit the upload is Failed, and next_piece() says so (not Cancelled).
TEST_F(StreamTest, NextPieceAfterAFailedCommitAnswersFailed) {
  auto t = scheduler->write_in_place(buffer(64 * K)).value();
  auto piece = scheduler->next_piece(t).value();
  backend.fail_next_submit(UploadError::Failed);
  EXPECT_FALSE(scheduler->commit(t, piece));
  EXPECT_EQ(t.status(), StreamStatus::Failed);
  EXPECT_EQ(scheduler->next_piece(t).error(), UploadError::Failed);
  EXPECT_EQ(scheduler->cancel(t), StreamStatus::Failed);
}

TEST_F(StreamTest, ObserverSeesBatchesAndEnds) {
  auto a = scheduler->enqueue(buffer(40 * K)).value();
  pump_all();
  EXPECT_EQ(events.batches.size(), 3u);  // 16 + 16 + 8 KiB
  ASSERT_EQ(events.ends.size(), 1u);
  EXPECT_EQ(events.ends[0].id, a.id());
  EXPECT_EQ(events.ends[0].status, StreamStatus::Submitted);
  EXPECT_EQ(events.ends[0].value, *a.value());
}

// One observer hears the scheduler and its ring: each batch is one ring reservation, reported
// (Reserve) just before the batch is (BatchCut), with the same token and size.
TEST_F(StreamTest, ObserverSeesTheRingsReservationsBesideTheBatches) {
  scheduler->enqueue(buffer(40 * K)).value();
  pump_all();
  ASSERT_EQ(events.reserves.size(), events.batches.size());
  for (std::size_t i = 0; i < events.batches.size(); ++i) {
    EXPECT_EQ(events.reserves[i].token, events.batches[i].token) << i;
    EXPECT_EQ(events.reserves[i].bytes, events.batches[i].bytes) << i;
  }
  std::vector<EventKind> cuts;  // the order of reservations and batches alone
  for (const EventKind k : events.order) {
    if (k == EventKind::Reserve || k == EventKind::BatchCut) cuts.push_back(k);
  }
  ASSERT_EQ(cuts.size(), 2 * events.batches.size());
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    EXPECT_EQ(cuts[i], i % 2 == 0 ? EventKind::Reserve : EventKind::BatchCut) << i;
  }
}

// N producer threads and a pump thread: random buffers and images, 1 byte to several times the
// ring, both priorities, some cancelled; every upload that completes has every byte in place.
TEST(StreamSchedulerThreads, ProducersOnManyThreadsLoseNothing) {
  FakeStreamBackend backend(DelayModel::seeded_random(Duration{0}, Duration{200'000}, 7));
  backend.sleep_while_stalled = true;
  auto pool = FillPool::create({.threads = 2, .pinning = ThreadPinning::None}).value();
  StreamScheduler::Deps deps;
  deps.backend = &backend;
  deps.allocator = &backend;
  deps.fill_pool = pool.get();
  auto scheduler = StreamScheduler::create({.ring_bytes = 256 * K,
                                            .max_queued_bytes = 1024 * K,
                                            .pool_min_bytes = 16 * K,
                                            .wait_slice = 1ms,
                                            .check_invariants = true},
                                           deps)
                       .value();
  std::thread pump([&] { scheduler->run(); });

  constexpr int kThreads = 6;
  struct Upload {
    std::vector<std::byte> source;
    std::unique_ptr<FakeStreamTarget> target;
    StreamTicket ticket;
    bool cancelled = false;
  };
  std::vector<std::vector<Upload>> per_thread(kThreads);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      std::mt19937_64 rng(t + 100);
      for (int i = 0; i < 25; ++i) {
        Upload u;
        u.target = std::make_unique<FakeStreamTarget>();
        StreamRequest r;
        if (rng() % 3 == 0) {
          const TexelBlock blocks[] = {{4, 1, 1, 1}, {16, 4, 4, 1}, {8, 4, 4, 1}};
          ImageShape s{.block = blocks[rng() % 3],
                       .extent = {1 + static_cast<uint32_t>(rng() % 400),
                                  1 + static_cast<uint32_t>(rng() % 400), 1},
                       .levels = 1 + static_cast<uint32_t>(rng() % 6),
                       .layers = 1 + static_cast<uint32_t>(rng() % 3)};
          r.pieces = PieceCursor::image(s).value();
          r.alignment = s.block.bytes;
          u.target->image.emplace(s);
        } else {
          const uint64_t bytes = 1 + rng() % (rng() % 4 == 0 ? 1024 * K : 4 * K);
          r.pieces = PieceCursor::buffer(bytes, 0, 4 * K).value();
          u.target->buffer.assign(bytes, std::byte{0});
        }
        u.source = random_bytes(r.pieces.total_bytes(), rng());
        r.source = u.source.data();
        r.priority = rng() % 4 == 0 ? StreamPriority::Now : StreamPriority::Prefetch;
        r.context = u.target.get();
        auto ticket = scheduler->enqueue(r, 10s);
        ASSERT_TRUE(ticket) << static_cast<int>(ticket.error());
        u.ticket = *ticket;
        if (rng() % 10 == 0) {
          u.cancelled = scheduler->cancel(u.ticket) == StreamStatus::Cancelled;
        }
        per_thread[t].push_back(std::move(u));
      }
    });
  }
  for (auto& p : producers)
    p.join();
  for (auto& uploads : per_thread) {
    for (auto& u : uploads) {
      const StreamStatus s = scheduler->wait(u.ticket, 30s);
      if (u.cancelled) {
        EXPECT_EQ(s, StreamStatus::Cancelled);
        continue;
      }
      ASSERT_EQ(s, StreamStatus::Complete);
      if (u.target->image) {
        EXPECT_TRUE(
            std::equal(u.source.begin(), u.source.end(), u.target->image->packed().begin()));
      } else {
        EXPECT_EQ(u.target->buffer, u.source);
      }
      EXPECT_EQ(u.target->released, 1u);
    }
  }
  scheduler->stop();
  pump.join();
  EXPECT_TRUE(backend.guards_intact());
  EXPECT_LE(scheduler->ring_stats().peak_held_bytes, 256 * K);
}

}  // namespace
}  // namespace staging
