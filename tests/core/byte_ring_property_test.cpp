// Property test of the ByteRing: random rings (capacity, cap, policy, timeouts, queue delay
// model) driven by random operation sequences — reserve (sizes around the contiguous free run,
// larger than the ring, zero; any alignment, policy override, granularity, timeout), submit,
// advance time, retire (also with stale values), poll, cancel, stall and release the queue, trim —
// checked after every step against the reference model of byte_ring_harness.hpp (a set of live
// byte intervals, the bytes written into them, the queue's completions) and by a Record-mode
// InvariantChecker fed by the ring. Properties M1–M8 are listed in the harness.
//
// At least kMinOperations operations run per CI run; the count is printed at the end, and the
// run fails if fewer ran (e.g. because RC_PARAMS was set too small).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "byte_ring_harness.hpp"
#include "rc_params.hpp"

// rapidcheck reads RC_PARAMS on first use, after static initialisation; our CTest helper cannot
// pass environment variables, so the defaults are set here (an RC_PARAMS from the caller wins).
// 800 cases of up to 1000 operations (rapidcheck grows the size over the run): about 190,000
// operations.
[[maybe_unused]] const int kDefaultParams =
    staging::test::set_rc_params("max_success=800 max_size=1000");

namespace staging {
namespace {

constexpr uint64_t kMinOperations = 100000;
uint64_t g_operations = 0;
uint64_t g_reservations = 0;
ByteRingStats g_totals;  // what the policies did, summed over every passing case

void add(const ByteRingStats& s) {
  g_totals.wraps += s.wraps;
  g_totals.would_blocks += s.would_blocks;
  g_totals.waits += s.waits;
  g_totals.timeouts += s.timeouts;
  g_totals.splits += s.splits;
  g_totals.grows += s.grows;
  g_totals.trims += s.trims;
  g_totals.fallbacks += s.fallbacks;
  g_totals.cancelled += s.cancelled;
  g_totals.cap_refusals += s.cap_refusals;
  for (int i = 0; i < 3; ++i)
    g_totals.would_blocks_by_cause[i] += s.would_blocks_by_cause[i];
}

rc::Gen<harness::Op> gen_op() {
  return rc::gen::apply([](uint8_t kind, uint32_t a, uint32_t b,
                           uint32_t c) { return harness::Op::from(kind, a, b, c); },
                        rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint32_t>(),
                        rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint32_t>());
}

RC_GTEST_PROP(ByteRingProperty, MatchesTheReferenceModelOfLiveIntervals, ()) {
  const auto setup =
      harness::Setup::from(*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(),
                           *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>());
  const auto ops = *rc::gen::container<std::vector<harness::Op>>(gen_op());
  harness::Harness h(setup);
  RC_ASSERT(h.ok());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const bool ok = h.step(ops[i]);
    if (!ok) {
      RC_FAIL("ring: " + harness::describe(setup) + "\nstep " + std::to_string(i) + " (" +
              harness::name(ops[i].kind) + "): " + h.failure());
    }
  }
  g_operations += h.operations();
  g_reservations += h.reservations();
  add(h.ring().stats());
}

class ReportOperations : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf(
        "[property] %llu random byte-ring operations (%llu reservations placed) checked against "
        "the model\n",
        static_cast<unsigned long long>(g_operations),
        static_cast<unsigned long long>(g_reservations));
    const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
    const ByteRingStats& t = g_totals;
    std::printf(
        "[property] wraps %llu, would-blocks %llu (in flight %llu, fragmentation %llu, cap %llu), "
        "waits %llu, timeouts %llu, splits %llu, grows %llu, trims %llu, fallbacks %llu, "
        "cancels %llu, cap refusals %llu\n",
        u(t.wraps), u(t.would_blocks), u(t.would_blocks_by_cause[0]), u(t.would_blocks_by_cause[1]),
        u(t.would_blocks_by_cause[2]), u(t.waits), u(t.timeouts), u(t.splits), u(t.grows),
        u(t.trims), u(t.fallbacks), u(t.cancelled), u(t.cap_refusals));
    const bool failed = ::testing::UnitTest::GetInstance()->failed_test_count() > 0;
    if (!failed && g_operations < kMinOperations) {
      ADD_FAILURE() << "only " << g_operations << " operations ran; at least " << kMinOperations
                    << " are required (RC_PARAMS too small?)";
    }
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportOperations);

}  // namespace
}  // namespace staging
