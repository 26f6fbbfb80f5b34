// SharedFrame, WriterGate and PlacementLog: the multi-writer frame protocol, one behaviour per
// test, mostly on one thread (the concurrent properties are in shared_frame_property_test.cpp
// and shared_frame_stress_test.cpp).
//
// Sketch notation: the frame's memory, one character per 16 bytes; letters are placements.
//   [ A A B - - - ]   A at 0 (32 bytes), B at 32, cursor 48
#include "staging/detail/core/shared_frame.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace staging {
namespace {

using namespace std::chrono_literals;

struct Dst {
  uint32_t buffer = 0;
  uint64_t offset = 0;
};
using Frame = SharedFrame<Dst>;

// --- WriterGate ----------------------------------------------------------------------------

TEST(WriterGate, StartsClosedAndOpensForWriters) {
  WriterGate gate;
  EXPECT_TRUE(gate.sealed());
  EXPECT_TRUE(gate.drained());
  EXPECT_FALSE(gate.enter());
  gate.open();
  EXPECT_FALSE(gate.sealed());
  EXPECT_TRUE(gate.enter());
  EXPECT_TRUE(gate.enter());
  EXPECT_EQ(gate.writers(), 2u);
}

TEST(WriterGate, SealWithNoWriterDrainsAtOnce) {
  WriterGate gate;
  gate.open();
  EXPECT_EQ(gate.seal(), 0u);
  EXPECT_TRUE(gate.drained());
  EXPECT_FALSE(gate.enter());
}

TEST(WriterGate, TheLastWriterAfterTheSealIsTheOneTold) {
  WriterGate gate;
  gate.open();
  ASSERT_TRUE(gate.enter());
  ASSERT_TRUE(gate.enter());
  EXPECT_FALSE(gate.leave());  // not sealed yet: nobody is told
  ASSERT_TRUE(gate.enter());
  EXPECT_EQ(gate.seal(), 2u);
  EXPECT_FALSE(gate.enter());  // sealed: refused, and the count is unchanged
  EXPECT_EQ(gate.writers(), 2u);
  EXPECT_FALSE(gate.leave());
  EXPECT_FALSE(gate.drained());
  EXPECT_TRUE(gate.leave());  // the last one
  EXPECT_TRUE(gate.drained());
}

TEST(WriterGate, WaitDrainedIsBoundedAndWokenByTheLastWriter) {
  WriterGate gate;
  gate.open();
  ASSERT_TRUE(gate.enter());
  ASSERT_EQ(gate.seal(), 1u);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(gate.wait_drained(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  std::thread writer([&] {
    std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(gate.leave());
  });
  // "Forever" (Duration::max()) is a year on the deadline, never an overflowed one that has
  // passed at once: the last writer's leave() is what ends this wait.
  EXPECT_TRUE(gate.wait_drained(Duration::max()));
  writer.join();
}

TEST(WriterGate, WaitOnAnOpenGateAnswersAtOnce) {
  WriterGate gate;
  gate.open();
  EXPECT_FALSE(gate.wait_drained(1h));
}

TEST(WriterGateDeath, OpeningWithWritersInsideAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // also under ThreadSanitizer's thread
  WriterGate gate;
  gate.open();
  ASSERT_TRUE(gate.enter());
  (void)gate.seal();
  EXPECT_DEATH(gate.open(), "writers inside");
}

// --- PlacementLog --------------------------------------------------------------------------

TEST(PlacementLog, IndicesNeverMoveAcrossSegments) {
  PlacementLog<uint64_t> log(16);
  // Segments of 16, 32, 64, ... entries: 1000 entries span 6 segments.
  for (uint64_t i = 0; i < 1000; ++i) {
    const auto index = log.claim();
    ASSERT_EQ(index, i);
    *log.at(i) = i * 7 + 1;
  }
  for (uint64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(*log.find(i), i * 7 + 1) << i;
  EXPECT_EQ(log.size(), 1000u);
}

TEST(PlacementLog, ResetKeepsTheStorage) {
  PlacementLog<uint64_t> log(16);
  ASSERT_TRUE(log.claim(100));
  uint64_t* const p = log.at(99);
  log.reset();
  EXPECT_EQ(log.size(), 0u);
  ASSERT_EQ(log.claim(100), 0u);
  EXPECT_EQ(log.at(99), p);  // the same segment, not a new allocation
}

TEST(PlacementLog, RefusesBeyondItsMaximum) {
  PlacementLog<uint64_t> log(16, 10);
  EXPECT_EQ(log.claim(8), 0u);
  EXPECT_FALSE(log.claim(3));  // 8 + 3 > 10
  EXPECT_FALSE(log.claim(1));  // full until reset
  EXPECT_EQ(log.size(), 10u);
}

TEST(PlacementLog, SegmentsNeverReachedAreNotFound) {
  PlacementLog<uint64_t> log(16);
  ASSERT_EQ(log.claim(1000), 0u);
  EXPECT_EQ(log.find(999), nullptr);
  ASSERT_NE(log.at(999), nullptr);
  EXPECT_NE(log.find(999), nullptr);
}

// for_each visits what find() finds, in index order, and stops at n: segments of 16, 32, 64, 128
// entries, of which the second and the fourth were never created (find() answers null there):
//
//   index:   0 ..15 | 16 ..47 | 48 ..111 | 112 ..239
//   segment: created | missing | created  | missing     n = 100: visits 0..15 and 48..99
TEST(PlacementLog, ForEachVisitsTheEntriesFindFindsInOrder) {
  PlacementLog<uint64_t> log(16);
  ASSERT_EQ(log.claim(240), 0u);
  for (uint64_t i : {uint64_t{0}, uint64_t{48}}) {
    for (uint64_t j = i; j < i + (i == 0 ? 16 : 64); ++j)
      *log.at(j) = j * 3 + 5;
  }
  for (const uint64_t n :
       {uint64_t{0}, uint64_t{10}, uint64_t{16}, uint64_t{100}, uint64_t{240}, uint64_t{5000}}) {
    std::vector<uint64_t> expected, visited;
    for (uint64_t i = 0; i < std::min<uint64_t>(n, 240); ++i) {
      if (const uint64_t* e = log.find(i)) expected.push_back(*e);
    }
    log.for_each(n, [&](const uint64_t& e) { visited.push_back(e); });
    EXPECT_EQ(visited, expected) << "n = " << n;
  }
  std::vector<uint64_t> some;
  log.for_each(100, [&](const uint64_t& e) { some.push_back(e); });
  ASSERT_EQ(some.size(), 16u + 52u);
  EXPECT_EQ(some.front(), 5u);
  EXPECT_EQ(some[16], 48u * 3 + 5);
  EXPECT_EQ(some.back(), 99u * 3 + 5);
}

// --- merge_sorted_runs (the order of a frame's block records) ---------------------------------

// Runs that already follow each other (a frame laid out in lanes) are left where they are; runs
// that interleave (writers sharing one cursor) are merged; either way the result is sorted.
TEST(MergeSortedRuns, RunsInOrderStayAndInterleavedRunsMerge) {
  const auto less = [](int a, int b) { return a < b; };
  std::vector<int> scratch;
  std::vector<int> in_order{1, 4, 9, 10, 12, 20, 21, 30};
  std::vector<std::size_t> runs{0, 3, 5};  // [1 4 9] [10 12] [20 21 30]
  detail::merge_sorted_runs(in_order, runs, scratch, less);
  EXPECT_EQ(in_order, (std::vector<int>{1, 4, 9, 10, 12, 20, 21, 30}));
  EXPECT_EQ(runs, (std::vector<std::size_t>{0, 8}));
  EXPECT_TRUE(scratch.empty()) << "nothing moved, no scratch needed";

  std::vector<int> interleaved{2, 7, 11, 1, 8, 9, 3, 4, 40};
  runs = {0, 3, 6};  // [2 7 11] [1 8 9] [3 4 40]
  detail::merge_sorted_runs(interleaved, runs, scratch, less);
  EXPECT_EQ(interleaved, (std::vector<int>{1, 2, 3, 4, 7, 8, 9, 11, 40}));
  EXPECT_EQ(runs, (std::vector<std::size_t>{0, 9}));

  // Equal items at a boundary count as in order; one run and no run are left alone.
  std::vector<int> ties{1, 5, 5, 6};
  runs = {0, 2};
  detail::merge_sorted_runs(ties, runs, scratch, less);
  EXPECT_EQ(ties, (std::vector<int>{1, 5, 5, 6}));
  std::vector<int> none;
  runs.clear();
  detail::merge_sorted_runs(none, runs, scratch, less);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(runs, (std::vector<std::size_t>{0}));

  // Empty runs (first, between, last) are allowed, in order or not.
  std::vector<int> gaps{3, 4, 8, 9};
  runs = {0, 0, 2, 2, 4};  // [] [3 4] [] [8 9] []
  detail::merge_sorted_runs(gaps, runs, scratch, less);
  EXPECT_EQ(gaps, (std::vector<int>{3, 4, 8, 9}));
  EXPECT_EQ(runs, (std::vector<std::size_t>{0, 4}));
  std::vector<int> crossed{8, 9, 3, 4};
  runs = {0, 2, 2, 4};  // [8 9] [] [3 4] []
  detail::merge_sorted_runs(crossed, runs, scratch, less);
  EXPECT_EQ(crossed, (std::vector<int>{3, 4, 8, 9}));
  EXPECT_EQ(runs, (std::vector<std::size_t>{0, 4}));
}

// --- SharedFrame ---------------------------------------------------------------------------

// The placements of a collected frame, as a vector (the view is a forward range).
std::vector<Frame::Placement> placements_of(const Frame::Placements& placed) {
  return {placed.begin(), placed.end()};
}

struct SharedFrameTest : ::testing::Test {
  std::vector<std::byte> memory = std::vector<std::byte>(1024);
  Frame frame;
  void open(uint64_t base = 0) { frame.open(memory, base); }
};

TEST_F(SharedFrameTest, PlacesInOrderAtTheRequestedAlignment) {
  // [ A A B B B B B - ... ]  A: 20 bytes at 0, B: 64 bytes at 32 (alignment 32), C at 96
  open();
  auto w = frame.join().value();
  auto a = w.place(20, 4, {1, 0}).value();
  auto b = w.place(64, 32, {2, 0}).value();
  auto c = w.place(1, 1, {3, 0}).value();
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 32u);
  EXPECT_EQ(c.offset, 96u);
  EXPECT_EQ(a.bytes.data(), memory.data());
  EXPECT_EQ(b.bytes.data(), memory.data() + 32);
  EXPECT_EQ(b.bytes.size(), 64u);
  EXPECT_FALSE(w.leave());  // the frame is open: leaving drains nothing
}

TEST_F(SharedFrameTest, OffsetsAreThoseOfTheMemoryIncludingItsBase) {
  // The frame is bytes [1000, 2024) of a staging buffer: alignment applies to buffer offsets.
  open(1000);
  auto w = frame.join().value();
  const auto p = w.place(8, 64, {}).value();
  EXPECT_EQ(p.offset, 1024u);
  EXPECT_EQ(p.bytes.data(), memory.data() + 24);
  const auto q = w.place(8, 3, {}).value();  // any alignment, not only powers of two
  EXPECT_EQ(q.offset, 1032u);
  const auto r = w.place(1, 7, {}).value();
  EXPECT_EQ(r.offset, 1043u);
}

TEST_F(SharedFrameTest, RefusesWhatDoesNotFitAndPlacesWhatStillDoes) {
  open();
  auto w = frame.join().value();
  ASSERT_TRUE(w.place(1000, 1, {}));
  const auto full = w.place(100, 1, {});
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().kind, SharedPlaceErrorKind::DoesNotFit);
  EXPECT_EQ(full.error().needed, 100u);
  EXPECT_EQ(full.error().free, 24u);
  const auto padded = w.place(16, 16, {});  // 1000 -> 1008 + 16 = 1024: fits exactly
  EXPECT_TRUE(padded);
  const auto none = w.place(1, 1, {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().free, 0u);
}

TEST_F(SharedFrameTest, ZeroSizeAndOverflowAreErrors) {
  open();
  auto w = frame.join().value();
  EXPECT_EQ(w.place(0, 1, {}).error().kind, SharedPlaceErrorKind::ZeroSize);
  EXPECT_EQ(w.place(UINT64_MAX, 2, {}).error().kind, SharedPlaceErrorKind::Overflow);
  EXPECT_EQ(w.place(UINT64_MAX - 10, 1, {}).error().kind, SharedPlaceErrorKind::DoesNotFit);
  w.leave();
  EXPECT_TRUE(frame.finish(DrainMode::Report).value().empty());
}

TEST_F(SharedFrameTest, ErrorsAndOddAlignmentsInsideABlockAreHandledAsAtItsStart) {
  // [ A - ... ]  A: 5 bytes at 0; the writer's block has room, so later calls take the quick
  // test first: each caller error and each alignment it does not handle must still get the
  // checked answer, in the same block (nothing stranded, nothing placed by an error).
  open();
  auto w = frame.join().value();
  ASSERT_EQ(w.place(5, 1, {1, 0}).value().offset, 0u);
  EXPECT_EQ(w.place(0, 1, {}).error().kind, SharedPlaceErrorKind::ZeroSize);
  EXPECT_EQ(w.place(0, 0, {}).error().kind, SharedPlaceErrorKind::ZeroSize);
  EXPECT_EQ(w.place(UINT64_MAX, 2, {}).error().kind, SharedPlaceErrorKind::Overflow);
  EXPECT_EQ(w.place(UINT64_MAX, 1, {}).error().kind, SharedPlaceErrorKind::DoesNotFit);
  EXPECT_EQ(w.place(1, uint64_t{1} << 63, {}).error().kind, SharedPlaceErrorKind::DoesNotFit);
  const auto b = w.place(3, 0, {2, 0}).value();  // alignment 0 is 1: right after A
  EXPECT_EQ(b.offset, 5u);
  EXPECT_EQ(b.bytes.data(), memory.data() + 5);
  const auto c = w.place(4, 6, {3, 0}).value();  // not a power of two: 8 -> 12
  EXPECT_EQ(c.offset, 12u);
  const auto d = w.place(4, 4, {4, 0}).value();  // a power of two again: 16
  EXPECT_EQ(d.offset, 16u);
  EXPECT_EQ(d.bytes.data(), memory.data() + 16);
  EXPECT_FALSE(w.leave());  // the frame is open: leaving drains nothing
  const auto placed = frame.finish(DrainMode::Report).value();
  ASSERT_EQ(placed.size(), 4u);
  std::vector<uint64_t> offsets;
  for (const auto& p : placed)
    offsets.push_back(p.offset);
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 5, 12, 16}));
  EXPECT_EQ(frame.stranded_bytes(), 0u);
  EXPECT_EQ(frame.used_bytes(), 20u);
}

