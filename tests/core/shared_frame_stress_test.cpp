// Stress test of the multi-writer frame protocol, meant to run under ThreadSanitizer as well as
// in ordinary builds: 8 writer threads and one owner cycle through frames for a bounded time
// (STAGING_STRESS_MS, default 1500 ms; at least 50 frames). Per frame the owner opens, lets the
// writers in, seals at a random moment — finishing with Wait, or with Report and retries — and
// checks every placement against what the writers recorded (nothing lost, nothing overlapping,
// every byte its writer's) before reopening. Writers arriving after the seal are refused and wait
// for the next frame; some writers use private runs, some exact placement; some place until the
// frame is full. The same threads frame after frame: the writers with blocks place into their
// lanes (sized by the frame before), the shared range, and each other's lanes once both are full.
// Also: many threads hammering one WriterGate while it is sealed and reopened.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shared_frame_support.hpp"

namespace staging {
namespace {

using namespace std::chrono_literals;
using test::Made;
using test::Origin;
using Frame = SharedFrame<Origin>;
using SteadyTime = std::chrono::steady_clock;

std::chrono::milliseconds budget() {
  const char* env = std::getenv("STAGING_STRESS_MS");
  return std::chrono::milliseconds(env != nullptr ? std::atoll(env) : 1500);
}

uint64_t alignment_for(Origin o) {
  static constexpr uint64_t kAlignments[] = {1, 4, 16, 64, 12};
  return kAlignments[(o.writer + o.seq) % std::size(kAlignments)];
}

TEST(SharedFrameStress, EightWritersManyFramesNothingLostNothingTorn) {
  constexpr uint32_t kWriters = 8;
  std::vector<std::byte> memory(256 * 1024);
  Frame frame;
  // The frame being filled: `current` is stored before open() (so a writer inside reads the
  // frame it is in), `announced` after it (writers poll it for a new frame).
  std::atomic<uint64_t> current{0};
  std::atomic<uint64_t> announced{0};
  std::atomic<bool> stop{false};

  struct alignas(64) Writer {
    std::vector<Made> made;          // this frame's placements; written while inside only
    uint64_t joined_generation = 0;  // written while inside only
    std::atomic<uint64_t> refused{0};
    std::atomic<uint64_t> placed{0};
  };
  std::vector<Writer> writers(kWriters);

  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < kWriters; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(t * 7919 + 1);
      uint64_t seen = 0;
      Writer& me = writers[t];
      while (!stop.load(std::memory_order_acquire)) {
        const uint64_t g = announced.load(std::memory_order_acquire);
        if (g == seen) {
          std::this_thread::yield();
          continue;
        }
        auto w = frame.join({.block_bytes = (t % 2 == 0) ? 0u : 4096u});
        if (!w) {  // sealed before we came: wait for the next frame
          me.refused.fetch_add(1, std::memory_order_relaxed);
          seen = g;
          continue;
        }
        me.made.clear();
        me.joined_generation = current.load(std::memory_order_relaxed);
        // The frame joined may be newer than the one announced when we looked (opened in
        // between): remember the one we are in, so that we never join it twice (a second join
        // would clear `made` while the first visit's placements are still in the frame).
        seen = me.joined_generation;
        // Writers 6 and 7 place until the frame is full; the others a random count.
        const uint32_t count = t >= 6 ? 1u << 20 : static_cast<uint32_t>(rng() % 64);
        for (uint32_t seq = 0; seq < count; ++seq) {
          const Origin origin{t, seq};
          const uint64_t size = 1 + rng() % (rng() % 8 == 0 ? 8192 : 256);
          auto p = w->place(size, alignment_for(origin), origin);
          if (!p) break;  // Full
          test::write_pattern(p->bytes, origin);
          const bool discard = rng() % 16 == 0;
          if (discard) w->discard(*p);
          me.made.push_back({p->offset, size, origin, discard});
          me.placed.fetch_add(1, std::memory_order_relaxed);
        }
        w->leave();
      }
    });
  }

  // The writers stop and are joined however the test ends (a failed ASSERT returns early; a
  // joinable thread destroyed would abort the whole run).
  struct JoinAll {
    std::atomic<bool>& stop;
    std::vector<std::thread>& pool;
    ~JoinAll() {
      stop.store(true, std::memory_order_release);
      for (auto& th : pool) {
        if (th.joinable()) th.join();
      }
    }
  } join_all{stop, pool};

  std::mt19937_64 rng(12345);
  uint64_t frames = 0, report_retries = 0, checked = 0, laned = 0;
  const auto deadline = SteadyTime::now() + budget();
  while (frames < 50 || SteadyTime::now() < deadline) {
    ++frames;
    const uint64_t base = (rng() % 4) * 1000;
    current.store(frames, std::memory_order_relaxed);
    frame.open(std::span(memory).subspan(0, memory.size() - 4000), base);
    if (frame.used_bytes() > 0) ++laned;  // lanes laid out (no writer inside yet)
    announced.store(frames, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    SharedFrame<Origin>::Placements placed;
    if (frames % 2 == 0) {
      auto done = frame.finish(DrainMode::Wait, 30s);
      ASSERT_TRUE(done) << "writers still inside after 30 s: " << done.error().writers;
      placed = *done;
    } else {
      for (;;) {
        auto done = frame.finish(DrainMode::Report);
        if (done) {
          placed = *done;
          break;
        }
        ASSERT_GT(done.error().writers, 0u);
        ++report_retries;
        std::this_thread::yield();
      }
    }
    std::vector<Made> made;
    for (const Writer& w : writers) {
      if (w.joined_generation == frames) made.insert(made.end(), w.made.begin(), w.made.end());
    }
    const std::string failure = test::check_collected(
        placed, made, std::span(memory).subspan(0, memory.size() - 4000), base, alignment_for);
    ASSERT_EQ(failure, "") << "frame " << frames;
    // Every byte up to the cursor is placed, padding or stranded: no tail lost in a race.
    ASSERT_EQ(test::check_accounted(frame, made, alignment_for), "") << "frame " << frames;
    ASSERT_LE(frame.used_bytes(), frame.capacity());
    checked += placed.size();
  }
  stop.store(true, std::memory_order_release);
  for (auto& th : pool)
    th.join();
  uint64_t refused = 0;
  for (const Writer& w : writers)
    refused += w.refused.load();
  std::printf(
      "[stress] %llu frames (%llu with lanes), %llu placements checked, %llu joins refused after "
      "a seal, %llu Report retries\n",
      static_cast<unsigned long long>(frames), static_cast<unsigned long long>(laned),
      static_cast<unsigned long long>(checked), static_cast<unsigned long long>(refused),
      static_cast<unsigned long long>(report_retries));
  EXPECT_GT(checked, 0u);
}

