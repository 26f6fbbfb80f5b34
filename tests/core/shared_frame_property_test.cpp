// Property tests of SharedFrame's concurrent placement against a model.
//
// 1. Interleaved writers, against an exact model: random programs of joins, placements (any
//    size and alignment), discards, leaves, seals, finishes (Report and Wait with no time) and
//    reopens, for up to 6 writers, run on one thread so that every interleaving is reproducible.
//    The model holds the cursor, the writers inside, the seal and the placements: offsets must be
//    exactly the model's (a single thread's layout), a refusal must be one the model makes, a join
//    is refused exactly when the frame is sealed, exactly one party learns that the frame drained,
//    finish reports exactly the writers inside, and a finished frame yields exactly the
//    placements not discarded, in offset order, with every writer's bytes intact.
// 2. Real threads: 2-8 threads place random uploads (with and without private runs) into one
//    frame while the owner seals it at a random moment and finishes it (Wait), for 1-4 frames
//    (the same threads and uploads, so that from the second frame on they place into lanes,
//    unless the case turns lanes off). Nothing is lost, nothing overlaps, nothing is misaligned
//    or out of bounds, every byte is its writer's, placed and stranded bytes fit in the used
//    ones, a thread that joins after the seal has returned is refused, and (without runs) every
//    Full refusal is one that the frame's final cursor confirms.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include "shared_frame_support.hpp"
#include "staging/detail/core/align.hpp"

// rapidcheck reads RC_PARAMS on first use; the defaults are set here (an RC_PARAMS from the
// caller wins). 300 cases per property; the threaded one is bounded by its thread count.
[[maybe_unused]] const int kDefaultParams = setenv("RC_PARAMS", "max_success=300 max_size=300", 0);

namespace staging {
namespace {

using test::Made;
using test::Origin;
using Frame = SharedFrame<Origin>;

uint64_t g_steps = 0;
uint64_t g_placed = 0;
uint64_t g_threads = 0;
uint64_t g_refused_joins = 0;

// --- 1. interleaved writers against the exact model -----------------------------------------

enum class OpKind : uint8_t { Join, Place, Discard, Leave, Seal, FinishReport, FinishWait, Reopen };

struct Op {
  OpKind kind = OpKind::Place;
  uint32_t writer = 0;
  uint64_t size = 0;
  uint64_t alignment = 1;
};

rc::Gen<Op> gen_op() {
  // Placements dominate; the frame is sealed now and then.
  return rc::gen::apply(
      [](uint8_t k, uint32_t w, uint32_t s, uint8_t a) {
        Op op;
        const uint8_t r = k % 32;
        op.kind = r < 4    ? OpKind::Join
                  : r < 20 ? OpKind::Place
                  : r < 22 ? OpKind::Discard
                  : r < 26 ? OpKind::Leave
                  : r < 28 ? OpKind::Seal
                  : r < 29 ? OpKind::FinishReport
                  : r < 30 ? OpKind::FinishWait
                           : OpKind::Reopen;
        op.writer = w % 6;
        op.size = s % 4 == 0 ? 1 + s % 7 : 1 + s % 300;
        static constexpr uint64_t kAlignments[] = {1, 1, 2, 4, 8, 16, 64, 256, 3, 12, 5};
        op.alignment = kAlignments[a % std::size(kAlignments)];
        return op;
      },
      rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<uint8_t>());
}

struct Model {
  uint64_t base = 0;
  uint64_t end = 0;
  uint64_t cursor = 0;
  bool sealed = true;
  bool finished = false;  // finish() succeeded (collected) since the last open
  std::vector<bool> inside;
  std::vector<Made> made;                        // this frame's placements, in the order made
  std::vector<uint64_t> alignment;               // per placement made (by Origin::seq)
  std::vector<std::vector<Frame::Placed>> live;  // per writer: its placements (for discard)

  uint32_t writers_inside() const {
    return static_cast<uint32_t>(std::count(inside.begin(), inside.end(), true));
  }
};

RC_GTEST_PROP(SharedFrameProperty, InterleavedWritersMatchTheExactModel, ()) {
  const uint64_t capacity = *rc::gen::inRange<uint64_t>(1, 4096);
  const uint64_t base = *rc::gen::element<uint64_t>(0, 1, 256, 1000, uint64_t{1} << 40);
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());