TEST_F(SharedFrameTest, AJoinAfterTheSealIsRefused) {
  EXPECT_EQ(frame.join().error(), JoinError::Sealed);  // never opened
  open();
  auto early = frame.join();
  ASSERT_TRUE(early);
  EXPECT_EQ(frame.seal(), 1u);
  EXPECT_EQ(frame.join().error(), JoinError::Sealed);
  // The writer inside may still place until it leaves.
  EXPECT_TRUE(early->place(8, 1, {}));
  EXPECT_TRUE(early->leave());
  EXPECT_EQ(frame.finish(DrainMode::Report).value().size(), 1u);
}

TEST_F(SharedFrameTest, ReportModeNamesTheWritersAndLeavesTheFrameSealed) {
  open();
  auto a = frame.join().value();
  auto b = frame.join().value();
  ASSERT_TRUE(a.place(16, 1, {1, 0}));
  const auto report = frame.finish(DrainMode::Report);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().writers, 2u);
  EXPECT_FALSE(frame.join());
  a.leave();
  EXPECT_EQ(frame.finish(DrainMode::Report).error().writers, 1u);
  ASSERT_TRUE(b.place(16, 1, {2, 0}));
  EXPECT_TRUE(b.leave());  // drained the sealed frame
  const auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0].payload.buffer, 1u);
  EXPECT_EQ(placed[1].payload.buffer, 2u);
}

