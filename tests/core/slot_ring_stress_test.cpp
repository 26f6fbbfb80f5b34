// Stress of the slot ring's thread-safe parts: FenceTokens fired (signal, abandon, fail, dropped)
// by several "GPU" threads, a "queue" thread that completes frames finished at timeline values
// (published as an atomic completed value, as a timeline semaphore would be, which the ring's
// thread hands to retire()), and SlotLeases filled and dropped by several producer threads — all
// while the ring's own thread begins and finishes frames as fast as it can. Bounded in time (two
// seconds, then one for the ping-pong test; fewer frames under a sanitizer, which runs slower), and
// meant for ThreadSanitizer as much as for a plain build (label `threads`: docs/safety.md).
//
// What must hold, whatever the interleaving:
//   - begin() never hands out a slot another frame holds (Recording) or the GPU may read
//     (InFlight): each slot has a `busy` flag, set by the ring's thread when it hands the slot
//     out and cleared by whoever gives it back, before giving it back;
//   - the bytes a frame wrote are intact when its fence fires (the ring never writes an InFlight
//     slot): each GPU thread verifies them first;
//   - the counts add up: every frame begun is finished or dropped, every token fired once;
//   - tokens and leases outlive the ring: the ring is destroyed while the GPU threads still hold
//     tokens, which they fire afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

namespace staging {
namespace {

using testing::FakeBuffer;
using testing::FakeSlotAllocator;
using SteadyClock = std::chrono::steady_clock;

// Whether a stress loop that began at `start` goes on: for `budget`, and on a loaded machine past
// it until 101 frames have run (never past 30 s).
bool keep_going(SteadyClock::time_point start, SteadyClock::duration budget, uint64_t frames) {
  const auto ran = SteadyClock::now() - start;
  return ran < std::chrono::seconds(30) && (ran < budget || frames <= 100);
}

// A closable multi-producer, multi-consumer queue.
template <class T>
class Channel {
 public:
  void push(T value) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(value));
    }
    ready_.notify_one();
  }
  // Waits for an item; none once closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    return value;
  }
  std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    return value;
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
  bool closed_ = false;
};

uint8_t stamp(uint64_t frame, uint64_t i) {
  return static_cast<uint8_t>((frame * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull) >> 56);
}

// One frame on its way: recorded (lease) or finished (token), with what it wrote.
struct Work {
  uint64_t frame = 0;
  std::size_t slot = 0;
  std::byte* data = nullptr;  // the slot buffer's memory, valid while the frame holds the slot
  uint64_t bytes = 0;         // bytes [0, bytes) of it were stamped
  SlotLease lease;
  FenceToken token;
  TimelineValue value = 0;  // finished at this timeline value (0: with a token)
};

constexpr std::size_t kSlots = 8;
constexpr int kGpuThreads = 3;
constexpr int kProducerThreads = 3;

struct Stress {
  FakeSlotAllocator allocator;
  std::optional<StagingRing<FakeBuffer>> ring;
  std::atomic<bool> busy[kSlots] = {};
  Channel<Work> to_producers, to_ring, to_gpu, to_queue;
  std::atomic<uint64_t> fired{0}, dropped_leases{0}, stamp_errors{0}, reuse_errors{0};
  std::atomic<TimelineValue> completed{0};  // the queue's timeline, as a semaphore would show it
  TimelineValue next_value = 0;             // the ring's thread's last value handed out

  // "Reads" a finished frame: its stamps must be intact.
  void check(const Work& w) {
    for (uint64_t i = 0; i < w.bytes; ++i) {
      if (w.data[i] != std::byte{stamp(w.frame, i)}) {
        ++stamp_errors;
        return;
      }
    }
  }

  Stress() {
    ring.emplace(
        std::move(StagingRing<FakeBuffer>::create(
                      allocator, {.slots = kSlots, .min_slot_bytes = 256, .max_slot_bytes = 4096}))
            .value());
  }

  static void write(Work& w, uint64_t bytes) {
    for (uint64_t i = 0; i < bytes; ++i)
      w.data[i] = std::byte{stamp(w.frame, i)};
    w.bytes = bytes;
  }

