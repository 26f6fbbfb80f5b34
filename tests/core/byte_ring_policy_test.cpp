// The exhaustion policies of the ByteRing and their bounds: Defer never waits; Wait never waits
// longer than its timeout and names the oldest pending token when it gives up, recovering when
// the queue resumes; Split streams any payload through in chunks without ever holding more than
// the ring; Grow never takes the ring above its cap and trims back when idle; Fallback is counted
// and capped by the fallback cap and the cap. Time is virtual (FakeClock): a bound on a wait is
// exact, not a timing guess. Sketch notation: byte_ring_fixture.hpp.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "byte_ring_fixture.hpp"
#include "random_bytes.hpp"
#include "staging/core/byte_ring.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"

namespace staging::test {
namespace {

using PolicyTest = ByteRingFixture;
constexpr auto kInFlight = static_cast<int>(BlockCause::InFlight);
constexpr auto kFragmentation = static_cast<int>(BlockCause::Fragmentation);
constexpr auto kCap = static_cast<int>(BlockCause::Cap);

// --- Defer -------------------------------------------------------------------------------------

// capacity 64: A=20 (done), B=24, C=12:  [- *20 B*24 C*12 - *8]  t=20 h=56
//   28 bytes free, as runs of 8 (end) and 20 (start): a 24-byte request is Fragmentation,
//   a 30-byte one InFlight; neither waits.
TEST_F(PolicyTest, DeferAnswersAtOnceWithTheCauseWhatIsNeededAndWhatIsFree) {
  make(64);
  const Reservation a = take(20);
  queue.submit();
  take(24);
  take(12);
  ring->retire(a.token);
  auto frag = reserve(req(24));
  ASSERT_FALSE(frag);
  EXPECT_EQ(frag.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(frag.error().cause, BlockCause::Fragmentation);
  EXPECT_EQ(frag.error().needed, 8u + 24u);  // the 8-byte tail would be skipped
  EXPECT_EQ(frag.error().free_total, 28u);
  EXPECT_EQ(frag.error().free_contiguous, 20u);
  auto busy = reserve(req(30));
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().cause, BlockCause::InFlight);
  EXPECT_EQ(describe(busy.error()),
            "WouldBlock (InFlight): needed 38 bytes, free 28 (largest run 20); oldest pending "
            "token 2");
  EXPECT_EQ(clock.now(), Duration{0});  // bound: never waits
  EXPECT_EQ(queue.wait_calls(), 0u);
  EXPECT_EQ(ring->stats().would_blocks_by_cause[kFragmentation], 1u);
  EXPECT_EQ(ring->stats().would_blocks_by_cause[kInFlight], 1u);
  EXPECT_EQ(events.with("would-block").front(), "would-block Fragmentation needed 32 free 28/20");
  EXPECT_EQ(ring->held_bytes(), 64u);  // bound: never above the ring
}

// A request of exactly the ring's size can be held once the ring is empty: WouldBlock
// (InFlight) while 8 bytes are live, never TooLarge; then it fits.
TEST_F(PolicyTest, ARequestOfExactlyTheRingsSizeIsNeverRefusedForGood) {
  make(64);
  const Reservation a = take(8);  // its token is not submitted: nothing retires by itself
  auto r = reserve(req(64));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(r.error().cause, BlockCause::InFlight);
  ring->retire(a.token);
  EXPECT_EQ(take(64).offset, 0u);
}

TEST_F(PolicyTest, DeferRefusesForGoodWhatTheRingCanNeverHold) {
  make(64);
  auto r = reserve(req(65));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::TooLarge);
  EXPECT_EQ(r.error().cause, BlockCause::Cap);
  EXPECT_EQ(ring->stats().cap_refusals, 1u);
}

// --- Wait --------------------------------------------------------------------------------------

// capacity 64, each submission completes 10 us after it was made:
//   t=0 A=8 (token 1, done 10us)  t=1us B=40 (token 2, done 11us)  t=2us C=8 (token 3, done 12us)
//   [A*8 B*40 C*8 - *8]   a 50-byte request fits only once all three retired: wait for token 3.
TEST_F(PolicyTest, WaitWaitsOnceForTheTokenThatFreesEnough) {
  queue.set_model(DelayModel::fixed(10us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  for (uint64_t size : {8, 40, 8}) {
    take(size);
    queue.submit();
    clock.advance(1us);
  }
  clock.advance(-1us);  // ignored: time never goes back
  const Duration start = clock.now();
  const Reservation r = take(50);
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(clock.now(), 12us);
  EXPECT_EQ(queue.wait_calls(), 1u);
  EXPECT_EQ(ring->stats().waits, 1u);
  EXPECT_EQ(ring->stats().waits_by_cause[kInFlight], 1u);
  EXPECT_EQ(ring->stats().wait_total, 12us - start);
  EXPECT_EQ(events.with("wait-begin").front(), "wait-begin InFlight token 3 needed 58");
  EXPECT_EQ(events.with("wait-end").front(), "wait-end InFlight token 3 waited 9000");
}

// The cause of a wait: 28 bytes free but no 24-byte run -> Fragmentation; B's retirement (token
// 2) makes a run of 44 at the start.
TEST_F(PolicyTest, WaitAttributesFragmentation) {
  queue.set_model(DelayModel::fixed(10us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  const Reservation a = take(20);
  queue.submit();
  clock.advance(1us);
  take(24);
  queue.submit();
  clock.advance(1us);
  take(12);
  queue.submit();
  clock.advance(10us - 2us);
  ring->retire(a.token);
  const Reservation r = take(24);
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(clock.now(), 11us);
  EXPECT_EQ(ring->stats().waits_by_cause[kFragmentation], 1u);
  EXPECT_EQ(events.with("wait-begin").front(), "wait-begin Fragmentation token 2 needed 32");
}

// A stalled queue: the wait gives up after exactly its timeout (virtual time) with an error that
// names the oldest pending token; once the queue resumes, the same request succeeds.
//   [A*64]  A = token 1, submitted, then the queue stalls.
TEST_F(PolicyTest, WaitOnAStalledQueueTimesOutNamingTheOldestTokenAndRecovers) {
  queue.set_model(DelayModel::fixed(50us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  const Reservation a = take(64);
  queue.submit();
  queue.stall();
  auto r = reserve(req(8));
  ASSERT_FALSE(r);
  const ReserveError& e = r.error();
  EXPECT_EQ(e.kind, UploadError::Timeout);
  EXPECT_EQ(e.cause, BlockCause::InFlight);
  EXPECT_EQ(e.oldest_pending, a.token);
  EXPECT_EQ(e.wait_for, a.token);
  EXPECT_EQ(e.waited, 1ms);
  EXPECT_EQ(clock.now(), 1ms);  // bound: exactly the timeout, never more
  EXPECT_EQ(describe(e),
            "Timeout (InFlight): waited 1000000 ns for token 1, oldest pending token 1; needed 8 "
            "bytes, free 0 (largest run 0)");
  EXPECT_EQ(ring->stats().timeouts, 1u);
  EXPECT_EQ(ring->stats().wait_calls, 1u);  // one wait to the deadline, no poll after it
  EXPECT_EQ(events.with("timeout").front(), "timeout InFlight oldest 1 waited-for 1");
  EXPECT_TRUE(intact(a));

  queue.release(DelayModel::fixed(100us));  // the queue resumes
  const Reservation b = take(8);
  EXPECT_EQ(b.offset, 0u);
  EXPECT_EQ(clock.now(), 1ms + 100us);
  EXPECT_EQ(ring->stats().waits, 2u);
  EXPECT_EQ(ring->stats().wait_longest, 1ms);
}

TEST_F(PolicyTest, WaitTimeoutIsOverridablePerCallAndZeroPollsOnce) {
  queue.set_model(DelayModel::fixed(50us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  take(64);
  queue.submit();
  queue.stall();
  ReserveRequest r = req(8);
  r.timeout = Duration{0};
  auto polled = reserve(r);
  ASSERT_FALSE(polled);
  EXPECT_EQ(polled.error().kind, UploadError::Timeout);
  EXPECT_EQ(clock.now(), Duration{0});
  EXPECT_EQ(queue.wait_calls(), 1u);
  r.timeout = 30us;
  (void)reserve(r);
  EXPECT_EQ(clock.now(), 30us);
}

// A completion source that breaks its contract (returns at once, completes nothing) on a clock
// that does not move: the ring still returns (Timeout), it never spins.
TEST_F(PolicyTest, WaitNeverHangsOnASourceThatMakesNoProgress) {
  struct Stuck final : CompletionSource {
    int calls = 0;
    TimelineValue completed() override { return 0; }
    TimelineValue wait(TimelineValue, Duration) override {
      ++calls;
      return 0;
    }
  } stuck;
  auto made = staging::detail::create_byte_ring({.capacity = 64,
                                                 .policy = ExhaustionPolicy::Wait,
                                                 .wait_timeout = 1ms,
                                                 .check_invariants = true},
                                                {&allocator, &clock, nullptr});
  ASSERT_TRUE(made);
  ByteRing& r = *made;
  ASSERT_TRUE(reserve_waiting(r, stuck, req(64)));
  auto refused = reserve_waiting(r, stuck, req(8));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, UploadError::Timeout);
  EXPECT_EQ(stuck.calls, 1);
}

// ByteRing::reserve() itself never waits, whatever the policy: under Wait it answers at once as
// Defer does, naming the token whose completion frees enough — what reserve_waiting() waits for.
//   [A*40 B*24]  A = token 1, B = token 2: 8 bytes free up once A retires.
TEST_F(PolicyTest, ReserveAnswersAWaitAtOnceNamingTheTokenToWaitFor) {
  queue.set_model(DelayModel::fixed(10us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  take(40);
  queue.submit();
  take(24);
  queue.submit();
  auto refused = ring->reserve(req(8));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(refused.error().cause, BlockCause::InFlight);
  EXPECT_EQ(refused.error().wait_for, TimelineValue{1});
  EXPECT_EQ(refused.error().oldest_pending, TimelineValue{1});
  EXPECT_EQ(clock.now(), Duration{0});
  EXPECT_EQ(queue.wait_calls(), 0u);
  EXPECT_EQ(ring->stats().would_blocks, 1u);
  EXPECT_EQ(ring->stats().waits, 0u);
  // The owner waits for the token, hands the completed value over, and tries again.
  ring->retire(queue.wait(*refused.error().wait_for, 1ms));
  EXPECT_EQ(take(8).offset, 0u);
  EXPECT_EQ(clock.now(), 10us);
}

// No ring call reaches the completion source: the ring is handed values, and only
// reserve_waiting() reads the source (once on a miss, then while it waits).
TEST_F(PolicyTest, OnlyReserveWaitingReadsTheCompletionSource) {
  struct Counting final : CompletionSource {
    FakeQueue* queue = nullptr;
    int completed_calls = 0, wait_calls = 0;
    TimelineValue completed() override {
      ++completed_calls;
      return queue->completed();
    }
    TimelineValue wait(TimelineValue v, Duration t) override {
      ++wait_calls;
      return queue->wait(v, t);
    }
  } source;
  source.queue = &queue;
  queue.set_model(DelayModel::fixed(10us));
  for (ExhaustionPolicy policy :
       {ExhaustionPolicy::Defer, ExhaustionPolicy::Wait, ExhaustionPolicy::Split,
        ExhaustionPolicy::Grow, ExhaustionPolicy::Fallback}) {
    make({.capacity = 64, .cap = 128, .policy = policy, .wait_timeout = 1ms});
    for (int i = 0; i < 4; ++i) {
      ReserveRequest r = req(24);
      (void)ring->reserve(r);
      queue.submit();
      ring->retire(queue.completed());
      ring->cancel(1);
      ring->trim_idle();
    }
    EXPECT_EQ(source.completed_calls + source.wait_calls, 0) << to_string(policy);
  }
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  take(64);
  queue.submit();
  ASSERT_TRUE(reserve_waiting(*ring, source, req(8)));
  EXPECT_EQ(source.completed_calls, 1);  // the one look on a miss
  EXPECT_EQ(source.wait_calls, 1);
  EXPECT_EQ(ring->stats().polls, 1u);
  EXPECT_EQ(ring->stats().wait_calls, 1u);
}

TEST_F(PolicyTest, WaitRefusesAtOnceWhatTheRingCanNeverHold) {
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  take(8);
  auto r = reserve(req(65));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::TooLarge);
  EXPECT_EQ(clock.now(), Duration{0});
}

TEST_F(PolicyTest, APerCallPolicyOverridesTheRings) {
  queue.set_model(DelayModel::fixed(10us));
  make(64);  // Defer
  take(64);
  queue.submit();
  ReserveRequest r = req(8);
  r.policy = ExhaustionPolicy::Wait;
  r.timeout = 1ms;
  const Reservation placed = take(r);
  EXPECT_EQ(placed.offset, 0u);
  EXPECT_EQ(clock.now(), 10us);
}

// --- Split -------------------------------------------------------------------------------------

// Copies each chunk out of ring memory when the ring reclaims it — the latest moment the GPU
// could have read it — so an overwrite before reclamation would corrupt the destination.
struct GpuCopier final : Observer {
  FakeRegionAllocator* allocator = nullptr;
  std::vector<uint8_t>* destination = nullptr;
  std::map<uint64_t, std::pair<Reservation, uint64_t>> chunks;  // id -> (chunk, payload offset)
  void on_event(const Event& e) override {
    if (e.kind != EventKind::Retire) return;
    const auto it = chunks.find(e.id);
    if (it == chunks.end()) return;
    const auto& [r, at] = it->second;
    std::memcpy(destination->data() + at, allocator->data(r.region) + r.offset, r.size);
    chunks.erase(it);
  }
};

// A 1000-byte payload through a 64-byte ring, in chunks that are multiples of a 12-byte row
// pitch, each submitted as placed and completing 5 us later: the destination receives every byte,
// the ring never holds more than its 64 bytes, and no wait exceeds the timeout.
TEST_F(PolicyTest, SplitStreamsAPayloadLargerThanTheWholeRing) {
  queue.set_model(DelayModel::fixed(5us));
  std::vector<uint8_t> payload(1000), destination(1000, 0);
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = byte_at(99, i);
  GpuCopier gpu;
  gpu.allocator = &allocator;
  gpu.destination = &destination;
  auto made = staging::detail::create_byte_ring({.capacity = 64,
                                                 .policy = ExhaustionPolicy::Split,
                                                 .wait_timeout = 1ms,
                                                 .check_invariants = true},
                                                {&allocator, &clock, &gpu});
  ASSERT_TRUE(made);
  ByteRing& r = *made;
  uint64_t sent = 0;
  int calls = 0;
  while (sent < payload.size()) {
    ReserveRequest q = req(payload.size() - sent);
    q.granularity = 12;
    const Duration before = clock.now();
    auto chunk = reserve_waiting(r, queue, q);
    ASSERT_TRUE(chunk) << describe(chunk.error());
    EXPECT_LE(clock.now() - before, 1ms);  // bound: no wait exceeds the timeout
    EXPECT_TRUE(chunk->size % 12 == 0 || chunk->size == q.size) << chunk->size;
    EXPECT_LE(chunk->size, 64u);
    std::memcpy(allocator.data(chunk->region) + chunk->offset, payload.data() + sent, chunk->size);
    gpu.chunks[chunk->id] = {*chunk, sent};
    sent += chunk->size;
    queue.submit();
    EXPECT_LE(r.held_bytes(), 64u);  // bound: never above the cap (== capacity)
    ++calls;
  }
  clock.advance(1ms);
  r.retire(queue.completed());
  EXPECT_TRUE(gpu.chunks.empty());
  EXPECT_EQ(destination, payload);
  EXPECT_GT(r.stats().splits, 10u);
  EXPECT_GT(r.stats().waits, 0u);
  EXPECT_EQ(r.stats().timeouts, 0u);
  EXPECT_EQ(r.stats().peak_held_bytes, 64u);
  EXPECT_EQ(static_cast<uint64_t>(calls), r.stats().reservations);
}

// capacity 64, granularity 8:  A=10 (retired), B=38 (token 2, done 10 us later):
//   [- *10 B*38 - *16]   t=10 h=48: runs of 16 at the end and 10 at the start.
// Without a minimum chunk, a 100-byte payload gets a 16-byte chunk at once (a multiple of 8);
// with split_min_chunk 20 (rounded up to 24) neither run is worth it: it waits for B, then takes
// the whole ring.
TEST_F(PolicyTest, SplitHonoursTheGranularityAndTheMinimumChunk) {
  for (uint64_t min_chunk : {0, 20}) {
    make({.capacity = 64,
          .policy = ExhaustionPolicy::Split,
          .wait_timeout = 1ms,
          .split_min_chunk = min_chunk});
    const Reservation a = take(10);
    queue.set_model(DelayModel::fixed(Duration{0}));
    queue.submit();
    queue.set_model(DelayModel::fixed(10us));
    take(38);
    queue.submit();
    ring->retire(a.token);
    const Duration start = clock.now();
    ReserveRequest r = req(100);
    r.granularity = 8;
    const Reservation chunk = take(r);
    if (min_chunk == 0) {
      EXPECT_EQ(chunk.size, 16u);
      EXPECT_EQ(chunk.offset, 48u);
      EXPECT_EQ(clock.now(), start);
    } else {
      EXPECT_EQ(chunk.size, 64u);
      EXPECT_EQ(chunk.offset, 0u);
      EXPECT_EQ(clock.now() - start, 10us);
    }
    EXPECT_EQ(ring->stats().splits, 1u);
    queue.submit();
    clock.advance(1ms);
    poll();
  }
}

TEST_F(PolicyTest, SplitRefusesAGranularityNoRegionCanHold) {
  make({.capacity = 64, .policy = ExhaustionPolicy::Split, .wait_timeout = 1ms});
  ReserveRequest r = req(100);
  r.granularity = 65;
  auto refused = reserve(r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, UploadError::TooLarge);
  r.size = 60;  // fits whole: the granularity does not matter
  EXPECT_TRUE(reserve(r));
}

TEST_F(PolicyTest, SplitOnAStalledQueueTimesOutAndRecovers) {
  queue.set_model(DelayModel::fixed(10us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Split, .wait_timeout = 200us});
  const Reservation a = take(64);
  queue.submit();
  queue.stall();
  auto r = reserve(req(500));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::Timeout);
  EXPECT_EQ(r.error().oldest_pending, a.token);
  EXPECT_EQ(clock.now(), 200us);
  queue.release();
  const Reservation chunk = take(500);
  EXPECT_EQ(chunk.size, 64u);
}

// capacity 64:  A=40 (retired), B=16 (token 2, not done):
//   [- *40 B*16 - *8]   t=40 h=56: runs of 8 at the head (the end) and 40 at the start.
// A 100-byte Split request gets the largest chunk that fits now — the 40 bytes at offset 0, the
// 8 at the end skipped and charged to it — not the 8-byte run it meets first:
//   [C*40 B*16 #8]   C.skipped == 8
TEST_F(PolicyTest, SplitPlacesTheLargestChunkThatFitsNotTheFirst) {
  make({.capacity = 64, .policy = ExhaustionPolicy::Split, .wait_timeout = 1ms});
  queue.set_model(DelayModel::fixed(Duration{0}));
  const Reservation a = take(40);
  queue.submit();
  queue.stall();
  const Reservation b = take(16);
  queue.submit();
  ring->retire(a.token);
  ASSERT_EQ(ring->largest_free(), 40u);

  auto chunk = ring->reserve(req(100));  // never waits: a chunk fits now
  ASSERT_TRUE(chunk) << describe(chunk.error());
  EXPECT_EQ(chunk->size, 40u);
  EXPECT_EQ(chunk->offset, 0u);
  EXPECT_EQ(chunk->skipped, 8u);
  EXPECT_EQ(ring->stats().splits, 1u);
  const std::vector<std::byte> bytes = random_bytes(chunk->size, 0xc0ffee);
  std::memcpy(allocator.data(chunk->region) + chunk->offset, bytes.data(), bytes.size());
  EXPECT_TRUE(intact(b));  // B's bytes untouched by the chunk
  EXPECT_EQ(0, std::memcmp(allocator.data(0), bytes.data(), bytes.size()));
  queue.release();
  clock.advance(1ms);
  poll();
}

// On a tie the run at the head wins: no tail is skipped.
//   [- *24 A*16 - *24]   t=24 h=40: runs of 24 at the head and 24 at the start ─► [40, 64)
TEST_F(PolicyTest, SplitPrefersTheRunAtTheHeadOnATie) {
  make({.capacity = 64, .policy = ExhaustionPolicy::Split, .wait_timeout = 1ms});
  queue.set_model(DelayModel::fixed(Duration{0}));
  const Reservation first = take(24);
  queue.submit();
  queue.stall();
  take(16);
  queue.submit();
  ring->retire(first.token);
  auto chunk = ring->reserve(req(100));
  ASSERT_TRUE(chunk) << describe(chunk.error());
  EXPECT_EQ(chunk->size, 24u);
  EXPECT_EQ(chunk->offset, 40u);
  EXPECT_EQ(chunk->skipped, 0u);
  queue.release();
  clock.advance(1ms);
  poll();
}

// A Split request larger than the whole ring (500 bytes into 64) is split for cause Cap, but
// when no chunk fits it waits for in-flight bytes, not for the cap: its would-block, wait and
// timeout carry InFlight.
//   [A*64]  (token 1, done 10 us later)  reserve(500) ─► WouldBlock InFlight, wait_for 1
//   reserve_waiting(500) ─► waits 10 us (InFlight) ─► [C*64], a split for Cap
TEST_F(PolicyTest, AnOversizedSplitWaitsForInFlightBytesNotForTheCap) {
  queue.set_model(DelayModel::fixed(10us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Split, .wait_timeout = 1ms});
  const Reservation a = take(64);
  queue.submit();

  auto blocked = ring->reserve(req(500));
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(blocked.error().cause, BlockCause::InFlight);
  EXPECT_EQ(blocked.error().wait_for, a.token);
  EXPECT_EQ(ring->stats().would_blocks_by_cause[kInFlight], 1u);
  EXPECT_EQ(ring->stats().would_blocks_by_cause[kCap], 0u);

  const Reservation chunk = take(500);
  EXPECT_EQ(chunk.size, 64u);
  const ByteRingStats& s = ring->stats();
  EXPECT_EQ(s.waits, 1u);
  EXPECT_EQ(s.waits_by_cause[kInFlight], 1u);
  EXPECT_EQ(s.waits_by_cause[kCap], 0u);
  EXPECT_EQ(s.splits_by_cause[kCap], 1u);  // the whole 500 bytes can never fit: Cap
  EXPECT_EQ(events.with("wait-begin InFlight").size(), 1u);
  EXPECT_EQ(events.with("wait-end InFlight").size(), 1u);
  EXPECT_EQ(events.with("split Cap").size(), 1u);

  queue.submit();
  queue.stall();  // a stalled queue: the timeout carries InFlight too
  auto timed_out = reserve(req(500));
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().kind, UploadError::Timeout);
  EXPECT_EQ(timed_out.error().cause, BlockCause::InFlight);
  EXPECT_EQ(ring->stats().waits_by_cause[kInFlight], 2u);
  EXPECT_EQ(ring->stats().waits_by_cause[kCap], 0u);
  queue.release();
  clock.advance(1ms);
  poll();
}

// The same request when enough bytes are free but no run holds its smallest chunk (24, the
// minimum of 20 rounded to the granularity of 8): Fragmentation, not Cap.
//   [- *10 B*38 - *16]   t=10 h=48: 26 bytes free in runs of 16 and 10
TEST_F(PolicyTest, AnOversizedSplitWaitingOnFragmentationSaysSo) {
  make({.capacity = 64,
        .policy = ExhaustionPolicy::Split,
        .wait_timeout = 1ms,
        .split_min_chunk = 20});
  queue.set_model(DelayModel::fixed(Duration{0}));
  const Reservation a = take(10);
  queue.submit();
  queue.stall();
  take(38);
  queue.submit();
  ring->retire(a.token);
  ReserveRequest r = req(500);
  r.granularity = 8;
  auto blocked = ring->reserve(r);
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(blocked.error().cause, BlockCause::Fragmentation);
  EXPECT_EQ(blocked.error().free_total, 26u);
  EXPECT_EQ(ring->stats().would_blocks_by_cause[kFragmentation], 1u);
  EXPECT_EQ(ring->stats().would_blocks_by_cause[kCap], 0u);
  queue.release();
  clock.advance(1ms);
  poll();
}

// --- Grow --------------------------------------------------------------------------------------

// capacity 64, cap 256, grow_step 64; 32-byte reservations never submitted:
//   region 0 [A A] -> grows region 1 [C D] -> region 2 [E F] -> region 3 [G H]: held 256 = cap.
//   The 9th is refused (WouldBlock, cause Cap): the ring never goes above the cap.
TEST_F(PolicyTest, GrowAddsRegionsUpToTheCapAndNeverBeyond) {
  make({.capacity = 64, .cap = 256, .policy = ExhaustionPolicy::Grow, .grow_step = 64});
  for (int i = 0; i < 8; ++i) {
    const Reservation r = take(32);
    EXPECT_EQ(r.region, static_cast<uint32_t>(i / 2));
    EXPECT_LE(ring->held_bytes(), 256u);
  }
  EXPECT_EQ(ring->held_bytes(), 256u);
  EXPECT_EQ(ring->stats().grows, 3u);
  auto refused = reserve(req(32));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(refused.error().cause, BlockCause::Cap);
  EXPECT_EQ(ring->held_bytes(), 256u);
  EXPECT_EQ(allocator.log().peak_live_bytes, 256u);
  EXPECT_EQ(ring->stats().would_blocks_by_cause[kCap], 1u);
  EXPECT_EQ(events.with("cap-refusal").front(), "cap-refusal Grow asked 32 held 256 for-now");
  EXPECT_EQ(events.with("grow r1").front(), "grow r1 64 InFlight");
  auto never = reserve(req(257));
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().kind, UploadError::TooLarge);
}

// Grown regions sit idle once their reservations retire and are released after trim_after
// (virtual time), back to the ring's own 64 bytes.
TEST_F(PolicyTest, GrowTrimsIdleRegionsBackAfterTrimAfter) {
  make({.capacity = 64,
        .cap = 256,
        .policy = ExhaustionPolicy::Grow,
        .grow_step = 64,
        .trim_after = 1ms});
  for (int i = 0; i < 8; ++i)
    take(32);
  queue.submit();
  poll();
  EXPECT_EQ(ring->live(), 0u);
  EXPECT_EQ(ring->held_bytes(), 256u);  // idle, not yet trimmed
  clock.advance(1ms - 1ns);
  EXPECT_EQ(ring->trim_idle(), 0u);
  // An idle grown region is reused before the ring grows again.
  const Reservation big = take(64);
  const Reservation reuse = take(64);
  EXPECT_EQ(big.region, 0u);
  EXPECT_EQ(reuse.region, 1u);
  EXPECT_EQ(ring->stats().grows, 3u);
  queue.submit();
  poll();
  clock.advance(1ms);
  ring->retire(queue.completed());
  EXPECT_EQ(ring->held_bytes(), 64u);
  EXPECT_EQ(ring->stats().trims, 3u);
  EXPECT_EQ(allocator.log().live_regions, 1u);
  EXPECT_EQ(events.with("trim").size(), 3u);
}

TEST_F(PolicyTest, GrowMakesARegionAtLeastAsLargeAsTheRequestButWithinTheCap) {
  make({.capacity = 64, .cap = 200, .policy = ExhaustionPolicy::Grow, .grow_step = 64});
  const Reservation big = take(100);  // larger than the ring and than grow_step
  EXPECT_EQ(big.region, 1u);
  EXPECT_EQ(allocator.size(1), 100u);
  take(64);
  const Reservation clamped = take(20);  // a 64-byte step would exceed the cap: 36 bytes
  EXPECT_EQ(allocator.size(clamped.region), 36u);
  EXPECT_EQ(ring->held_bytes(), 200u);
}

TEST_F(PolicyTest, GrowReportsAnAllocationFailure) {
  make({.capacity = 64, .cap = 256, .policy = ExhaustionPolicy::Grow});
  take(64);
  allocator.fail_next(1, AllocError::DeviceLost);
  auto r = reserve(req(8));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::AllocationFailed);
  EXPECT_EQ(r.error().alloc_error, AllocError::DeviceLost);
  EXPECT_EQ(ring->held_bytes(), 64u);
  EXPECT_EQ(ring->stats().allocation_failures, 1u);
  EXPECT_TRUE(reserve(req(8)));  // the next one grows
}

// --- Fallback ----------------------------------------------------------------------------------

// capacity 64, cap 160, fallback_cap 64; the ring is full:
//   fallback 40 -> region 1 (40 bytes)    fallback 30 -> 40 + 30 > 64: WouldBlock (Cap)
//   fallback 24 -> region 2 (24 bytes)    fallback 100 -> can never fit: TooLarge
TEST_F(PolicyTest, FallbackIsADedicatedRegionCountedAndCapped) {
  make({.capacity = 64, .cap = 160, .policy = ExhaustionPolicy::Fallback, .fallback_cap = 64});
  take(64);
  const Reservation f1 = take(40);
  EXPECT_TRUE(f1.fallback);
  EXPECT_EQ(f1.region, 1u);
  EXPECT_EQ(f1.offset, 0u);
  EXPECT_EQ(allocator.size(1), 40u);
  auto over = reserve(req(30));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(over.error().cause, BlockCause::Cap);
  const Reservation f2 = take(24);
  EXPECT_TRUE(f2.fallback);
  auto never = reserve(req(100));
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().kind, UploadError::TooLarge);
  const ByteRingStats& s = ring->stats();
  EXPECT_EQ(s.fallbacks, 2u);
  EXPECT_EQ(s.fallbacks_by_cause[kInFlight], 2u);
  EXPECT_EQ(s.fallback_bytes, 64u);
  EXPECT_EQ(s.fallback_held_bytes, 64u);
  EXPECT_EQ(s.held_bytes, 128u);
  EXPECT_LE(s.peak_held_bytes, 160u);
  EXPECT_EQ(events.with("fallback In").front(), "fallback InFlight #2 r1 40");
  EXPECT_TRUE(intact(f1) && intact(f2));
  // Retired: the dedicated regions are released at once.
  queue.submit();
  poll();
  EXPECT_EQ(ring->held_bytes(), 64u);
  EXPECT_EQ(ring->stats().fallback_held_bytes, 0u);
  EXPECT_EQ(ring->stats().peak_fallback_bytes, 64u);
  EXPECT_EQ(allocator.log().live_regions, 1u);
}

TEST_F(PolicyTest, FallbackTakesWhatIsLargerThanTheRingWithinTheCap) {
  make({.capacity = 64, .cap = 256, .policy = ExhaustionPolicy::Fallback});
  const Reservation f = take(150);
  EXPECT_TRUE(f.fallback);
  EXPECT_EQ(ring->stats().fallbacks_by_cause[kCap], 1u);
  EXPECT_EQ(ring->fallback_cap(), 192u);
}

TEST_F(PolicyTest, FallbackWithNoRoomUnderTheCapAnswersAsDefer) {
  make({.capacity = 64, .policy = ExhaustionPolicy::Fallback});  // cap == capacity
  take(64);
  auto now = reserve(req(8));
  ASSERT_FALSE(now);
  EXPECT_EQ(now.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(now.error().cause, BlockCause::Cap);
  auto never = reserve(req(65));
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().kind, UploadError::TooLarge);
  EXPECT_EQ(ring->held_bytes(), 64u);
}

TEST_F(PolicyTest, FallbackReportsAnAllocationFailure) {
  make({.capacity = 64, .cap = 256, .policy = ExhaustionPolicy::Fallback});
  take(64);
  allocator.fail_next(1);
  auto r = reserve(req(8));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::AllocationFailed);
  EXPECT_EQ(r.error().alloc_error, AllocError::OutOfMemory);
  EXPECT_EQ(ring->stats().fallback_held_bytes, 0u);
}

// --- every policy's bound, under random load -----------------------------------------------------
//
// 4000 random reservations (1..150 bytes, random alignment, per-call timeouts 0..500 us) into a
// 128-byte ring with cap 384, fallback cap 128, on a queue with seeded random delays of 0..400 us
// that now and then stalls for a while. After every call: held bytes <= cap, fallback bytes <=
// fallback cap; Wait and Split never advanced virtual time beyond the call's timeout; the others
// never advanced it at all. The checker (Abort mode) proves I1–I5 on every reservation.
class PolicyBound : public ByteRingFixture,
                    public ::testing::WithParamInterface<ExhaustionPolicy> {};

TEST_P(PolicyBound, NothingExceedsTheCapAndNoWaitExceedsItsTimeout) {
  const ExhaustionPolicy policy = GetParam();
  queue.set_model(DelayModel::seeded_random(Duration{0}, 400us, 42));
  make({.capacity = 128,
        .cap = 384,
        .policy = policy,
        .wait_timeout = 300us,
        .grow_step = 96,
        .trim_after = 100us,
        .fallback_cap = 128});
  uint64_t x = 12345;
  const auto next = [&] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 33;
  };
  uint64_t placed = 0, refused = 0;
  Duration longest{0};
  for (int i = 0; i < 4000; ++i) {
    ReserveRequest r = req(1 + next() % 150, uint64_t{1} << (next() % 6));
    r.timeout = Duration{static_cast<Duration::rep>(next() % 500'000)};
    r.granularity = 1 + next() % 16;
    const Duration before = clock.now();
    auto got = reserve(r);
    const Duration waited = clock.now() - before;
    if (policy == ExhaustionPolicy::Wait || policy == ExhaustionPolicy::Split) {
      ASSERT_LE(waited, *r.timeout);
    } else {
      ASSERT_EQ(waited, Duration{0});
    }
    longest = std::max(longest, waited);
    ASSERT_LE(ring->held_bytes(), 384u);
    ASSERT_LE(ring->stats().fallback_held_bytes, 128u);
    if (got) {
      ++placed;
      fill(*got);
    } else {
      ++refused;
    }
    if (next() % 2 == 0) queue.submit();
    if (next() % 3 == 0) clock.advance(Duration{static_cast<Duration::rep>(next() % 300'000)});
    if (next() % 200 == 0) queue.stall();
    if (queue.stalled() && next() % 20 == 0) queue.release();
    ring->retire(queue.completed());
  }
  EXPECT_GT(placed, 500u);
  EXPECT_GT(refused, 0u);  // the policy was exercised
  EXPECT_LE(ring->stats().peak_held_bytes, 384u);
  EXPECT_LE(ring->stats().peak_fallback_bytes, 128u);
  EXPECT_LE(ring->stats().wait_longest, 500us);
  EXPECT_EQ(allocator.log().guard_violations, 0u);
  RecordProperty("placed", static_cast<int>(placed));
  RecordProperty("refused", static_cast<int>(refused));
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, PolicyBound,
                         ::testing::Values(ExhaustionPolicy::Defer, ExhaustionPolicy::Wait,
                                           ExhaustionPolicy::Split, ExhaustionPolicy::Grow,
                                           ExhaustionPolicy::Fallback),
                         [](const auto& param) { return std::string(to_string(param.param)); });

// A grown region is trimmed trim_after after it went idle: measured from when its last
// reservation retired (t = 15 s here), not from when it was made (10 s) or from time 0.
TEST_F(PolicyTest, GrowTrimsExactlyTrimAfterAfterTheRegionWentIdle) {
  make({.capacity = 64,
        .cap = 128,
        .policy = ExhaustionPolicy::Grow,
        .grow_step = 64,
        .trim_after = 1s});
  clock.advance(10s);
  take(64);
  const Reservation grown = take(64);
  ASSERT_EQ(grown.region, 1u);
  queue.submit();
  clock.advance(5s);
  poll();  // both retire at 15 s: region 1 is idle from now
  EXPECT_EQ(ring->held_bytes(), 128u);
  clock.advance(1s - 1ns);
  EXPECT_EQ(ring->trim_idle(), 0u);
  EXPECT_EQ(ring->held_bytes(), 128u);
  clock.advance(1ns);
  EXPECT_EQ(ring->trim_idle(), 64u);
  EXPECT_EQ(ring->held_bytes(), 64u);
  EXPECT_EQ(events.with("trim").size(), 1u);
}

// The fallback caps are inclusive: a request of exactly fallback_cap fits, and so does one that
// brings the fallback bytes to exactly fallback_cap; one byte more waits.
TEST_F(PolicyTest, FallbackCapsAreInclusive) {
  make({.capacity = 64, .cap = 160, .policy = ExhaustionPolicy::Fallback, .fallback_cap = 48});
  take(64);
  const Reservation whole = take(48);  // == fallback_cap
  EXPECT_TRUE(whole.fallback);
  auto one = reserve(req(1));
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().cause, BlockCause::Cap);
  queue.submit();
  poll();
  take(64);
  EXPECT_TRUE(take(16).fallback);
  EXPECT_TRUE(take(32).fallback);  // 16 + 32 == fallback_cap
  EXPECT_FALSE(reserve(req(1)));
  EXPECT_EQ(ring->stats().fallback_held_bytes, 48u);
  auto never = reserve(req(65));  // above the fallback cap and every ring region
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().kind, UploadError::TooLarge);
}

// The held bytes may reach the cap exactly: capacity 64 + fallback regions of 96 == cap 160.
TEST_F(PolicyTest, FallbackMayFillTheCapExactly) {
  make({.capacity = 64, .cap = 160, .policy = ExhaustionPolicy::Fallback});
  take(64);
  EXPECT_TRUE(take(90).fallback);
  EXPECT_TRUE(take(6).fallback);
  EXPECT_EQ(ring->held_bytes(), 160u);
  auto more = reserve(req(1));
  ASSERT_FALSE(more);
  EXPECT_EQ(more.error().cause, BlockCause::Cap);
}

// A fallback cap equal to the cap is accepted by create() (and clamped to what the ring leaves).
TEST_F(PolicyTest, AFallbackCapEqualToTheCapIsAccepted) {
  auto made = staging::detail::create_byte_ring({.capacity = 64, .cap = 128, .fallback_cap = 128},
                                                {&allocator, &clock, nullptr});
  ASSERT_TRUE(made);
  EXPECT_EQ(made->fallback_cap(), 64u);
  EXPECT_EQ(staging::detail::create_byte_ring({.capacity = 64, .cap = 128, .fallback_cap = 129},
                                              {&allocator, &clock, nullptr})
                .error(),
            CreateError::FallbackCapAboveCap);
}

// capacity 64: A=30 (retired), B=20, D=14, E=10 (wrapped):  [E*10 - *20 B*20 D*14]  t=30 h=10
// A 20-byte request aligned to 16 would start at 16: it needs 6 bytes of padding plus its 20.
// 20 bytes are free in total (not contiguously): Fragmentation.
TEST_F(PolicyTest, NeededCountsTheAlignmentPadding) {
  make(64);
  const Reservation a = take(30);
  queue.submit();
  take(20);
  ring->retire(a.token);
  take(14);
  EXPECT_EQ(take(10).offset, 0u);
  auto r = reserve(req(20, 16));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().needed, 6u + 20u);
  EXPECT_EQ(r.error().cause, BlockCause::Fragmentation);
  EXPECT_EQ(r.error().free_total, 20u);
}

// capacity 64: 28 bytes free as runs of 8 and 20 (as in the Defer test above): a request of
// exactly 28 bytes has enough free bytes in total, so it is Fragmentation, not InFlight.
TEST_F(PolicyTest, ExactlyEnoughFreeBytesIsFragmentation) {
  make(64);
  const Reservation a = take(20);
  queue.submit();
  take(24);
  take(12);
  ring->retire(a.token);
  auto r = reserve(req(28));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().free_total, 28u);
  EXPECT_EQ(r.error().cause, BlockCause::Fragmentation);
}

// Region 0 full, grown regions 1 and 2 with 24 bytes free each: the free total counts both.
TEST_F(PolicyTest, FreeTotalCountsEveryRingRegion) {
  make({.capacity = 64, .cap = 256, .policy = ExhaustionPolicy::Grow, .grow_step = 64});
  take(64);
  EXPECT_EQ(take(40).region, 1u);
  EXPECT_EQ(take(40).region, 2u);
  ReserveRequest r = req(50);
  r.policy = ExhaustionPolicy::Defer;
  auto refused = reserve(r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().free_total, 48u);
  EXPECT_EQ(refused.error().free_contiguous, 24u);
  EXPECT_EQ(refused.error().cause, BlockCause::InFlight);
}

// capacity 64, each submission completes 10 us after it is made:
//   A=24 (token 1, submitted)  B=24 (cancelled, its token never submitted)  C=8:  [A B C - *8]
// A 32-byte request fits once A and B are reclaimed; B's reclamation needs only A's token (a
// cancelled reservation is reclaimed when reached), so the ring waits for token 1: 10 us, not
// the whole timeout.
TEST_F(PolicyTest, WaitNeverWaitsForACancelledReservationsToken) {
  queue.set_model(DelayModel::fixed(10us));
  make({.capacity = 64, .policy = ExhaustionPolicy::Wait, .wait_timeout = 1ms});
  take(24);
  queue.submit();
  const Reservation b = take(24);
  take(8);
  ring->cancel(b.id);
  const Reservation d = take(32);
  EXPECT_EQ(d.offset, 0u);
  EXPECT_EQ(clock.now(), 10us);
  EXPECT_EQ(events.with("wait-begin").front(), "wait-begin InFlight token 1 needed 40");
}

// split_min_chunk larger than the whole ring: the minimum chunk is the largest chunk a region
// can hold, so a payload larger than the ring still streams through in ring-sized chunks.
TEST_F(PolicyTest, AMinimumChunkAboveTheRingIsClampedToIt) {
  make({.capacity = 64,
        .policy = ExhaustionPolicy::Split,
        .wait_timeout = 1ms,
        .split_min_chunk = 1000});
  const Reservation chunk = take(200);
  EXPECT_EQ(chunk.size, 64u);
  EXPECT_EQ(clock.now(), Duration{0});
}

// Region 0 (64 B) empty, grown region 1 (256 B) busy with B:  r0 [- *64]  r1 [B*200 - *56]
// split_min_chunk 128: a 300-byte Split request may not take region 0 (64 < 128) nor the 56 bytes
// of region 1; it waits for B (10 us) and then takes 256 bytes of region 1.
TEST_F(PolicyTest, SplitKeepsTheMinimumChunkInAnEmptySmallRegion) {
  queue.set_model(DelayModel::stalled());
  make({.capacity = 64, .cap = 320, .wait_timeout = 1ms, .grow_step = 256, .split_min_chunk = 128});
  take(64);
  queue.submit();
  ReserveRequest grow = req(200);
  grow.policy = ExhaustionPolicy::Grow;
  ASSERT_EQ(take(grow).region, 1u);
  queue.submit();
  queue.complete_through(1);
  poll();
  ASSERT_EQ(ring->free_bytes(), 64u);
  queue.release(DelayModel::fixed(10us));  // B completes 10 us from now
  ReserveRequest split = req(300);
  split.policy = ExhaustionPolicy::Split;
  const Reservation chunk = take(split);
  EXPECT_EQ(chunk.region, 1u);
  EXPECT_EQ(chunk.size, 256u);
  EXPECT_EQ(clock.now(), 10us);
}

// cap 192: region 0 and two idle grown regions of 64 hold the whole cap. A 128-byte request
// fits none of them; the idle regions are released (before trim_after) to make room for it.
TEST_F(PolicyTest, GrowReleasesIdleRegionsWhenTheCapNeedsTheirBytes) {
  make({.capacity = 64,
        .cap = 192,
        .policy = ExhaustionPolicy::Grow,
        .grow_step = 64,
        .trim_after = 1h});
  take(64);
  take(64);
  take(64);
  queue.submit();
  poll();
  ASSERT_EQ(ring->held_bytes(), 192u);
  ASSERT_EQ(ring->stats().trims, 0u);
  const Reservation big = take(128);
  EXPECT_EQ(allocator.size(big.region), 128u);
  EXPECT_EQ(ring->stats().trims, 2u);
  EXPECT_EQ(ring->held_bytes(), 192u);
}

// fallback_cap 32 and a full ring: a 64-byte request is above the fallback cap but the ring
// itself can take it once bytes retire — WouldBlock (Cap), not TooLarge.
TEST_F(PolicyTest, FallbackAboveTheFallbackCapWaitsWhenTheRingCanHoldIt) {
  make({.capacity = 64, .cap = 160, .policy = ExhaustionPolicy::Fallback, .fallback_cap = 32});
  take(64);
  auto r = reserve(req(64));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, UploadError::WouldBlock);
  EXPECT_EQ(r.error().cause, BlockCause::Cap);
}

}  // namespace
}  // namespace staging::test