TEST_F(SharedFrameTest, WaitModeWaitsForAWriterStillWriting) {
  open();
  auto w = frame.join().value();
  std::thread writer([&w] {
    auto p = w.place(256, 1, {7, 0}).value();
    std::this_thread::sleep_for(10ms);  // still writing when the owner finishes
    std::memset(p.bytes.data(), 0x5A, p.bytes.size());
    w.leave();
  });
  // Wait until the placement is made, so the owner finishes while the writer is writing.
  while (frame.used_bytes() == 0)
    std::this_thread::yield();
  const auto placed = frame.finish(DrainMode::Wait, 10s);
  writer.join();
  ASSERT_TRUE(placed);
  ASSERT_EQ(placed->size(), 1u);
  for (std::size_t i = 0; i < 256; ++i)
    ASSERT_EQ(memory[i], std::byte{0x5A}) << i;  // the whole write, never half of it
}

TEST_F(SharedFrameTest, WaitModeGivesUpAfterItsTimeout) {
  open();
  auto w = frame.join().value();
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = frame.finish(DrainMode::Wait, 15ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().writers, 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 15ms);
  w.leave();
  EXPECT_TRUE(frame.finish(DrainMode::Wait, 0ms));
}

TEST_F(SharedFrameTest, WritersLeaveWhenDestroyedOrMovedOver) {
  open();
  {
    auto w = frame.join().value();
    ASSERT_TRUE(w.place(4, 1, {}));
    EXPECT_EQ(frame.writers(), 1u);
    Frame::Writer moved = std::move(w);
    EXPECT_FALSE(w.joined());
    EXPECT_EQ(frame.writers(), 1u);
    // The moved-from writer places nothing (its block and record went with the move).
    EXPECT_EQ(w.place(4, 1, {}).error().kind, SharedPlaceErrorKind::Inactive);
    Frame::Writer assigned;
    assigned = std::move(moved);
    EXPECT_EQ(moved.place(4, 1, {}).error().kind, SharedPlaceErrorKind::Inactive);
    EXPECT_EQ(assigned.place(4, 1, {}).value().offset, 4u);
    moved = std::move(assigned);
    moved = frame.join().value();  // the first membership leaves
    EXPECT_EQ(frame.writers(), 1u);
  }
  EXPECT_EQ(frame.writers(), 0u);
  EXPECT_EQ(frame.finish(DrainMode::Report).value().size(), 2u);
}

TEST_F(SharedFrameTest, DiscardedPlacementsAreNotCollected) {
  open();
  auto w = frame.join().value();
  const auto a = w.place(8, 1, {1, 0}).value();
  const auto b = w.place(8, 1, {2, 0}).value();
  w.discard(a);
  (void)b;
  w.leave();
  const auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].payload.buffer, 2u);
  EXPECT_EQ(placed[0].offset, 8u);  // a's bytes stay a gap
}

TEST_F(SharedFrameTest, CollectedPlacementsAreSortedByOffsetWhateverTheRecordOrder) {
  // Two writers interleave with one-upload blocks: A's record is claimed first, bytes alternate.
  //   [ A0 B0 A1 B1 ]  -> collected A0 B0 A1 B1 (offset order), not A0 A1 B0 B1 (record order)
  open();
  auto a = frame.join({.block_bytes = 0}).value();
  auto b = frame.join({.block_bytes = 0}).value();
  ASSERT_TRUE(a.place(16, 1, {0xA0, 0}));
  ASSERT_TRUE(b.place(16, 1, {0xB0, 0}));
  ASSERT_TRUE(a.place(16, 1, {0xA1, 0}));
  ASSERT_TRUE(b.place(16, 1, {0xB1, 0}));
  a.leave();
  b.leave();
  const auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 4u);
  const uint32_t expected[] = {0xA0, 0xB0, 0xA1, 0xB1};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(placed[i].payload.buffer, expected[i]);
    EXPECT_EQ(placed[i].offset, 16 * i);
  }
  EXPECT_EQ(frame.stranded_bytes(), 0u);  // one-upload blocks leave nothing unused
}

TEST_F(SharedFrameTest, WritersPlaceInsideTheirOwnBlocks) {
  // A takes a block of 256 for its first placement; B's block starts after it (192 bytes: near
  // the frame's end blocks shrink); A's later
  // placements stay inside its block, touching no shared state.
  //   [ A0 A1 . . . . . . . . . . . . . . | B0 . . . ]
  open();
  auto a = frame.join({.block_bytes = 256}).value();
  auto b = frame.join({.block_bytes = 256}).value();
  EXPECT_EQ(a.place(16, 1, {}).value().offset, 0u);
  EXPECT_EQ(b.place(16, 1, {}).value().offset, 256u);
  EXPECT_EQ(a.place(16, 1, {}).value().offset, 16u);
  EXPECT_EQ(frame.used_bytes(), 448u);  // B's block: a quarter of the 768 bytes left (2 writers)
  a.leave();                            // not at the cursor: its rest is stranded, counted
  EXPECT_EQ(frame.stranded_bytes(), 224u);
  b.leave();  // at the cursor: its rest is given back
  EXPECT_EQ(frame.used_bytes(), 272u);
  EXPECT_EQ(frame.stranded_bytes(), 224u);
  EXPECT_EQ(frame.finish(DrainMode::Report).value().size(), 3u);
}

TEST_F(SharedFrameTest, ABlockGrowsInPlaceWhileNobodyTookBytesAfterIt) {
  // One writer alone: its blocks follow each other, so the layout is the one placing every
  // upload from the cursor gives, and nothing is stranded.
  //   [ A0 A1 A2 A3 ... ]  blocks of 64: [0,64) grown to [0,128) ...
  open();
  auto a = frame.join({.block_bytes = 64}).value();
  for (uint64_t i = 0; i < 20; ++i)
    EXPECT_EQ(a.place(24, 8, {}).value().offset, 24 * i);
  a.leave();
  EXPECT_EQ(frame.used_bytes(), 480u);
  EXPECT_EQ(frame.stranded_bytes(), 0u);
  const auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 20u);
  for (uint64_t i = 0; i < 20; ++i)
    EXPECT_EQ(placed[i].offset, 24 * i);
}

TEST_F(SharedFrameTest, AFreshBlockStrandsTheRestOfTheOldOne) {
  // A's block [0,64) is full enough that 48 bytes do not fit; B took [64,128): A's next block
  // starts at 128 and the 24 bytes A left in its first block are stranded.
  //   [ A0 A0 A0 . | B0 . . . | A1 A1 A1 ... ]   (one character per 16 bytes)
  open();
  auto a = frame.join({.block_bytes = 64}).value();
  auto b = frame.join({.block_bytes = 64}).value();
  ASSERT_EQ(a.place(40, 1, {}).value().offset, 0u);
  ASSERT_EQ(b.place(16, 1, {}).value().offset, 64u);
  EXPECT_EQ(a.place(48, 1, {}).value().offset, 128u);
  a.leave();
  b.leave();
  EXPECT_EQ(frame.stranded_bytes(), 24u + 48u);  // A's first rest, and B's rest (not last)
  EXPECT_EQ(frame.used_bytes(), 176u);           // A's second rest was given back
}

TEST_F(SharedFrameTest, BlocksShrinkNearTheFramesEnd) {
  // Two writers inside a 1024-byte frame with 4 KiB blocks: each block is at most a quarter of
  // the free bytes (free / (2 x writers)), so neither holds back the other's room.
  open();
  auto a = frame.join({.block_bytes = 4096}).value();
  auto b = frame.join({.block_bytes = 4096}).value();
  EXPECT_EQ(a.place(100, 1, {}).value().offset, 0u);
  EXPECT_EQ(frame.used_bytes(), 256u);
  EXPECT_EQ(b.place(100, 1, {}).value().offset, 256u);
  EXPECT_EQ(frame.used_bytes(), 448u);  // 256 + 768 / 4
  EXPECT_EQ(a.place(900, 1, {}).error().kind, SharedPlaceErrorKind::DoesNotFit);
  EXPECT_EQ(a.place(500, 1, {}).value().offset, 448u);
}

TEST_F(SharedFrameTest, AnUploadLargerThanABlockTakesABlockOfItsSize) {
  open();
  auto a = frame.join({.block_bytes = 64}).value();
  EXPECT_EQ(a.place(300, 1, {}).value().offset, 0u);
  EXPECT_EQ(frame.used_bytes(), 300u);
  EXPECT_EQ(a.place(724, 1, {}).value().offset, 300u);  // grown to the frame's end
  EXPECT_EQ(a.place(1, 1, {}).error().kind, SharedPlaceErrorKind::DoesNotFit);
}