  // Producer thread: fills a frame's lease, then returns it to the ring or drops it here.
  void produce() {
    while (std::optional<Work> w = to_producers.pop()) {
      const uint64_t bytes = 1 + (w->frame * 37) % w->lease.capacity();
      if (!w->lease.place(bytes, 1)) ++stamp_errors;
      write(*w, bytes);
      if (w->frame % 5 == 0) {  // the frame is given up: its lease is dropped on this thread
        busy[w->slot].store(false);
        w->lease = SlotLease{};
        ++dropped_leases;
      } else {
        to_ring.push(std::move(*w));
      }
    }
  }

  // GPU thread: "reads" a finished frame (its stamps must be intact), then fires its fence.
  void gpu() {
    while (std::optional<Work> w = to_gpu.pop()) {
      check(*w);
      busy[w->slot].store(false);  // before the fence: the slot may be reused right after it
      switch (w->frame % 7) {
        case 0:
          w->token.abandon();
          break;
        case 1:
          w->token.fail();
          break;
        case 2:
          w->token = FenceToken{};  // dropped unfired: abandons the slot
          break;
        default:
          w->token.signal();
          break;
      }
      ++fired;
    }
  }

  // Queue thread: completes the frames finished at values, in order, and publishes each value
  // (release) after it has read the frame; the ring's thread retires up to what it reads.
  void queue() {
    while (std::optional<Work> w = to_queue.pop()) {
      check(*w);
      busy[w->slot].store(false);
      completed.store(w->value, std::memory_order_release);
      ++fired;
    }
  }

  // The ring's thread: begins frames, hands some to producers, finishes what comes back. Runs
  // for `budget`, and on a loaded machine past it until 101 frames have begun (at most 30 s).
  uint64_t drive(SteadyClock::duration budget, uint64_t max_frames) {
    const auto start = SteadyClock::now();
    uint64_t frame = 0;
    while (frame < max_frames && keep_going(start, budget, frame)) {
      ring->retire(completed.load(std::memory_order_acquire));
      while (std::optional<Work> back = to_ring.try_pop())
        finish(std::move(*back));
      const uint64_t needed = 1 + (frame * 131) % 4000;
      auto lease = ring->begin(needed);
      if (!lease) {
        std::this_thread::yield();
        continue;
      }
      Work w;
      w.frame = ++frame;
      w.slot = lease->slot();
      if (busy[w.slot].exchange(true)) ++reuse_errors;
      w.data = ring->buffer(*lease).data();
      w.lease = std::move(lease).value();
      if (frame % 2 == 0) {
        to_producers.push(std::move(w));
      } else {
        const uint64_t bytes = 1 + (frame * 53) % needed;
        if (!w.lease.place(bytes, 4)) ++stamp_errors;
        write(w, bytes);
        finish(std::move(w));
      }
    }
    return frame;
  }

  // Finishes a frame: every third at a timeline value (the queue thread completes it), the others
  // with a token sent to the GPU threads (or, while draining, kept in `late`).
  void finish(Work w, std::vector<Work>* late = nullptr) {
    if (late == nullptr && w.frame % 3 == 0) {
      w.value = ++next_value;
      if (!ring->finish(std::move(w.lease), w.value)) ++stamp_errors;
      to_queue.push(std::move(w));
      return;
    }
    auto token = ring->finish(std::move(w.lease));
    if (!token) {
      ++stamp_errors;
      return;
    }
    w.token = std::move(token).value();
    if (late != nullptr) {
      late->push_back(std::move(w));
    } else {
      to_gpu.push(std::move(w));
    }
  }
};

