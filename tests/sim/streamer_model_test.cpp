// The streamer model (streamer_model.hpp): frame uploads on the graphics queue's byte ring,
// streaming uploads through the core's StreamScheduler on a transfer queue of their own, fed by
// producers in virtual time. Uploads larger than the streamer's ring arrive whole (every byte
// compared), a queue at its cap refuses and the producer tries again, runs are deterministic, and
// --compare's table gains the streamer's row.
#include "streamer_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "compare.hpp"
#include "workloads.hpp"

namespace staging::sim {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t MiB = 1024 * 1024;

// Frames of 16 x 64 KiB at 60 Hz, and `streamed` uploads of `size` bytes arriving `gap` apart.
Workload mixed(int streamed, uint64_t size, Duration gap) {
  Workload w;
  w.name = "test";
  const uint32_t frame = w.kind_id("buffer");
  const uint32_t chunk = w.kind_id("chunk");
  for (int f = 0; f < 60; ++f) {
    for (int i = 0; i < 16; ++i)
      w.uploads.push_back(Upload{Duration{f * 16'666'667LL + i * 1000}, 64 * 1024, 256, frame, f});
  }
  for (int s = 0; s < streamed; ++s)
    w.uploads.push_back(Upload{gap * s + Duration{500}, size, 16, chunk, -1, 256});
  std::stable_sort(w.uploads.begin(), w.uploads.end(),
                   [](const Upload& a, const Upload& b) { return a.time < b.time; });
  return w;
}

TEST(StreamerModel, UploadsLargerThanTheRingArriveWhole) {
  SimConfig c;
  c.capacity = 8 * MiB;  // 4 MiB each for the frame ring and the streamer
  auto run = simulate_streamer(c, mixed(6, 13 * MiB + 5, 100ms));
  ASSERT_TRUE(run) << run.error();
  const StreamerFigures& f = run->streaming;
  EXPECT_EQ(f.uploads, 6u);
  EXPECT_EQ(f.larger_than_ring, 6u);
  EXPECT_EQ(f.bytes, 6 * (13 * MiB + 5));
  EXPECT_EQ(f.byte_mismatches, 0u);
  EXPECT_EQ(f.failed, 0u);
  EXPECT_GT(f.pieces, 6u * 4);  // each in several pieces
  EXPECT_LE(f.peak_held_bytes, 4 * MiB);
  EXPECT_GT(f.complete_max, Duration{0});
  EXPECT_LE(f.complete_p99, f.complete_max);
  // The frame uploads went through the graphics ring, apart.
  EXPECT_EQ(run->graphics.uploads, 60u * 16);
  EXPECT_EQ(run->graphics.invariant_violations(), 0u);
}

TEST(StreamerModel, AQueueAtItsCapRefusesAndTheProducersTryAgain) {
  SimConfig c;
  c.capacity = 2 * MiB;  // a 1 MiB streamer ring: its queue holds 4 MiB not yet cut
  // 40 uploads of 1 MiB at once, from 4 producers.
  auto run = simulate_streamer(c, mixed(40, MiB, Duration{0}), 4);
  ASSERT_TRUE(run) << run.error();
  const StreamerFigures& f = run->streaming;
  EXPECT_GT(f.queue_refusals, 0u);
  EXPECT_GT(f.producer_wait_total, Duration{0});
  EXPECT_EQ(f.uploads, 40u);
  EXPECT_EQ(f.failed, 0u);
  EXPECT_EQ(f.byte_mismatches, 0u);
}

TEST(StreamerModel, DeterministicForASeed) {
  SimConfig c;
  c.capacity = 8 * MiB;
  const Workload w = *make_workload("mixed", 3, 2s);
  auto a = simulate_streamer(c, w);
  auto b = simulate_streamer(c, w);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->streaming.complete_max, b->streaming.complete_max);
  EXPECT_EQ(a->streaming.batches, b->streaming.batches);
  EXPECT_EQ(a->streaming.bytes, b->streaming.bytes);
  EXPECT_EQ(a->streaming.byte_mismatches, 0u);
  EXPECT_EQ(a->streaming.failed, 0u);
}

TEST(StreamerModel, ThePolicyTableHasTheStreamersRow) {
  SimConfig c;
  const std::vector<Workload> ws = {*make_workload("chunk-stream", 1, 1s)};
  auto rows = run_compare(c, ws, {});
  ASSERT_TRUE(rows) << rows.error();
  const auto streamer = std::find_if(rows->begin(), rows->end(), [](const auto& r) {
    return r["strategy"] == "streamer" && r["policy"] == "wait";
  });
  ASSERT_NE(streamer, rows->end());
  EXPECT_EQ((*streamer)["invariant_violations"].template get<uint64_t>(), 0u);
  EXPECT_GT((*streamer)["streamer"]["uploads"].template get<uint64_t>(), 0u);
  EXPECT_NE(compare_table(*rows, true).find("streamer/wait"), std::string::npos);
}

}  // namespace
}  // namespace staging::sim