TEST_F(SharedFrameTest, TooManyPlacementsIsAnError) {
  // The cap counts whole records: 1 asked -> one record of kBlockEntries placements.
  SharedFrame<Dst> small({.first_log_segment = 16, .max_placements = 1});
  small.open(memory);
  auto w = small.join({.block_bytes = 0}).value();
  for (uint32_t i = 0; i < Frame::kBlockEntries; ++i)
    ASSERT_TRUE(w.place(1, 1, {}));
  EXPECT_EQ(w.place(1, 1, {}).error().kind, SharedPlaceErrorKind::TooManyPlacements);
  w.leave();
  EXPECT_EQ(small.finish(DrainMode::Report).value().size(), Frame::kBlockEntries);
}

TEST_F(SharedFrameTest, ARecordNeverSpansTwoBlocks) {
  // A fills [0,32) of its block, B takes [32,64); A's next placement is in a fresh block and a
  // fresh record, so the records sort into A0 B0 A1 even though A claimed its record first.
  open();
  auto a = frame.join({.block_bytes = 32}).value();
  auto b = frame.join({.block_bytes = 32}).value();
  ASSERT_EQ(a.place(32, 1, {0xA0, 0}).value().offset, 0u);
  ASSERT_EQ(b.place(32, 1, {0xB0, 0}).value().offset, 32u);
  ASSERT_EQ(a.place(32, 1, {0xA1, 0}).value().offset, 64u);
  a.leave();
  b.leave();
  const auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 3u);
  EXPECT_EQ(placed[0].payload.buffer, 0xA0u);
  EXPECT_EQ(placed[1].payload.buffer, 0xB0u);
  EXPECT_EQ(placed[2].payload.buffer, 0xA1u);
}

// --- Joined placements (a payload that declares joins()) --------------------------------

// A destination byte range: `buffer`, from `offset`; an upload continuing the previous one in the
// same buffer is joined to it.
struct Run {
  uint32_t buffer = 0;
  uint64_t offset = 0;
  static bool joins(const Run& first, uint64_t first_size, const Run& next) noexcept {
    return next.buffer == first.buffer && next.offset == first.offset + first_size;
  }
};
using JoiningFrame = SharedFrame<Run>;
static_assert(JoiningFrame::kJoins && !Frame::kJoins);

struct JoiningFrameTest : ::testing::Test {
  std::vector<std::byte> memory = std::vector<std::byte>(1024);
  JoiningFrame frame;
  void open() { frame.open(memory); }
  std::vector<JoiningFrame::Placement> finish() {
    const auto placed = frame.finish(DrainMode::Report).value();
    return {placed.begin(), placed.end()};
  }
};

TEST_F(JoiningFrameTest, UploadsBackToBackInStagingAndDestinationAreOnePlacement) {
  // Staging (16 bytes a character) and what each placement copies:
  //   [ a a a a a a a a b c d ]     (c: 8 B, then 8 B of padding, d: 8 B)   a: 8 uploads of 16 B
  //   into buffer 1 at 0, 16, .. 112: one
  //                                 b: buffer 1 at 500 (does not continue a)
  //                                 c: buffer 2 at 516 (continues b's offsets, not its buffer)
  //                                 d: buffer 2 at 524, 8 B, continues c's bytes in the buffer
  //                                    but lies after 8 B of padding: not joined
  open();
  auto w = frame.join().value();
  for (uint64_t i = 0; i < 8; ++i) {
    const auto p = w.place(16, 16, {1, 16 * i}).value();
    EXPECT_EQ(p.offset, 16 * i);
    EXPECT_EQ(p.bytes.size(), 16u);
  }
  ASSERT_TRUE(w.place(16, 16, {1, 500}));
  ASSERT_TRUE(w.place(8, 16, {2, 516}));
  ASSERT_TRUE(w.place(8, 16, {2, 524}));  // continues c in the buffer, but 8 bytes of padding
  w.leave();
  const auto placed = finish();
  ASSERT_EQ(placed.size(), 4u);
  const uint64_t offsets[] = {0, 128, 144, 160}, sizes[] = {128, 16, 8, 8};
  const uint32_t buffers[] = {1, 1, 2, 2};
  const uint64_t at[] = {0, 500, 516, 524};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(placed[i].offset, offsets[i]) << i;
    EXPECT_EQ(placed[i].size, sizes[i]) << i;
    EXPECT_EQ(placed[i].payload.buffer, buffers[i]) << i;
    EXPECT_EQ(placed[i].payload.offset, at[i]) << i;
  }
}

TEST_F(JoiningFrameTest, AJoinFollowsABlockGrownInPlaceButNeverAFreshOne) {
  // A's block of 32 grows in place while nobody took bytes after it: its 4 uploads are one
  // placement. Then B takes bytes after it, and A's next upload, which continues A's in the
  // destination, lands in a fresh block after B's: a placement of its own (the records of A and B
  // must not interleave).
  //   [ A A A A | B B | A ]
  open();
  auto a = frame.join({.block_bytes = 32}).value();
  for (uint64_t i = 0; i < 4; ++i)
    ASSERT_EQ(a.place(16, 1, {1, 16 * i}).value().offset, 16 * i);
  auto b = frame.join({.block_bytes = 32}).value();
  ASSERT_EQ(b.place(32, 1, {2, 0}).value().offset, 64u);  // after A's grown block [0, 64)
  ASSERT_EQ(a.place(16, 1, {1, 64}).value().offset, 96u);
  a.leave();
  b.leave();
  const auto placed = finish();
  ASSERT_EQ(placed.size(), 3u);
  EXPECT_EQ(placed[0].offset, 0u);
  EXPECT_EQ(placed[0].size, 64u);
  EXPECT_EQ(placed[1].payload.buffer, 2u);
  EXPECT_EQ(placed[2].offset, 96u);
  EXPECT_EQ(placed[2].payload.offset, 64u);
}

TEST_F(JoiningFrameTest, OnlyTheLastUploadOfAJoinedPlacementCanBeDiscarded) {
  // a, b, c joined into one placement [0, 48). b and a cannot be withdrawn (c was joined after
  // them); c can, once. d then lands after c's bytes, which stay a gap, so it is not joined:
  //   [ a b - d ]   placements: [0, 32) -> buffer 1 at 0; [48, 64) -> buffer 1 at 48
  open();
  auto w = frame.join().value();
  const auto a = w.place(16, 1, {1, 0}).value();
  const auto b = w.place(16, 1, {1, 16}).value();
  const auto c = w.place(16, 1, {1, 32}).value();
  EXPECT_EQ(a.entry, b.entry);
  EXPECT_EQ(b.entry, c.entry);
  EXPECT_FALSE(w.discard(b));
  EXPECT_FALSE(w.discard(a));
  EXPECT_TRUE(w.discard(c));
  EXPECT_FALSE(w.discard(c));  // already withdrawn
  const auto d = w.place(16, 1, {1, 48}).value();
  EXPECT_EQ(d.offset, 48u);
  EXPECT_NE(d.entry, c.entry);
  w.leave();
  const auto placed = finish();
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0].offset, 0u);
  EXPECT_EQ(placed[0].size, 32u);
  EXPECT_EQ(placed[1].offset, 48u);
  EXPECT_EQ(placed[1].payload.offset, 48u);
  EXPECT_FALSE(w.discard(d));  // the writer has left
}

TEST_F(JoiningFrameTest, AWholePlacementDiscardedIsNotCollected) {
  open();
  auto w = frame.join().value();
  const auto a = w.place(16, 1, {1, 0}).value();
  ASSERT_TRUE(w.place(16, 1, {2, 0}));
  EXPECT_TRUE(w.discard(a));
  w.leave();
  const auto placed = finish();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].payload.buffer, 2u);
}

TEST_F(JoiningFrameTest, ThousandsOfUploadsOfOneWriterAreOnePlacement) {
  // 1,000 uploads of 1 byte, back to back: far more than a record holds, but joined they need one
  // entry, so no second record is claimed.
  open();
  auto w = frame.join().value();
  for (uint64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(w.place(1, 1, {7, 1000 + i}).value().offset, i);
  w.leave();
  const auto placed = finish();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].size, 1000u);
  EXPECT_EQ(placed[0].payload.offset, 1000u);
}