// Joined placements from 8 threads: each writer streams uploads into its own destination, mostly
// back to back (joined into one placement), sometimes after a gap in the destination or with an
// alignment that pads staging memory (a new placement), sometimes withdrawing the upload it just
// placed (always possible) or an earlier one (refused exactly when a later upload was joined to
// it). Per frame the owner checks that the placements' destination bytes are exactly those of the
// uploads kept, each once, with the bytes their writer wrote, and that joining did happen.
struct DstRun {
  uint32_t writer = 0;
  uint64_t at = 0;  // the destination offset
  static bool joins(const DstRun& first, uint64_t first_size, const DstRun& next) noexcept {
    return next.writer == first.writer && next.at == first.at + first_size;
  }
};

// The byte a writer writes for destination offset `at` (never zero-filled data).
std::byte dst_byte(uint32_t writer, uint64_t at) noexcept {
  return test::pattern_byte(Origin{writer, 0}, at);
}

TEST(SharedFrameStress, EightWritersJoinedRunsCoverEveryUploadExactlyOnce) {
  constexpr uint32_t kWriters = 8;
  constexpr uint64_t kUploads = 600;  // per writer and frame
  std::vector<std::byte> memory(kWriters * kUploads * 80 + 8 * 65536);
  SharedFrame<DstRun> frame;
  struct Upload {
    uint64_t at = 0, size = 0;
  };
  struct alignas(64) Writer {
    std::vector<Upload> kept;  // the destination bytes this frame must copy
    uint64_t uploads = 0;
    std::string failure;
  };
  std::vector<Writer> writers(kWriters);
  std::barrier<> sync(kWriters + 1);
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < kWriters; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(t * 104729 + 3);
      Writer& me = writers[t];
      for (;;) {
        sync.arrive_and_wait();  // the frame is open
        if (stop.load(std::memory_order_acquire)) return;
        me.kept.clear();
        me.uploads = 0;
        auto w = frame.join().value();
        uint64_t at = 0;
        std::optional<SharedFrame<DstRun>::Placed> before;  // the upload placed before the last
        std::optional<SharedFrame<DstRun>::Placed> last;
        for (uint64_t i = 0; i < kUploads; ++i) {
          const uint64_t r = rng() % 64;
          if (r == 0) at += 1 + rng() % 100;                         // a gap in the destination
          const uint64_t alignment = r == 1 ? 64 : (r < 8 ? 4 : 1);  // sometimes padding
          const uint64_t size = 1 + rng() % (r == 2 ? 4096 : 64);
          auto p = w.place(size, alignment, {t, at});
          if (!p) {
            me.failure = "upload refused: " + std::string(to_string(p.error().kind));
            break;
          }
          for (uint64_t b = 0; b < size; ++b)
            p->bytes[b] = dst_byte(t, at + b);
          ++me.uploads;
          me.kept.push_back({at, size});
          if (r == 3 && before) {
            // An earlier upload can be withdrawn only when nothing was joined to it after.
            const bool joined_after = before->entry == last->entry;
            if (w.discard(*before) == joined_after) {
              me.failure = "discard of an earlier upload answered against its join";
              break;
            }
            // before, last and this upload are the last three kept.
            if (!joined_after) me.kept.erase(me.kept.end() - 3);
            before.reset();
          }
          if (r == 4) {
            if (!w.discard(*p)) {
              me.failure = "the upload just placed could not be withdrawn";
              break;
            }
            me.kept.pop_back();
            at += size;  // its destination bytes stay unwritten
            before.reset();
            last.reset();
            continue;
          }
          at += size;
          before = last;
          last = *p;
        }
        w.leave();
        sync.arrive_and_wait();  // every writer has left
      }
    });
  }
  struct StopAll {
    std::atomic<bool>& stop;
    std::barrier<>& sync;
    std::vector<std::thread>& pool;
    ~StopAll() {
      stop.store(true, std::memory_order_release);
      sync.arrive_and_wait();
      for (auto& th : pool)
        th.join();
    }
  } stop_all{stop, sync, pool};

  const auto deadline = SteadyTime::now() + budget() / 3;
  uint64_t frames = 0, uploads = 0, placements = 0;
  while (frames < 20 || SteadyTime::now() < deadline) {
    ++frames;
    frame.open(memory);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    const auto placed = frame.finish(DrainMode::Report);
    ASSERT_TRUE(placed) << "frame " << frames;
    // Every placement's destination bytes, per writer: must be exactly the kept uploads'.
    std::vector<std::vector<Upload>> copied(kWriters);
    uint64_t previous_end = 0;
    for (const auto& p : *placed) {
      ASSERT_GE(p.offset, previous_end) << "frame " << frames << ": placements overlap";
      previous_end = p.offset + p.size;
      ASSERT_LT(p.payload.writer, kWriters);
      for (uint64_t b = 0; b < p.size; ++b) {
        ASSERT_EQ(memory[p.offset + b], dst_byte(p.payload.writer, p.payload.at + b))
            << "frame " << frames << ": writer " << p.payload.writer << " byte at "
            << p.payload.at + b;
      }
      copied[p.payload.writer].push_back({p.payload.at, p.size});
      ++placements;
    }
    for (uint32_t t = 0; t < kWriters; ++t) {
      ASSERT_EQ(writers[t].failure, "") << "frame " << frames << ", writer " << t;
      // Both lists in destination order (a writer's destination offsets only grow), merged where
      // they touch: the same bytes.
      const auto spans = [](std::vector<Upload> v) {
        std::sort(v.begin(), v.end(), [](const Upload& a, const Upload& b) { return a.at < b.at; });
        std::vector<Upload> out;
        for (const Upload& u : v) {
          if (!out.empty() && out.back().at + out.back().size == u.at) {
            out.back().size += u.size;
          } else {
            out.push_back(u);
          }
        }
        return out;
      };
      const auto want = spans(writers[t].kept), got = spans(copied[t]);
      ASSERT_EQ(want.size(), got.size()) << "frame " << frames << ", writer " << t;
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(want[i].at, got[i].at) << "frame " << frames << ", writer " << t;
        ASSERT_EQ(want[i].size, got[i].size) << "frame " << frames << ", writer " << t;
      }
      uploads += writers[t].uploads;
    }
  }
  std::printf("[stress] %llu frames, %llu uploads joined into %llu placements\n",
              static_cast<unsigned long long>(frames), static_cast<unsigned long long>(uploads),
              static_cast<unsigned long long>(placements));
  // Most uploads continue the one before: far fewer placements than uploads.
  EXPECT_LT(placements * 4, uploads);
}

