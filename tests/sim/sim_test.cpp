// staging-sim's own parts, tested without the command line: the parsers (sizes, durations, delay
// models, upload traces), the simulated queue (stalls, copy bandwidth, the planted fault), the
// byte checks, and the simulator's promises — deterministic for a seed, zero violations on every
// built-in workload and policy, and a planted early completion caught and named.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "byte_check.hpp"
#include "compare.hpp"
#include "reports.hpp"
#include "sim_queue.hpp"
#include "simulator.hpp"
#include "trace_replay.hpp"
#include "units.hpp"
#include "workloads.hpp"

namespace staging::sim {
namespace {

using namespace std::chrono_literals;

TEST(Units, ParsesByteCountsWithBinaryAndDecimalSuffixes) {
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("64KiB"), 64u << 10);
  EXPECT_EQ(parse_bytes("64K"), 64u << 10);
  EXPECT_EQ(parse_bytes("32MiB"), uint64_t{32} << 20);
  EXPECT_EQ(parse_bytes("1.5MiB"), uint64_t{3} << 19);
  EXPECT_EQ(parse_bytes("2GB"), uint64_t{2000000000});
  EXPECT_EQ(parse_bytes("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_bytes("18446744073709551616"));  // overflows
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("MiB"));
  EXPECT_FALSE(parse_bytes("12 parsecs"));
  EXPECT_FALSE(parse_bytes("-4"));
}

TEST(Units, ParsesDurationsOnlyWithAUnit) {
  EXPECT_EQ(parse_duration("2ms"), 2ms);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("250us"), 250us);
  EXPECT_EQ(parse_duration("16.667ms"), 16667us);
  EXPECT_EQ(parse_duration("7ns"), 7ns);
  EXPECT_FALSE(parse_duration("100"));  // no unit
  EXPECT_FALSE(parse_duration("1h"));
  EXPECT_FALSE(parse_duration("1e30s"));
}

TEST(Units, FormatsForPeople) {
  EXPECT_EQ(format_bytes(17), "17 B");
  EXPECT_EQ(format_bytes(32u << 20), "32 MiB");
  EXPECT_EQ(format_bytes(3u << 19), "1.50 MiB");
  EXPECT_EQ(format_duration(0ms), "0 s");
  EXPECT_EQ(format_duration(12300us), "12.3 ms");
  EXPECT_EQ(format_count(1234567), "1,234,567");
}

TEST(DelaySpec, ParsesEveryModelAndNamesTheMistake) {
  std::string error;
  auto fixed = parse_delay("fixed:2ms", 1, &error);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->model.kind, testing::DelayModel::Kind::Fixed);
  EXPECT_EQ(fixed->model.base, 2ms);
  auto random = parse_delay("random:1ms:6ms", 9, &error);
  ASSERT_TRUE(random);
  EXPECT_EQ(random->model.seed, 9u);
  EXPECT_EQ(random->text, "random:1ms:6ms");
  auto bursty = parse_delay("bursty:1ms:30ms:8", 1, &error);
  ASSERT_TRUE(bursty);
  EXPECT_EQ(bursty->model.burst, 8u);
  EXPECT_TRUE(parse_delay("stalled", 1, &error));
  EXPECT_FALSE(parse_delay("random:6ms:1ms", 1, &error));
  EXPECT_NE(error.find("LO <= HI"), std::string::npos);
  EXPECT_FALSE(parse_delay("gaussian:1ms", 1, &error));
  EXPECT_NE(error.find("fixed, random, bursty, stalled"), std::string::npos);
}

TEST(TraceReplay, CsvWithHeaderCommentsAndOptionalColumns) {
  const char* text =
      "# captured from a test\n"
      "time_us,size,alignment,kind,frame,granularity\n"
      "0,65536,256,constants,0,1\n"
      "\n"
      "1500.5,4096,,vertices,,\n"
      "20,1048576,512,texture,1,4096\n";
  auto w = parse_trace(text, "t.csv");
  ASSERT_TRUE(w) << w.error();
  ASSERT_EQ(w->uploads.size(), 3u);
  // Sorted by time: the texture at 20 us comes before the upload at 1500.5 us.
  EXPECT_EQ(w->uploads[1].time, 20us);
  EXPECT_EQ(w->uploads[1].granularity, 4096u);
  EXPECT_EQ(w->uploads[2].time, Duration{1500500});
  EXPECT_EQ(w->uploads[2].alignment, 1u);
  EXPECT_EQ(w->uploads[2].frame, -1);
  EXPECT_EQ(w->kinds[w->uploads[2].kind], "vertices");
}