TEST_F(SharedFrameTest, ReopeningForgetsThePreviousFrame) {
  // The placements are forgotten; the 100 bytes this thread took are remembered as its lane:
  //   frame 2: [ lane: 128 | shared ... ]   the lane counts as used, its unused end as stranded
  open();
  {
    auto w = frame.join().value();
    ASSERT_TRUE(w.place(100, 1, {}));
  }
  ASSERT_EQ(frame.finish(DrainMode::Report).value().size(), 1u);
  open();
  EXPECT_EQ(frame.used_bytes(), 128u);
  EXPECT_EQ(frame.stranded_bytes(), 128u);  // a snapshot: nothing placed in the lane yet
  {
    auto w = frame.join().value();
    EXPECT_EQ(w.place(8, 1, {}).value().offset, 0u);
  }
  EXPECT_EQ(frame.finish(DrainMode::Report).value().size(), 1u);
  EXPECT_EQ(frame.used_bytes(), 128u);
  EXPECT_EQ(frame.stranded_bytes(), 120u);
}

TEST_F(SharedFrameTest, RecordsOfThePreviousFrameAreNotCollected) {
  // The log keeps its records from frame to frame: a record claimed again starts empty.
  open();
  {
    auto w = frame.join().value();
    for (int i = 0; i < 16; ++i)
      ASSERT_TRUE(w.place(8, 1, {}));
  }
  ASSERT_EQ(frame.finish(DrainMode::Report).value().size(), 16u);
  open();
  {
    auto w = frame.join().value();
    ASSERT_TRUE(w.place(8, 1, {9, 0}));
  }
  const auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].payload.buffer, 9u);
}

TEST_F(SharedFrameTest, ASecondWriterOnOneThreadLeavesItsRecordsOutOfOrderAndCollectSortsThem) {
  // Both writers record into this thread's stripe, in the order records are claimed:
  //   stripe: [ A.0 @0 | B.0 @4096 | A.1 @1024 ]      (A's 65th upload opens A's second record)
  //   bytes:  [ A.0 ......| A.1 ..|....][ B.0 .|...... ]
  //           0           1024          4096
  std::vector<std::byte> big(64 << 10);
  frame.open(big);
  auto a = frame.join({.block_bytes = 4096}).value();
  auto b = frame.join({.block_bytes = 4096}).value();
  ASSERT_TRUE(a.place(16, 16, {0, 0}));
  ASSERT_TRUE(b.place(16, 16, {1000, 0}));
  for (uint32_t i = 1; i < 70; ++i)
    ASSERT_TRUE(a.place(16, 16, {i, 0}));
  a.leave();
  b.leave();
  const auto view = frame.finish(DrainMode::Report).value();
  const auto placed = placements_of(view);
  ASSERT_EQ(view.size(), 71u);
  ASSERT_EQ(placed.size(), 71u);
  for (uint32_t i = 0; i < 70; ++i) {
    EXPECT_EQ(placed[i].payload.buffer, i);
    EXPECT_EQ(placed[i].offset, 16u * i);
  }
  EXPECT_EQ(placed[70].payload.buffer, 1000u);
  EXPECT_EQ(placed[70].offset, 4096u);
}

TEST_F(SharedFrameTest, RecordsClaimedInBatchesInterleaveInOneStripeAndTheUnusedAreSkipped) {
  // A writer claims its records in batches of 1, 2, 4, 8, 8, ... (one atomic operation each).
  // Two writers on one thread share its stripe, so their batches interleave in it:
  //   stripe: [ A | B | A A | B B | A A A A | B B B B | ... ]   records, in claim order
  // and a batch's records a writer leaves unused stay null. Frame 1: 700 uploads each, 11
  // records each (1 + 2 + 4 + 8 claimed: 4 unused each), every 5th of B's discarded. Frame 2:
  // A alone, 100 uploads (2 records of the 3 claimed): the third index held a record of frame 1
  // and must not be collected.
  std::vector<std::byte> big(64 << 10);
  frame.open(big);
  auto a = frame.join({.block_bytes = 1024}).value();
  auto b = frame.join({.block_bytes = 1024}).value();
  uint32_t discarded = 0;
  for (uint32_t i = 0; i < 700; ++i) {
    ASSERT_TRUE(a.place(16, 16, {0xA, i}));
    const auto placed = b.place(16, 16, {0xB, i});
    ASSERT_TRUE(placed);
    if (i % 5 == 0) {
      b.discard(*placed);
      ++discarded;
    }
  }
  a.leave();
  b.leave();
  auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 1400u - discarded);
  std::vector<uint32_t> next(2, 0);  // each writer's uploads come out in the order it placed them
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (i > 0) {
      ASSERT_LT(placed[i - 1].offset, placed[i].offset) << "at " << i;
    }
    const uint32_t w = placed[i].payload.buffer == 0xA ? 0 : 1;
    if (w == 1 && next[w] % 5 == 0) ++next[w];  // discarded
    EXPECT_EQ(placed[i].payload.offset, next[w]++) << "at " << i;
  }
  EXPECT_EQ(next[0], 700u);

  frame.open(big);
  {
    auto w = frame.join({.block_bytes = 1024}).value();
    for (uint32_t i = 0; i < 100; ++i)
      ASSERT_TRUE(w.place(16, 16, {0xC, i}));
  }
  placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 100u);
  for (uint32_t i = 0; i < 100; ++i)
    EXPECT_EQ(placed[i].payload.offset, i);
}

TEST_F(SharedFrameTest, WritersOfManyThreadsAreMergedIntoOneOffsetOrder) {
  // Five writers, each made on its own thread (so each records into its own stripe), then placed
  // round-robin with 64-byte blocks: their blocks interleave, and collect() merges five runs.
  //   bytes: [ w0 | w1 | w2 | w3 | w4 | w0 | w1 | ... ]   one block (four uploads) each turn
  constexpr uint32_t kWriters = 5;
  constexpr uint32_t kPerWriter = 200;                         // several records per writer
  std::vector<std::byte> big(2 * kWriters * kPerWriter * 16);  // blocks never shrink
  frame.open(big);
  std::vector<Frame::Writer> writers(kWriters);
  for (auto& w : writers)
    std::thread([&] { w = frame.join({.block_bytes = 64}).value(); }).join();
  std::vector<uint32_t> placed_by(kWriters, 0);
  for (uint32_t turn = 0; turn < kPerWriter / 4; ++turn) {
    for (uint32_t w = 0; w < kWriters; ++w) {
      for (int i = 0; i < 4; ++i) {
        const auto placed = writers[w].place(16, 16, {w, placed_by[w]++});
        ASSERT_TRUE(placed);
        if (w == 2 && placed_by[w] % 7 == 0) writers[w].discard(*placed);
      }
    }
  }
  for (auto& w : writers)
    w.leave();
  const auto view = frame.finish(DrainMode::Report).value();
  const auto placed = placements_of(view);
  const std::size_t discarded = kPerWriter / 7;
  ASSERT_EQ(view.size(), kWriters * kPerWriter - discarded);
  ASSERT_EQ(placed.size(), view.size());
  for (std::size_t i = 1; i < placed.size(); ++i)
    ASSERT_LT(placed[i - 1].offset, placed[i].offset) << "at " << i;
  std::vector<uint32_t> seen(kWriters, 0);
  for (const auto& p : placed) {
    EXPECT_EQ(p.offset / 64 % kWriters, p.payload.buffer) << "block of another writer";
    ++seen[p.payload.buffer];
  }
  EXPECT_EQ(seen, (std::vector<uint32_t>{200, 200, 200 - discarded, 200, 200}));
}

// --- SharedFrame: thread-affine lanes --------------------------------------------------------

// A thread of its own that runs what it is given, one call at a time, until destroyed: the same
// thread, and so the same stripe (detail::this_thread_stripe()), frame after frame.
class FixedThread {
 public:
  FixedThread() {
    run([this] { stripe = detail::this_thread_stripe() % Frame::kStripes; });
  }
  FixedThread(const FixedThread&) = delete;
  FixedThread& operator=(const FixedThread&) = delete;
  ~FixedThread() {
    {
      const std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  // Runs `task` on this thread and waits for it.
  void run(const std::function<void()>& task) {
    std::unique_lock lock(mutex_);
    task_ = &task;
    wake_.notify_all();
    wake_.wait(lock, [&] { return task_ == nullptr; });
  }
  uint32_t stripe = 0;  // this thread's stripe of a frame (its lane)

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return task_ != nullptr || quit_; });
      if (task_ == nullptr) return;
      (*task_)();
      task_ = nullptr;
      wake_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void()>* task_ = nullptr;
  bool quit_ = false;
  std::thread thread_{[this] { loop(); }};  // last: starts once the rest is built
};