TEST(SlotRingStress, FencesAndLeasesFromOtherThreadsWhileTheRingRuns) {
  Stress s;
  std::vector<std::thread> threads;
  for (int i = 0; i < kGpuThreads; ++i)
    threads.emplace_back([&] { s.gpu(); });
  for (int i = 0; i < kProducerThreads; ++i)
    threads.emplace_back([&] { s.produce(); });
  std::thread queue([&] { s.queue(); });

  const uint64_t frames = s.drive(std::chrono::milliseconds(2000), 400000);

  // Drain: the producers stop; what they returned is finished but kept back (`late`); the GPU
  // threads fire everything else and stop. Then the ring is destroyed with the late tokens still
  // pending, and other threads fire them (without reading the freed buffers).
  s.to_producers.close();
  for (int i = kGpuThreads; i < kGpuThreads + kProducerThreads; ++i)
    threads[static_cast<std::size_t>(i)].join();
  std::vector<Work> late;
  while (std::optional<Work> back = s.to_ring.try_pop())
    s.finish(std::move(*back), &late);
  s.to_gpu.close();
  s.to_queue.close();
  for (int i = 0; i < kGpuThreads; ++i)
    threads[static_cast<std::size_t>(i)].join();
  queue.join();
  EXPECT_EQ(s.completed.load(), s.next_value);
  s.ring->retire(s.completed.load());
  std::size_t in_flight = 0;  // only the late frames' slots wait for their tokens now
  for (std::size_t i = 0; i < kSlots; ++i)
    in_flight += s.ring->state(i) == SlotState::InFlight ? 1 : 0;
  EXPECT_EQ(in_flight, late.size());
  const StagingStats stats = s.ring->stats();
  s.ring.reset();
  std::vector<std::thread> firing;
  for (Work& w : late) {
    firing.emplace_back([&s, token = std::move(w.token)]() mutable {
      token.signal();  // the orphaned fence only: no ring is affected
      ++s.fired;
    });
  }
  for (std::thread& t : firing)
    t.join();

  EXPECT_GT(frames, 100u) << "the ring made almost no progress";
  EXPECT_EQ(s.reuse_errors.load(), 0u) << "a slot was handed out while another frame held it";
  EXPECT_EQ(s.stamp_errors.load(), 0u) << "a frame's bytes changed before its fence fired";
  EXPECT_EQ(stats.frames_begun, frames);
  EXPECT_EQ(stats.frames_finished + s.dropped_leases.load(), frames);
  EXPECT_EQ(s.fired.load(), stats.frames_finished);
  std::printf("SlotRingStress: %llu frames, %llu dropped leases, %llu fences fired\n",
              static_cast<unsigned long long>(frames),
              static_cast<unsigned long long>(s.dropped_leases.load()),
              static_cast<unsigned long long>(s.fired.load()));
}

// Many threads fire tokens of the same slot's successive frames while the ring's thread waits
// for each: a one-slot ring ping-pongs between the ring's thread and a pool of signalling
// threads; every frame must see the previous one's fence (acquire/release through SlotFence).
TEST(SlotRingStress, OneSlotPingPongsBetweenTheRingAndSignallingThreads) {
  FakeSlotAllocator allocator;
  auto ring = std::move(StagingRing<FakeBuffer>::create(
                            allocator, {.slots = 1, .min_slot_bytes = 64, .max_slot_bytes = 64}))
                  .value();
  Channel<std::pair<FenceToken, std::byte*>> tokens;
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> signallers;
  for (int i = 0; i < 4; ++i) {
    signallers.emplace_back([&] {
      while (auto t = tokens.pop()) {
        // The frame wrote byte 0 = its number; the ring's thread rewrites it only after this
        // signal (a data race otherwise, for ThreadSanitizer to report).
        if (t->second[0] == std::byte{0}) ++bad;
        t->first.signal();
      }
    });
  }
  const auto start = SteadyClock::now();
  uint64_t frames = 0;
  while (frames < 100000 && keep_going(start, std::chrono::milliseconds(1000), frames)) {
    auto lease = ring.begin(8);
    if (!lease) {
      std::this_thread::yield();
      continue;
    }
    std::byte* data = ring.buffer(*lease).data();
    data[0] = std::byte{static_cast<uint8_t>(1 + frames % 255)};
    ++frames;
    tokens.push({std::move(ring.finish(std::move(lease).value())).value(), data});
  }
  tokens.close();
  for (std::thread& t : signallers)
    t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(frames, 100u);
  EXPECT_EQ(ring.stats().frames_finished, frames);
  EXPECT_EQ(ring.state(0), SlotState::Ready);
}

}  // namespace
}  // namespace staging
