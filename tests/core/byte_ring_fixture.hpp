// Shared by the ByteRing unit tests: a ring on a fake queue, fake clock and fake region memory,
// with the invariant checker on (Abort mode: a violation kills the test with its message), an
// observer that writes the timeline as text, and helpers that write random bytes into every
// reservation taken — and verify them when the ring reclaims it, the latest moment the GPU could
// have read them (after its token completed), so any overwrite before that fails the test.
//
// Sketch notation in the tests: one character per byte of region 0; A, B, C... live reservations,
// '-' free, '#' skipped tail charged to the reservation that wrapped; h = head, t = tail.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/observer.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/detail/core/invariant_checker.hpp"
#include "staging/testing/fake_queue.hpp"
#include "staging/testing/fake_region_allocator.hpp"

namespace staging::test {

using namespace std::chrono_literals;
using testing::DelayModel;
using testing::FakeClock;
using testing::FakeQueue;
using testing::FakeRegionAllocator;

inline std::string u(uint64_t v) {
  return std::to_string(v);
}

/// Writes every event as one line of text (times in ns of the fake clock).
class EventLog final : public Observer {
 public:
  std::vector<std::string> lines;
  std::vector<Duration> times;
  /// Called for every reclamation (the fixture verifies the reservation's bytes there).
  std::function<void(const Event&)> on_reclaim;

  void on_event(const Event& e) override {
    if (e.kind == EventKind::Retire && on_reclaim) on_reclaim(e);
    add(e.time, line(e));
  }

  /// Lines containing `what`.
  [[nodiscard]] std::vector<std::string> with(const std::string& what) const {
    std::vector<std::string> out;
    for (const std::string& l : lines) {
      if (l.find(what) != std::string::npos) out.push_back(l);
    }
    return out;
  }

 private:
  static std::string name(BlockCause c) { return std::string(to_string(c)); }
  static std::string line(const Event& e) {
    switch (e.kind) {
      case EventKind::Reserve:
        return "reserve #" + u(e.id) + " r" + u(e.region) + " [" + u(e.offset) + "," +
               u(e.offset + e.bytes) + ") charged " + u(e.charged) + " token " + u(e.token) +
               (e.fallback ? " fallback" : "");
      case EventKind::Retire:
        return std::string(e.cancelled ? "cancelled" : "retire") + " #" + u(e.id) + " bytes " +
               u(e.bytes) + " completed " + u(e.completed);
      case EventKind::Cancel:
        return "cancel #" + u(e.id);
      case EventKind::Wrap:
        return "wrap #" + u(e.id) + " r" + u(e.region) + " from " + u(e.offset) + " skipped " +
               u(e.skipped);
      case EventKind::WaitBegin:
        return "wait-begin " + name(e.cause) + " token " + u(e.token) + " needed " + u(e.asked);
      case EventKind::WaitEnd:
        return "wait-end " + name(e.cause) + " token " + u(e.token) + " waited " +
               u(static_cast<uint64_t>(e.waited.count())) + (e.timed_out ? " timed-out" : "");
      case EventKind::Split:
        return "split " + name(e.cause) + " #" + u(e.id) + " asked " + u(e.asked) + " placed " +
               u(e.bytes);
      case EventKind::Grow:
        return "grow r" + u(e.region) + " " + u(e.bytes) + " " + name(e.cause);
      case EventKind::Trim:
        return "trim r" + u(e.region) + " " + u(e.bytes);
      case EventKind::Fallback:
        return "fallback " + name(e.cause) + " #" + u(e.id) + " r" + u(e.region) + " " + u(e.bytes);
      case EventKind::WouldBlock:
        return "would-block " + name(e.cause) + " needed " + u(e.asked) + " free " +
               u(e.free_total) + "/" + u(e.free_contiguous);
      case EventKind::Timeout:
        return "timeout " + name(e.cause) + " oldest " + u(e.oldest_pending) + " waited-for " +
               u(e.token);
      case EventKind::CapRefusal:
        return "cap-refusal " + std::string(to_string(e.policy)) + " asked " + u(e.asked) +
               " held " + u(e.held) + (e.permanent ? " permanent" : " for-now");
      default:
        return std::string(to_string(e.kind));  // a streamer's kinds
    }
  }
  void add(Duration t, std::string line) {
    times.push_back(t);
    lines.push_back(std::move(line));
  }
};

/// A ring on fakes. Call make() in each test (or use the default 64-byte Defer ring).
struct ByteRingFixture : ::testing::Test {
  FakeClock clock;
  FakeQueue queue{clock};
  FakeRegionAllocator allocator;
  EventLog events;
  std::optional<ByteRing> ring;
  uint64_t next_seed = 0x1234;
  std::map<uint64_t, uint64_t> seeds;       // reservation id -> seed of its random bytes
  std::map<uint64_t, Reservation> written;  // filled and not yet reclaimed, by id
  uint64_t verified = 0;                    // reservations verified at reclamation