TEST(TraceReplay, CsvErrorsNameTheLine) {
  auto bad = parse_trace("time_us,size\n0,100\n5,0\n", "t.csv");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("t.csv:3:"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("size"), std::string::npos);
  auto column = parse_trace("time_us,size,colour\n", "t.csv");
  ASSERT_FALSE(column);
  EXPECT_NE(column.error().find("unknown column 'colour'"), std::string::npos);
  auto no_time = parse_trace("size\n5\n", "t.csv");
  ASSERT_FALSE(no_time);
  auto empty = parse_trace("time_us,size\n", "t.csv");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().find("no uploads"), std::string::npos);
}

TEST(TraceReplay, JsonObjectWithStallsOrBareArray) {
  auto w = parse_trace(
      R"({"uploads": [{"time_us": 10, "size": 64, "alignment": 4, "kind": "a", "frame": 2},
                      {"time_ms": 1, "size": 8, "frame": null}],
          "stalls": [{"at_us": 500, "for_us": 250}]})",
      "t.json");
  ASSERT_TRUE(w) << w.error();
  ASSERT_EQ(w->uploads.size(), 2u);
  EXPECT_EQ(w->uploads[0].frame, 2);
  EXPECT_EQ(w->uploads[1].time, 1ms);
  EXPECT_EQ(w->uploads[1].frame, -1);
  ASSERT_EQ(w->stalls.size(), 1u);
  EXPECT_EQ(w->stalls[0].length, 250us);
  auto bare = parse_trace(R"([{"time_us": 0, "size": 1}])", "t.json");
  ASSERT_TRUE(bare) << bare.error();
  auto bad = parse_trace(R"([{"time_us": 0, "size": -1}])", "t.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("upload 0"), std::string::npos);
  auto typo = parse_trace(R"([{"time_us": 0, "sise": 1}])", "t.json");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().find("unknown key 'sise'"), std::string::npos);
}

TEST(SimQueue, StallWindowsHoldCompletionsAndTheClockStopsAtTheirEdges) {
  testing::FakeClock clock;
  SimQueue q(clock, testing::DelayModel::fixed(10us), {{20us, 100us}}, 0, false);
  const TimelineValue a = q.submit(0);  // due at 10us
  clock.advance_to(15us);
  const TimelineValue b = q.submit(0);  // due at 25us, but the queue stalls at 20us
  EXPECT_EQ(q.wait_truth(a, 1ms), a);   // done at 10us already: no time passes
  EXPECT_EQ(clock.now(), 15us);
  EXPECT_EQ(q.next_event(), 20us);      // the stall starts before b is due
  EXPECT_EQ(q.wait_truth(b, 50us), a);  // stalled: times out
  EXPECT_EQ(clock.now(), 65us);
  EXPECT_TRUE(q.can_complete(b));      // a release is ahead
  EXPECT_EQ(q.wait_truth(b, 1ms), b);  // released at 120us, then 10us more
  EXPECT_EQ(clock.now(), 130us);
  EXPECT_EQ(q.submissions()[1].completes, 130us);
}

TEST(SimQueue, TheCopyEngineAddsBytesOverBandwidthOneSubmissionAtATime) {
  testing::FakeClock clock;
  SimQueue q(clock, testing::DelayModel::fixed(10us), {}, uint64_t{1} << 30, false);  // 1 GiB/s
  const TimelineValue a = q.submit(uint64_t{1} << 20);  // 1 MiB: ~977 us of copying
  const TimelineValue b = q.submit(1024);               // waits for the engine
  EXPECT_EQ(q.wait_truth(a, 10ms), a);
  EXPECT_EQ(clock.now(), Duration{976562});
  EXPECT_EQ(q.wait_truth(b, 10ms), b);
  EXPECT_EQ(clock.now(), Duration{976562 + 953});
}

TEST(SimQueue, EarlyCompletionFaultLiesToTheRingOnly) {
  testing::FakeClock clock;
  SimQueue q(clock, testing::DelayModel::fixed(10us), {}, 0, true);
  EXPECT_EQ(q.completed(), 0u);  // nothing submitted: nothing to lie about
  q.submit(0);
  EXPECT_EQ(q.completed(), 1u);  // the lie
  EXPECT_EQ(q.truth_completed(), 0u);
}

TEST(ByteCheck, FindsAnOverwriteAndNothingElse) {
  std::vector<std::byte> memory(64 * 1024);
  ByteCheck check;
  const auto resolve = [&](uint32_t) { return memory.data(); };
  check.add(1, 5, 0, 100, 20000, memory.data());  // stamps at 100, 4196, ..., and the last 8
  check.add(2, 6, 0, 30000, 7, memory.data());    // smaller than one stamp
  EXPECT_TRUE(check.verify_through(4, resolve).empty());  // not complete yet: not checked
  memory[100 + 8192 + 3] = std::byte{0x42};               // a neighbour writes into #1
  const std::vector<std::string> bad = check.verify_through(6, resolve);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("reservation #1"), std::string::npos);
  EXPECT_NE(bad[0].find("byte 8292"), std::string::npos);
  EXPECT_EQ(check.checked(), 2u);
  EXPECT_EQ(check.corrupted(), 1u);
}