  std::vector<std::byte> memory(capacity);
  Frame frame({.first_log_segment = 16});
  std::vector<Frame::Writer> writers(6);
  Model m;
  m.inside.assign(6, false);
  m.live.assign(6, {});
  const auto reopen = [&] {
    frame.open(memory, base);
    m = Model{base,
              base + capacity,
              base,
              false,
              false,
              std::vector<bool>(6, false),
              {},
              {},
              std::vector<std::vector<Frame::Placed>>(6)};
  };
  reopen();

  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const uint32_t w = op.writer;
    const std::string step = "step " + std::to_string(i) + ": ";
    switch (op.kind) {
      case OpKind::Join: {
        if (m.inside[w]) break;  // one membership per virtual writer
        auto joined = frame.join({.block_bytes = 0});
        RC_ASSERT(joined.has_value() == !m.sealed);
        if (joined) {
          writers[w] = std::move(*joined);
          m.inside[w] = true;
          m.live[w].clear();
        }
        break;
      }
      case OpKind::Place: {
        if (!m.inside[w]) break;
        const Origin origin{w, static_cast<uint32_t>(m.made.size())};
        auto placed = writers[w].place(op.size, op.alignment, origin);
        const uint64_t expected = *align_up(m.cursor, op.alignment);
        const bool fits = expected <= m.end && m.end - expected >= op.size;
        if (!placed) {
          RC_ASSERT(!fits);
          RC_ASSERT(placed.error().kind == SharedPlaceErrorKind::DoesNotFit);
          RC_ASSERT(placed.error().free == m.end - m.cursor);
          break;
        }
        RC_ASSERT(fits);
        if (placed->offset != expected) {
          RC_FAIL(step + "placed at " + std::to_string(placed->offset) + ", a single thread at " +
                  std::to_string(expected));
        }
        RC_ASSERT(placed->bytes.size() == op.size);
        RC_ASSERT(placed->bytes.data() == memory.data() + (expected - base));
        test::write_pattern(placed->bytes, origin);
        m.cursor = expected + op.size;
        m.made.push_back({expected, op.size, origin, false});
        m.alignment.push_back(op.alignment);
        m.live[w].push_back(*placed);
        ++g_placed;
        break;
      }
      case OpKind::Discard: {
        if (!m.inside[w] || m.live[w].empty()) break;
        const Frame::Placed p = m.live[w][op.size % m.live[w].size()];
        writers[w].discard(p);
        for (Made& made : m.made) {
          if (made.offset == p.offset) made.discarded = true;
        }
        break;
      }
      case OpKind::Leave: {
        if (!m.inside[w]) break;
        m.inside[w] = false;
        const bool told = writers[w].leave();
        RC_ASSERT(told == (m.sealed && m.writers_inside() == 0));
        break;
      }
      case OpKind::Seal: {
        if (m.finished) break;
        const bool was_sealed = m.sealed;
        m.sealed = true;
        const uint32_t inside = frame.seal();
        if (!was_sealed) RC_ASSERT(inside == m.writers_inside());
        RC_ASSERT(!frame.join());
        break;
      }
      case OpKind::FinishReport:
      case OpKind::FinishWait: {
        auto done = op.kind == OpKind::FinishReport ? frame.finish(DrainMode::Report)
                                                    : frame.finish(DrainMode::Wait, Duration{0});
        m.sealed = true;
        if (m.writers_inside() > 0) {
          RC_ASSERT(!done);
          RC_ASSERT(done.error().writers == m.writers_inside());
          break;
        }
        RC_ASSERT(done.has_value());
        const std::string failure = test::check_collected(
            *done, m.made, memory, base, [&](const Origin& o) { return m.alignment[o.seq]; });
        if (!failure.empty()) RC_FAIL(step + failure);
        RC_ASSERT(frame.used_bytes() == m.cursor - base);
        m.finished = true;
        break;
      }
      case OpKind::Reopen: {
        if (m.writers_inside() > 0) break;
        if (!m.sealed) (void)frame.seal();
        reopen();
        break;
      }
    }
    ++g_steps;
  }
  for (auto& writer : writers)
    (void)writer.leave();
}

// --- 2. real threads -------------------------------------------------------------------------

struct Item {
  uint64_t size = 1;
  uint64_t alignment = 1;
  bool discard = false;
};