  ByteRingFixture() {
    events.on_reclaim = [this](const Event& e) {
      const auto it = written.find(e.id);
      if (it == written.end()) return;
      if (!e.cancelled) {
        EXPECT_TRUE(intact(it->second))
            << "bytes of reservation #" << e.id << " changed before it was reclaimed";
        ++verified;
      }
      written.erase(it);
    };
  }

  ByteRing& make(ByteRingConfig config) {
    config.check_invariants = true;
    ring.reset();
    written.clear();
    auto made = staging::detail::create_byte_ring(config, {&allocator, &clock, &events});
    EXPECT_TRUE(made.has_value());
    ring.emplace(std::move(made).value());
    return *ring;
  }
  ByteRing& make(uint64_t capacity, ExhaustionPolicy policy = ExhaustionPolicy::Defer) {
    ByteRingConfig c;
    c.capacity = capacity;
    c.policy = policy;
    return make(c);
  }

  /// The ring's reservation with its policy carried out against the fake queue (Wait and Split
  /// wait there, in virtual time): reserve_waiting().
  Expected<Reservation, ReserveError> reserve(const ReserveRequest& request) {
    return reserve_waiting(*ring, queue, request);
  }
  /// Hands the queue's completed value to the ring (what a backend does before reserving).
  uint64_t poll() { return ring->retire(queue.completed()); }

  /// A request for `size` bytes into the queue's next submission.
  ReserveRequest req(uint64_t size, uint64_t alignment = 1) const {
    ReserveRequest r;
    r.size = size;
    r.alignment = alignment;
    r.token = queue.next_value();
    return r;
  }
  /// reserve() that must succeed; fills the bytes with random data.
  Reservation take(const ReserveRequest& request) {
    auto r = reserve(request);
    EXPECT_TRUE(r.has_value()) << (r ? "" : describe(r.error()));
    if (!r) return {};
    fill(*r);
    return *r;
  }
  Reservation take(uint64_t size, uint64_t alignment = 1) { return take(req(size, alignment)); }

  static uint8_t byte_at(uint64_t seed, uint64_t i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return static_cast<uint8_t>(x * 0x94D049BB133111EBull >> 56);
  }
  void fill(const Reservation& r) {
    const uint64_t seed = next_seed++;
    seeds[r.id] = seed;
    written[r.id] = r;
    std::byte* p = allocator.data(r.region) + r.offset;
    for (uint64_t i = 0; i < r.size; ++i)
      p[i] = std::byte{byte_at(seed, i)};
  }
  /// True when the reservation still holds the random bytes written into it.
  bool intact(const Reservation& r) {
    if (!allocator.live(r.region)) return false;
    const std::byte* p = allocator.data(r.region) + r.offset;
    for (uint64_t i = 0; i < r.size; ++i) {
      if (p[i] != std::byte{byte_at(seeds.at(r.id), i)}) return false;
    }
    return true;
  }
};

}  // namespace staging::test
