// staging-sim's own parts, tested without the command line: the simulated queue (stalls, copy
// bandwidth, the planted fault), the byte checks, and the simulator's promises — deterministic for
// a seed, zero violations on every built-in workload and policy, and a planted early completion
// caught and named.
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

TEST(SimQueue, ACopyPastTheClockLimitIsClampedAndReported) {
  testing::FakeClock clock;
  SimQueue q(clock, testing::DelayModel::fixed(10us), {}, 1, false);  // 1 byte per second
  q.submit(1000);                                                     // 1000 s: fine
  EXPECT_FALSE(q.past_clock_limit());
  q.submit(UINT64_MAX);  // 585 billion years: would overflow the clock
  EXPECT_TRUE(q.past_clock_limit());
  EXPECT_EQ(q.submissions()[1].completes, kClockLimit);
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
      SCOPED_TRACE(std::string(name) + " " + label(strategy, policy));
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

// Two uploads 10^16 ns (115 days) apart: the poll ticks in between change nothing and are
// skipped, so the run takes a handful of polls, not 6 x 10^11.
TEST(Simulator, TimeMovesByEventsNotTicks) {
  Workload w;
  w.kinds = {"upload"};
  w.uploads = {Upload{Duration{0}, 4096}, Upload{Duration{10000000000000000}, 4096}};
  for (Strategy strategy : {Strategy::Byte, Strategy::Slot}) {
    SimConfig c;
    c.strategy = strategy;
    c.poll_interval = 1ns;
    const auto start = std::chrono::steady_clock::now();
    auto r = simulate(c, w);
    ASSERT_TRUE(r) << r.error();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_GE(r->end, Duration{10000000000000000});
    if (r->byte_stats) {
      EXPECT_LT(r->byte_stats->polls, 100u);
    }
  }
}

// A caller that retries every nanosecond while the queue takes milliseconds: the run's work
// bound stops it with an error that names the upload, instead of running for hours.
TEST(Simulator, ARetryStormHitsTheWorkBound) {
  SimConfig c;
  c.policy = ExhaustionPolicy::Defer;
  c.poll_interval = 1ns;
  c.duration = 1s;
  auto r = simulate(c, *make_workload("sizes-edge", 1, c.duration));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rfind("upload ", 0), 0u) << r.error();
  EXPECT_NE(r.error().find("steps"), std::string::npos) << r.error();
}

TEST(Simulator, RefusesWhatCannotFinishInBoundedTime) {
  Workload w;
  w.kinds = {"upload"};
  w.uploads = {Upload{Duration{0}, uint64_t{1} << 60}};
  SimConfig c;
  c.policy = ExhaustionPolicy::Split;  // 2^35 chunks through a 32 MiB ring
  auto split = simulate(c, w);
  ASSERT_FALSE(split);
  EXPECT_NE(split.error().find("passes under split"), std::string::npos) << split.error();
  c.policy = ExhaustionPolicy::Wait;  // routed around the ring: a copy of 2.1 years
  auto direct = simulate(c, w);
  ASSERT_TRUE(direct) << direct.error();
  EXPECT_EQ(direct->direct_bytes, uint64_t{1} << 60);
  c.bandwidth = 1;  // 36 billion years of copying: past the clock's limit
  auto slow = simulate(c, w);
  ASSERT_FALSE(slow);
  EXPECT_NE(slow.error().find("virtual time"), std::string::npos) << slow.error();
}

// 1 B/s: the uploads' delays add up to more than an int64 of nanoseconds. The total saturates
// instead of wrapping negative.
TEST(Simulator, TotalsSaturate) {
  SimConfig c;
  c.bandwidth = 1;
  c.duration = 1s;
  auto r = simulate(c, *make_workload("frames-steady", 1, c.duration));
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->delay_total, Duration::max());
  EXPECT_EQ(r->latency_total, Duration::max());
  EXPECT_GT(r->delay_max, Duration{0});
  EXPECT_EQ(r->invariant_violations(), 0u);
}

TEST(Simulator, AZeroWaitTimeoutRetriesAtTheNextTick) {
  for (Strategy strategy : {Strategy::Byte, Strategy::Slot}) {
    SimConfig c;
    c.strategy = strategy;
    c.wait_timeout = 0ns;
    c.duration = 2s;
    auto r = simulate(c, *make_workload("sizes-edge", 1, c.duration));
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->invariant_violations(), 0u);
    EXPECT_GT(r->timeouts, 0u);
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