// Threads placing uploads into one frame, frame after frame: thread t's upload i has payload
// {t, i}, `sizes[t][i]` bytes at alignment 16, and random bytes (new ones every frame).
struct LaneRig {
  static constexpr uint64_t kBase = 4096;
  explicit LaneRig(uint32_t thread_count, std::size_t bytes, SharedFrameConfig config = {})
      : memory(bytes), frame(config), threads(thread_count), sizes(thread_count) {}

  // Where each thread's uploads went, by upload.
  using Offsets = std::vector<std::vector<uint64_t>>;

  // Runs one frame on the first `bytes` of the memory: every thread joins, then the threads place
  // their uploads in `order` — round-robin, one upload each in turn (`interleave`), or each
  // thread all of its uploads before the next — write them and leave, and the frame is finished.
  // Checks that nothing was refused and that the placements come in offset order with their
  // bytes intact; returns the offsets.
  Offsets run_frame(std::size_t bytes, const std::vector<uint32_t>& order, bool interleave = true,
                    uint64_t block_bytes = 1024) {
    frame.open(std::span(memory).first(bytes), kBase);
    const auto n = static_cast<uint32_t>(threads.size());
    std::vector<Frame::Writer> writers(n);
    std::vector<std::vector<std::byte>> data(n);
    Offsets offsets(n);
    for (uint32_t t = 0; t < n; ++t)
      threads[t].run([&] { writers[t] = frame.join({.block_bytes = block_bytes}).value(); });
    std::size_t most = 0;
    for (const auto& s : sizes)
      most = std::max(most, s.size());
    std::vector<std::pair<uint32_t, std::size_t>> schedule;  // (thread, upload), in order
    for (std::size_t i = 0; i < most; ++i) {
      for (const uint32_t t : order) {
        if (interleave && i < sizes[t].size()) schedule.emplace_back(t, i);
        if (!interleave && i == 0) {
          for (std::size_t k = 0; k < sizes[t].size(); ++k)
            schedule.emplace_back(t, k);
        }
      }
    }
    for (const auto& [thread, upload] : schedule) {
      const uint32_t t = thread;
      const std::size_t i = upload;
      threads[t].run([&] {
        const auto p = writers[t].place(sizes[t][i], 16, {t, i});
        ASSERT_TRUE(p) << "thread " << t << " upload " << i << " refused";
        std::vector<std::byte> random(p->bytes.size());
        for (auto& b : random)
          b = static_cast<std::byte>(rng());
        std::memcpy(p->bytes.data(), random.data(), random.size());
        data[t].insert(data[t].end(), random.begin(), random.end());
        offsets[t].push_back(p->offset);
      });
    }
    for (uint32_t t = 0; t < n; ++t)
      threads[t].run([&] { writers[t].leave(); });
    const auto placed = placements_of(frame.finish(DrainMode::Report).value());
    std::vector<std::size_t> read(n, 0);
    uint64_t end = kBase;
    for (const auto& p : placed) {
      EXPECT_GE(p.offset, end) << "out of offset order, or overlapping";
      end = p.offset + p.size;
      const uint32_t t = p.payload.buffer;
      EXPECT_EQ(p.offset, offsets[t][p.payload.offset]);
      EXPECT_EQ(std::memcmp(memory.data() + (p.offset - kBase), data[t].data() + read[t], p.size),
                0)
          << "thread " << t << " upload " << p.payload.offset;
      read[t] += p.size;
    }
    for (uint32_t t = 0; t < n; ++t)
      EXPECT_EQ(read[t], data[t].size()) << "thread " << t << ": placements lost";
    return offsets;
  }

  // Gives every thread `count` uploads of random sizes: multiples of 16, from 16 to 16 * `most`.
  void random_sizes(std::size_t count, uint64_t most) {
    for (auto& s : sizes) {
      s.resize(count);
      for (auto& size : s)
        size = 16 * (1 + rng() % most);
    }
  }

  // The threads in stripe order (the order of their lanes).
  std::vector<uint32_t> by_stripe() const {
    std::vector<uint32_t> order(threads.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return threads[a].stripe < threads[b].stripe; });
    return order;
  }

  std::vector<std::byte> memory;
  Frame frame;
  std::deque<FixedThread> threads;
  std::vector<std::vector<uint64_t>> sizes;
  std::mt19937_64 rng{0x1a2e5};
};

// Distinct stripes (the numbering is per process: fewer than kStripes threads made in a row).
void expect_distinct_stripes(const LaneRig& rig) {
  for (std::size_t a = 0; a < rig.threads.size(); ++a) {
    for (std::size_t b = a + 1; b < rig.threads.size(); ++b)
      ASSERT_NE(rig.threads[a].stripe, rig.threads[b].stripe);
  }
}

// Each thread's uploads lie together in its lane, the lanes in stripe order from the base.
void expect_lanes_in_stripe_order(const LaneRig& rig, const LaneRig::Offsets& offsets) {
  uint64_t at = LaneRig::kBase;
  for (const uint32_t t : rig.by_stripe()) {
    const auto [low, high] = std::minmax_element(offsets[t].begin(), offsets[t].end());
    EXPECT_EQ(*low, at) << "thread " << t << "'s lane";
    at = *high + rig.sizes[t][static_cast<std::size_t>(high - offsets[t].begin())];
    at = (at + 63) / 64 * 64;
  }
}

// The bytes stranded at the ends of lanes that their threads filled exactly (uploads of
// multiples of 16 at alignment 16): each lane's size is rounded up to a multiple of 64.
uint64_t lane_rounding(const LaneRig& rig) {
  uint64_t rounding = 0;
  for (const auto& sizes : rig.sizes) {
    const uint64_t used = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
    rounding += (used + 63) / 64 * 64 - used;
  }
  return rounding;
}

TEST(SharedFrameLanes, ASecondFrameWithTheSameDemandGivesEachThreadTheSameOffsets) {
  // Three threads place the same uploads every frame. Frame 1 knows no demand yet: the threads
  // place one after the other, C (the highest stripe) first. Frame 2 gives each thread a lane
  // sized by what it took, in stripe order (drawn for stripes a < b < c), and the threads place
  // one upload each in turn: each fills its own lane. Frame 3, with the same demand, gives every
  // thread the same offsets, whichever thread places first:
  //   frame 1:    [ C C C C C C | B B B B | A A A A A A ]   in the order the threads came
  //   frame 2, 3: [ A A A A A A | B B B B | C C C C C C ]   lanes, each filled contiguously
  LaneRig rig(3, 64 << 10);
  expect_distinct_stripes(rig);
  rig.random_sizes(40, 12);
  std::vector<uint32_t> order = rig.by_stripe();
  std::reverse(order.begin(), order.end());
  const auto frame1 = rig.run_frame(rig.memory.size(), order, false);
  const auto frame2 = rig.run_frame(rig.memory.size(), {1, 2, 0});
  const auto frame3 = rig.run_frame(rig.memory.size(), {2, 0, 1});
  EXPECT_EQ(frame3, frame2);
  expect_lanes_in_stripe_order(rig, frame2);
  EXPECT_NE(frame1, frame2);  // the lanes changed the layout
  EXPECT_EQ(rig.frame.stranded_bytes(), lane_rounding(rig));
}

TEST(SharedFrameLanes, TheLayoutSettlesAfterAFrameOfInterleavedBlocks) {
  // Small blocks interleave in frame 1 and strand their ends, so frame 2's lanes are larger than
  // the threads need; frame 3's are exact, and frame 4 lays out exactly as frame 3.
  //   frame 1: [ A | B | A | B ... ]        blocks of 256 bytes, in the order taken
  //   frame 2: [ A A A . . | B B B . . ]     lanes sized with frame 1's stranded block ends
  //   frame 3, 4: [ A A A | B B B ]          lanes sized by frame 2: exact
  LaneRig rig(2, 64 << 10);
  expect_distinct_stripes(rig);
  rig.random_sizes(30, 20);
  (void)rig.run_frame(rig.memory.size(), {0, 1}, true, 256);
  EXPECT_GT(rig.frame.stranded_bytes(), 0u);
  (void)rig.run_frame(rig.memory.size(), {1, 0}, true, 256);
  const auto frame3 = rig.run_frame(rig.memory.size(), {0, 1}, true, 256);
  const auto frame4 = rig.run_frame(rig.memory.size(), {1, 0}, true, 256);
  EXPECT_EQ(frame4, frame3);
  expect_lanes_in_stripe_order(rig, frame4);
  EXPECT_EQ(rig.frame.stranded_bytes(), lane_rounding(rig));
}