// Every built-in workload under every compared policy: no violation, the cap holds, the ring's
// stats agree with its events, every upload accounted for.
TEST(Simulator, EveryWorkloadAndPolicyRunsClean) {
  SimConfig base;
  base.duration = 3s;
  for (std::string_view name : workload_names()) {
    const Workload w = *make_workload(name, 7, base.duration);
    for (const auto& [strategy, policy] : compared_policies()) {
      SimConfig c = base;
      c.strategy = strategy;
      c.policy = policy;
      auto r = simulate(c, w);
      ASSERT_TRUE(r) << r.error();
      SCOPED_TRACE(std::string(name) + " " + std::string(to_string(strategy)) + "/" +
                   std::string(policy_name(policy)));
      EXPECT_EQ(r->invariant_violations(), 0u)
          << (r->violations.empty() ? "" : r->violations.front().message);
      EXPECT_TRUE(r->stat_mismatches.empty())
          << (r->stat_mismatches.empty() ? "" : r->stat_mismatches.front());
      EXPECT_LE(r->peak_held, r->cap);
      EXPECT_EQ(r->uploads, w.uploads.size());
      EXPECT_EQ(r->stamps_corrupted, 0u);
      EXPECT_TRUE(r->drained);
    }
  }
}

TEST(Simulator, DeterministicForASeed) {
  SimConfig c;
  c.duration = 2s;
  c.policy = ExhaustionPolicy::Split;
  const auto json_of = [&](uint64_t seed) {
    c.seed = seed;
    const Workload w = *make_workload("mixed", seed, c.duration);
    return result_json(*simulate(c, w)).dump();
  };
  EXPECT_EQ(json_of(3), json_of(3));
  EXPECT_NE(json_of(3), json_of(4));
}

TEST(Simulator, CountsEachCauseAndTheRingAgrees) {
  // sizes-edge under Defer: probes larger than the ring are refused for good (Cap), probes just
  // larger than the free run are refused for now (InFlight), and nothing waits.
  SimConfig c;
  c.duration = 2s;
  c.policy = ExhaustionPolicy::Defer;
  auto r = simulate(c, *make_workload("sizes-edge", 1, c.duration));
  ASSERT_TRUE(r);
  EXPECT_GT(r->would_block_causes[BlockCause::InFlight], 0u);
  EXPECT_GT(r->direct_causes[BlockCause::Cap], 0u);
  EXPECT_EQ(r->waits, 0u);
  ASSERT_TRUE(r->byte_stats);
  EXPECT_EQ(r->would_block_causes.total(), r->byte_stats->would_blocks);
  EXPECT_EQ(r->byte_stats->cap_refusals, r->cap_refusals);
}

TEST(Simulator, AStalledQueueTimesOutNamingTheTokenAndRecovers) {
  SimConfig c;
  c.duration = 4s;
  c.policy = ExhaustionPolicy::Wait;
  auto r = simulate(c, *make_workload("stalled-queue", 1, c.duration));
  ASSERT_TRUE(r);
  EXPECT_GT(r->timeouts, 0u);
  EXPECT_EQ(r->timeouts, r->timeout_causes[BlockCause::InFlight]);
  EXPECT_LE(r->wait_longest, c.wait_timeout);  // bounded: never a hang
  EXPECT_TRUE(r->drained);                     // recovered once the queue resumed
  EXPECT_EQ(r->direct, 0u);
}

TEST(Simulator, APlantedEarlyCompletionIsCaughtAndNamed) {
  for (Strategy strategy : {Strategy::Byte, Strategy::Slot}) {
    SimConfig c;
    c.duration = 2s;
    c.strategy = strategy;
    c.fault = Fault::EarlyCompletion;
    auto r = simulate(c, *make_workload("chunk-stream", 1, c.duration));
    ASSERT_TRUE(r);
    ASSERT_GT(r->invariant_violations(), 0u);
    EXPECT_GT(r->violations_by_invariant[static_cast<int>(Invariant::I3_ReclaimAfterCompletion)],
              0u);
    EXPECT_EQ(r->violations.front().message.rfind("I3 violated: reservation #", 0), 0u)
        << r->violations.front().message;
  }
}

TEST(Simulator, RefusesAPolicyTheSlotRingDoesNotHave) {
  SimConfig c;
  c.strategy = Strategy::Slot;
  c.policy = ExhaustionPolicy::Split;
  auto r = simulate(c, *make_workload("frames-steady", 1, 1s));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("does not support"), std::string::npos);
}

}  // namespace
}  // namespace staging::sim