TEST(SharedFrameStress, GateCountsEveryWriterWhileSealedAndReopened) {
  // 8 threads enter and leave as fast as they can; the owner seals, waits until drained (the
  // writers inside must all leave, none may enter), checks the count, and reopens.
  WriterGate gate;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> inside_sealed{0};  // entries that succeeded while the owner held it sealed
  std::atomic<bool> owner_sealed{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t) {
    pool.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (gate.enter()) {
          if (owner_sealed.load(std::memory_order_acquire) && gate.drained()) {
            inside_sealed.fetch_add(1);  // impossible: we are inside
          }
          (void)gate.leave();
        }
        std::this_thread::yield();  // let the owner run on machines with fewer cores than us
      }
    });
  }
  const auto deadline = SteadyTime::now() + budget() / 3;
  uint64_t cycles = 0;
  while (cycles < 20 || SteadyTime::now() < deadline) {
    ++cycles;
    gate.open();
    std::this_thread::yield();
    (void)gate.seal();
    ASSERT_TRUE(gate.wait_drained(30s));
    owner_sealed.store(true, std::memory_order_release);
    for (int i = 0; i < 100; ++i)
      ASSERT_EQ(gate.writers(), 0u);  // sealed and drained: nobody gets in
    owner_sealed.store(false, std::memory_order_release);
  }
  stop.store(true);
  for (auto& th : pool)
    th.join();
  EXPECT_EQ(inside_sealed.load(), 0u);
  std::printf("[stress] %llu seal/drain/reopen cycles under 8 threads\n",
              static_cast<unsigned long long>(cycles));
}

}  // namespace
}  // namespace staging