TEST(SharedFrameLanes, AThreadThatOutgrowsItsLaneGoesOnInTheSharedRange) {
  // Frame 1: A and B take 1000 bytes each. Frame 2: lanes of 1024 each, in stripe order, then the
  // shared range. A places 11 uploads of 100: the 11th does not fit in its lane's last 24 bytes
  // and goes to the shared range's start; B places 5 and leaves 524 bytes of its lane unused.
  //   [ A0 .. A9 . | B0 .. B4 . . . . . | A10 | free ]      (lanes drawn for a < b)
  //     lane a       lane b               ^ shared range: base + 2048
  LaneRig rig(2, 8192);
  expect_distinct_stripes(rig);
  for (uint32_t t = 0; t < 2; ++t) {
    rig.threads[t].run([&] {
      if (t == 0) rig.frame.open(rig.memory, LaneRig::kBase);
      auto w = rig.frame.join().value();
      for (uint32_t i = 0; i < 10; ++i)
        ASSERT_TRUE(w.place(100, 4, {t, i}));
    });
  }
  ASSERT_EQ(rig.frame.finish(DrainMode::Report).value().size(), 20u);
  EXPECT_EQ(rig.frame.used_bytes(), 2000u);

  rig.frame.open(rig.memory, LaneRig::kBase);
  EXPECT_EQ(rig.frame.used_bytes(), 2048u);      // the lanes
  EXPECT_EQ(rig.frame.stranded_bytes(), 2048u);  // a snapshot: all of them still unused
  const uint64_t lane_a = rig.threads[0].stripe < rig.threads[1].stripe ? 0 : 1024;
  const uint64_t lane_b = 1024 - lane_a;
  std::vector<uint64_t> a, b;
  rig.threads[0].run([&] {
    auto w = rig.frame.join().value();
    for (uint32_t i = 0; i < 11; ++i)
      a.push_back(w.place(100, 4, {0, i}).value().offset - LaneRig::kBase);
  });
  rig.threads[1].run([&] {
    auto w = rig.frame.join().value();
    for (uint32_t i = 0; i < 5; ++i)
      b.push_back(w.place(100, 4, {1, i}).value().offset - LaneRig::kBase);
  });
  for (uint32_t i = 0; i < 10; ++i)
    EXPECT_EQ(a[i], lane_a + 100 * i);
  EXPECT_EQ(a[10], 2048u);
  for (uint32_t i = 0; i < 5; ++i)
    EXPECT_EQ(b[i], lane_b + 100 * i);
  const auto placed = placements_of(rig.frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 16u);
  for (std::size_t i = 1; i < placed.size(); ++i)
    EXPECT_LT(placed[i - 1].offset, placed[i].offset);
  // Exact once drained: the lanes' unused ends; A's shared block was given back (last).
  EXPECT_EQ(rig.frame.stranded_bytes(), 24u + 524u);
  EXPECT_EQ(rig.frame.used_bytes(), 2048u + 100u);
  EXPECT_LE(1600u + rig.frame.stranded_bytes(), rig.frame.used_bytes());

  // Frame 3: A's lane holds what it took in both ranges (1100 -> 1152), B's what it used (512).
  rig.frame.open(rig.memory, LaneRig::kBase);
  EXPECT_EQ(rig.frame.used_bytes(), 1152u + 512u);
  EXPECT_TRUE(rig.frame.finish(DrainMode::Report).value().empty());
}

TEST(SharedFrameLanes, AWriterTakesTheSharedRangeThenAnotherLanesUnusedEnd) {
  // Frame 1: A and B take 4 KiB each (uploads of 256: the largest asked, 271 with alignment 16).
  // Frame 2 is 8.5 KiB: two lanes of 4 KiB and a shared range of 512 bytes (room for 271). B
  // places 2 KiB and leaves; A places 5 KiB: its lane, the shared range, then the end B left
  // unused; C, a thread with no lane, takes the rest of B's lane. Nothing is refused until the
  // frame is full; nothing is stranded.
  //   [ A A A A A A A A | B B B B A C C C | A ]     (lanes drawn for a < b; 512 bytes a character)
  LaneRig rig(3, 16 << 10);
  expect_distinct_stripes(rig);
  rig.sizes = {std::vector<uint64_t>(16, 256), std::vector<uint64_t>(16, 256), {}};
  (void)rig.run_frame(rig.memory.size(), {0, 1}, false);

  Frame& frame = rig.frame;
  frame.open(std::span(rig.memory).first(8704), LaneRig::kBase);
  EXPECT_EQ(frame.used_bytes(), 8192u);  // the lanes; the shared range starts after them
  const uint64_t lane_b = rig.threads[0].stripe < rig.threads[1].stripe ? 4096 : 0;
  const auto place = [&](uint32_t t, uint32_t count, std::vector<uint64_t>& offsets) {
    rig.threads[t].run([&] {
      auto w = frame.join().value();
      for (uint32_t i = 0; i < count; ++i) {
        const auto p = w.place(256, 16, {t, i});
        ASSERT_TRUE(p) << "thread " << t << " upload " << i << ": " << to_string(p.error().kind);
        std::memset(p->bytes.data(), static_cast<int>(rig.rng() | 1), p->bytes.size());
        offsets.push_back(p->offset - LaneRig::kBase);
      }
      if (t == 2) {  // C, once the frame is full: the largest range has 0 bytes free
        const auto full = w.place(1, 1, {});
        ASSERT_FALSE(full);
        EXPECT_EQ(full.error().kind, SharedPlaceErrorKind::DoesNotFit);
        EXPECT_EQ(full.error().free, 0u);
      }
    });
  };
  std::vector<uint64_t> a, b, c;
  place(1, 8, b);
  place(0, 20, a);
  place(2, 6, c);
  const uint64_t lane_a = 4096 - lane_b;
  for (uint32_t i = 0; i < 8; ++i)
    EXPECT_EQ(b[i], lane_b + 256 * i);
  for (uint32_t i = 0; i < 16; ++i)
    EXPECT_EQ(a[i], lane_a + 256 * i);
  EXPECT_EQ(a[16], 8192u);  // the shared range
  EXPECT_EQ(a[17], 8448u);
  for (uint32_t i = 18; i < 20; ++i)
    EXPECT_EQ(a[i], lane_b + 2048 + 256 * (i - 18));  // stolen from B's lane
  for (uint32_t i = 0; i < 6; ++i)
    EXPECT_EQ(c[i], lane_b + 2560 + 256 * i);
  const auto placed = placements_of(frame.finish(DrainMode::Report).value());
  ASSERT_EQ(placed.size(), 34u);
  for (std::size_t i = 0; i < placed.size(); ++i)
    EXPECT_EQ(placed[i].offset, LaneRig::kBase + 256 * i);  // offset order, the frame full
  EXPECT_EQ(frame.stranded_bytes(), 0u);
  EXPECT_EQ(frame.used_bytes(), 8704u);
}

TEST(SharedFrameLanes, AFrameAsLargeAsTheDemandHasNoLanesAndRefusesNothing) {
  // Frame 1: A and B take 4 KiB each. Frame 2 is exactly 8 KiB: lanes would leave the shared
  // range no room for an upload of the size frame 1 asked for, so there are none; the single
  // cursor places every upload, and the frame ends full.
  LaneRig rig(2, 16 << 10);
  rig.sizes = {std::vector<uint64_t>(16, 256), std::vector<uint64_t>(16, 256)};
  (void)rig.run_frame(rig.memory.size(), {0, 1}, false);
  const auto offsets = rig.run_frame(8192, {0, 1}, true, 256);  // interleaved: the cursor's order
  EXPECT_EQ(rig.frame.used_bytes(), 8192u);
  EXPECT_EQ(rig.frame.stranded_bytes(), 0u);
  for (uint32_t t = 0; t < 2; ++t)
    EXPECT_EQ(offsets[t].size(), 16u);
}