RC_GTEST_PROP(SharedFrameProperty, ConcurrentWritersLoseNothingAndNeverOverlap, ()) {
  const auto threads = *rc::gen::inRange<uint32_t>(2, 9);
  const uint64_t capacity = *rc::gen::inRange<uint64_t>(64, 256 * 1024);
  const uint64_t block_bytes = *rc::gen::element<uint64_t>(0, 0, 256, 4096, uint64_t{64} << 10);
  const auto frames = *rc::gen::inRange<uint32_t>(1, 5);  // the same threads, reopened
  const bool lanes = *rc::gen::weightedElement<bool>({{3, true}, {1, false}});
  const auto seal_after = *rc::gen::inRange<uint32_t>(0, 200);  // microseconds
  const auto late = *rc::gen::inRange<uint32_t>(0, threads);    // threads that start after
  std::vector<std::vector<Item>> programs;
  for (uint32_t t = 0; t < threads; ++t) {
    programs.push_back(*rc::gen::container<std::vector<Item>>(rc::gen::build<Item>(
        rc::gen::set(&Item::size, rc::gen::inRange<uint64_t>(1, 2048)),
        rc::gen::set(&Item::alignment, rc::gen::element<uint64_t>(1, 4, 16, 256, 12, 3)),
        rc::gen::set(&Item::discard, rc::gen::weightedElement<bool>({{9, false}, {1, true}})))));
  }

  std::vector<std::byte> memory(capacity);
  const uint64_t base = 4096;
  Frame frame({.first_log_segment = 16, .lanes = lanes});

  struct Result {
    std::vector<Made> made;
    std::vector<Item> refused;  // Full
    bool joined = false;
    bool joined_after_seal_returned = false;
  };
  std::vector<Result> results(threads);
  // Frame f (from 1) starts when `opened` reaches f; a thread is done with it when it adds 1 to
  // `done` (the owner reads the results once all have).
  std::atomic<uint32_t> opened{0};
  std::atomic<uint32_t> done{0};
  std::atomic<bool> seal_returned{false};
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (uint32_t f = 1; f <= frames; ++f) {
        while (opened.load(std::memory_order_acquire) < f)
          std::this_thread::yield();
        Result& r = results[t];
        r = Result{};
        if (t < late) std::this_thread::sleep_for(std::chrono::microseconds(seal_after + 50));
        const bool after = seal_returned.load(std::memory_order_acquire);
        auto w = frame.join({.block_bytes = block_bytes});
        r.joined_after_seal_returned = after;
        if (w) {
          r.joined = true;
          uint32_t seq = 0;
          for (const Item& item : programs[t]) {
            const Origin origin{t, seq++};
            auto p = w->place(item.size, item.alignment, origin);
            if (!p) {
              if (p.error().kind != SharedPlaceErrorKind::DoesNotFit) std::abort();
              r.refused.push_back(item);
              continue;
            }
            test::write_pattern(p->bytes, origin);
            if (item.discard) w->discard(*p);
            r.made.push_back({p->offset, item.size, origin, item.discard});
          }
          w->leave();
        }
        done.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  // The threads end however the case ends (a failed RC_ASSERT throws).
  struct JoinAll {
    std::atomic<uint32_t>& opened;
    std::vector<std::thread>& pool;
    uint32_t frames;
    ~JoinAll() {
      opened.store(frames, std::memory_order_release);
      for (auto& th : pool)
        th.join();
    }
  } join_all{opened, pool, frames};

  for (uint32_t f = 1; f <= frames; ++f) {
    frame.open(memory, base);
    seal_returned.store(false, std::memory_order_relaxed);
    opened.store(f, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::microseconds(seal_after));
    (void)frame.seal();
    seal_returned.store(true, std::memory_order_release);
    auto collected = frame.finish(DrainMode::Wait, std::chrono::seconds(30));
    while (done.load(std::memory_order_acquire) < f * threads)
      std::this_thread::yield();
    RC_ASSERT(collected.has_value());

    std::vector<Made> made;
    for (uint32_t t = 0; t < threads; ++t) {
      const Result& r = results[t];
      if (r.joined_after_seal_returned) RC_ASSERT(!r.joined);  // a join after the seal: refused
      if (!r.joined) ++g_refused_joins;
      made.insert(made.end(), r.made.begin(), r.made.end());
    }
    const std::string failure =
        test::check_collected(*collected, made, memory, base,
                              [&](const Origin& o) { return programs[o.writer][o.seq].alignment; });
    if (!failure.empty()) RC_FAIL("frame " + std::to_string(f) + ": " + failure);
    // Every byte up to the cursor is accounted for: placed (discarded ones too), alignment
    // padding, or stranded at the end of a block or of a lane; none is counted twice, and no
    // tail is lost.
    const std::string unaccounted = test::check_accounted(
        frame, made, [&](const Origin& o) { return programs[o.writer][o.seq].alignment; });
    if (!unaccounted.empty()) RC_FAIL("frame " + std::to_string(f) + ": " + unaccounted);
    RC_ASSERT(frame.used_bytes() <= capacity);
    if (block_bytes == 0) {
      // No lane (writers with one-upload blocks size none), and the cursor only grows: a
      // refusal at any time is a refusal at the end.
      RC_ASSERT(frame.stranded_bytes() == 0u);
      const uint64_t cursor = base + frame.used_bytes();
      for (const Result& r : results) {
        for (const Item& item : r.refused) {
          const uint64_t at = *align_up(cursor, item.alignment);
          RC_ASSERT(at > base + capacity || base + capacity - at < item.size);
        }
      }
    }
    g_threads += threads;
    g_placed += made.size();
  }
}

class Report : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf(
        "[property] %llu interleaved steps, %llu threads in concurrent cases, %llu placements "
        "checked, %llu joins refused after the seal\n",
        static_cast<unsigned long long>(g_steps), static_cast<unsigned long long>(g_threads),
        static_cast<unsigned long long>(g_placed),
        static_cast<unsigned long long>(g_refused_joins));
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new Report);

}  // namespace
}  // namespace staging
