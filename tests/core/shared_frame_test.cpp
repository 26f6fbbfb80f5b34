// SharedFrame, WriterGate and PlacementLog: the multi-writer frame protocol, one behaviour per
// test, mostly on one thread (the concurrent properties are in shared_frame_property_test.cpp
// and shared_frame_stress_test.cpp).
//
// Sketch notation: the frame's memory, one character per 16 bytes; letters are placements.
//   [ A A B - - - ]   A at 0 (32 bytes), B at 32, cursor 48
#include "staging/detail/core/shared_frame.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
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
    moved = frame.join().value();  // the first membership leaves
    EXPECT_EQ(frame.writers(), 1u);
  }
  EXPECT_EQ(frame.writers(), 0u);
  EXPECT_EQ(frame.finish(DrainMode::Report).value().size(), 1u);
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

TEST_F(SharedFrameTest, ReopeningForgetsThePreviousFrame) {
  open();
  {
    auto w = frame.join().value();
    ASSERT_TRUE(w.place(100, 1, {}));
  }
  ASSERT_EQ(frame.finish(DrainMode::Report).value().size(), 1u);
  open();
  EXPECT_EQ(frame.used_bytes(), 0u);
  EXPECT_EQ(frame.stranded_bytes(), 0u);
  {
    auto w = frame.join().value();
    EXPECT_EQ(w.place(8, 1, {}).value().offset, 0u);
  }
  EXPECT_EQ(frame.finish(DrainMode::Report).value().size(), 1u);
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