TEST(SharedFrameLanes, AnUploadNoRangeHoldsIsRefusedOnceThenFindsRoom) {
  // Frames of 8 KiB. Frame 1: A and B take 2 KiB each, so frame 2 has two lanes of 2 KiB and a
  // shared range of 4 KiB. In frame 2, still empty, A first asks for 5000 bytes: no range holds
  // them (the single cursor would have): refused, with the largest range's 4096 free; then A and
  // B take their 2 KiB again. Frame 3 keeps room for 5000 bytes, which the lanes would not leave:
  // there are none, and the 5000 bytes go at the base (with lanes laid out again from the same
  // demand, they would be refused in every frame).
  LaneRig rig(2, 8192);
  Frame& frame = rig.frame;
  const auto small = [&](uint32_t t) {
    auto w = frame.join().value();
    for (uint32_t i = 0; i < 8; ++i)
      ASSERT_TRUE(w.place(256, 16, {t, i})) << "thread " << t << " upload " << i;
  };
  for (int f = 1; f <= 3; ++f) {
    frame.open(rig.memory, LaneRig::kBase);
    EXPECT_EQ(frame.used_bytes(), f == 2 ? 4096u : 0u) << "frame " << f;
    if (f >= 2) {
      rig.threads[0].run([&] {
        auto w = frame.join().value();
        const auto p = w.place(5000, 1, {});
        if (f == 2) {
          ASSERT_FALSE(p);
          EXPECT_EQ(p.error().kind, SharedPlaceErrorKind::DoesNotFit);
          EXPECT_EQ(p.error().free, 4096u);
        } else {
          ASSERT_TRUE(p);
          EXPECT_EQ(p->offset, LaneRig::kBase);
        }
      });
    }
    if (f <= 2) {
      rig.threads[0].run([&] { small(0); });
      rig.threads[1].run([&] { small(1); });
    }
    ASSERT_TRUE(frame.finish(DrainMode::Report));
  }
}

TEST(SharedFrameLanes, ALaneStartsAtItsWritersAlignment) {
  // A places 64 bytes at alignment 1, B four uploads of 256 at alignment 256 (a buffer copy
  // alignment some devices ask for). B's lane starts on a multiple of 256, so it holds B's four
  // uploads from its start with no padding: from frame 2 on both threads' offsets repeat, nothing
  // goes to the shared range, and the frame uses the same bytes every time.
  LaneRig rig(2, 16 << 10);
  expect_distinct_stripes(rig);
  std::vector<std::vector<uint64_t>> seen(4);
  std::vector<uint64_t> used(4);
  for (int f = 0; f < 4; ++f) {
    rig.frame.open(rig.memory, LaneRig::kBase + 64);  // a base that is not a multiple of 256
    rig.threads[0].run([&] {
      auto w = rig.frame.join().value();
      seen[f].push_back(w.place(64, 1, {0, 0}).value().offset);
    });
    rig.threads[1].run([&] {
      auto w = rig.frame.join().value();
      for (uint32_t i = 0; i < 4; ++i) {
        const uint64_t at = w.place(256, 256, {1, i}).value().offset;
        EXPECT_EQ(at % 256, 0u);
        seen[f].push_back(at);
      }
    });
    ASSERT_EQ(rig.frame.finish(DrainMode::Report).value().size(), 5u);
    used[f] = rig.frame.used_bytes();
  }
  for (int f = 2; f < 4; ++f) {
    EXPECT_EQ(seen[f], seen[1]) << "frame " << f;
    EXPECT_EQ(used[f], used[1]) << "frame " << f;
  }
  for (std::size_t i = 2; i < 5; ++i)  // B's uploads lie together in its lane
    EXPECT_EQ(seen[1][i], seen[1][i - 1] + 256) << "B's upload " << i - 1;
  // The lanes end where the last upload does (A's 64 bytes or B's 256, whichever lane is last):
  // nothing in the shared range.
  const uint64_t a_end = seen[1][0] + 64;
  const uint64_t b_end = *std::max_element(seen[1].begin() + 1, seen[1].end()) + 256;
  EXPECT_EQ(LaneRig::kBase + 64 + used[1], std::max(a_end, b_end));
}

TEST(SharedFrameLanes, NoLanesWhenTheyDoNotAllFit) {
  // Frame 1 takes 600 bytes on this thread; frame 2 is 512 bytes: no lane, the shared cursor
  // starts at the base.
  std::vector<std::byte> memory(1024);
  Frame frame;
  frame.open(memory);
  {
    auto w = frame.join().value();
    ASSERT_TRUE(w.place(600, 1, {}));
  }
  ASSERT_TRUE(frame.finish(DrainMode::Report));
  frame.open(std::span(memory).first(512));
  EXPECT_EQ(frame.used_bytes(), 0u);
  EXPECT_EQ(frame.stranded_bytes(), 0u);
  {
    auto w = frame.join().value();
    EXPECT_EQ(w.place(512, 1, {}).value().offset, 0u);
  }
  ASSERT_TRUE(frame.finish(DrainMode::Report));
  frame.open(memory);  // 512 taken in frame 2: a lane of 512 again
  EXPECT_EQ(frame.used_bytes(), 512u);
}

TEST(SharedFrameLanes, TurnedOffTheFrameKeepsTheSharedCursorLayout) {
  // The same two frames as ASecondFrameWithTheSameDemandGivesEachThreadTheSameOffsets, lanes
  // off: each frame starts at the base, and the blocks lie in the order the threads took them.
  //   frame 1: [ A | B | A | B ... ]    frame 2 (B first): [ B | A | B | A ... ]
  LaneRig rig(2, 64 << 10, {.lanes = false});
  expect_distinct_stripes(rig);
  rig.sizes = {std::vector<uint64_t>(12, 256), std::vector<uint64_t>(12, 256)};
  const auto frame1 = rig.run_frame(rig.memory.size(), {0, 1});
  rig.frame.open(rig.memory, LaneRig::kBase);
  EXPECT_EQ(rig.frame.used_bytes(), 0u);
  ASSERT_TRUE(rig.frame.finish(DrainMode::Report));
  const auto frame2 = rig.run_frame(rig.memory.size(), {1, 0});
  for (uint32_t i = 0; i < 12; ++i) {
    // 4 uploads a block, blocks alternating: A's first in frame 1, B's in frame 2.
    const uint64_t block = i / 4 * 2048 + i % 4 * 256 + LaneRig::kBase;
    EXPECT_EQ(frame1[0][i], block);
    EXPECT_EQ(frame1[1][i], block + 1024);
    EXPECT_EQ(frame2[1][i], block);
    EXPECT_EQ(frame2[0][i], block + 1024);
  }
  EXPECT_EQ(rig.frame.stranded_bytes(), 0u);
}

TEST_F(SharedFrameTest, WritersOfOneUploadABlockSizeNoLaneAndStealOnlyWhenTheSharedRangeIsFull) {
  // Frame 1: a writer with blocks takes 512 bytes, one with block_bytes 0 takes 300. Frame 2:
  // this thread's lane is 512 bytes (the second writer's bytes are not counted); a writer with
  // block_bytes 0 places from the shared cursor, then, the shared range full, in the lane.
  //   [ lane: E . . . . | shared: D D D D ]      (128 bytes a character)
  open();
  {
    auto blocks = frame.join().value();
    auto exact = frame.join({.block_bytes = 0}).value();
    ASSERT_TRUE(blocks.place(512, 1, {}));
    ASSERT_TRUE(exact.place(300, 1, {}));
  }
  ASSERT_TRUE(frame.finish(DrainMode::Report));
  open();
  EXPECT_EQ(frame.used_bytes(), 512u);
  auto exact = frame.join({.block_bytes = 0}).value();
  EXPECT_EQ(exact.place(512, 1, {1, 0}).value().offset, 512u);  // the shared range
  EXPECT_EQ(exact.place(100, 1, {2, 0}).value().offset, 0u);    // stolen: the lane
  const auto refused = exact.place(500, 1, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().free, 412u);  // the lane's: the largest range's free bytes
  EXPECT_EQ(refused.error().needed, 500u);
  exact.leave();
  EXPECT_EQ(frame.finish(DrainMode::Report).value().size(), 2u);
  EXPECT_EQ(frame.stranded_bytes(), 412u);
  open();
  EXPECT_EQ(frame.used_bytes(), 0u);  // frame 2 had no writer with blocks: no lane
}

TEST(SharedFrameDeath, ReopeningWithAWriterInsideAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<std::byte> memory(64);
  Frame frame;
  frame.open(memory);
  auto w = frame.join().value();
  EXPECT_DEATH(frame.open(memory), "writers inside");
  w.leave();
}

}  // namespace
}  // namespace staging
