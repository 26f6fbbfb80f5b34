// ByteCheck: the simulator's byte-level proof of I1/I4. Every reservation gets stamps — 8-byte
// values derived from its id, written at its first byte, every 4 KiB (every 1/256 of it when it
// is larger than 1 MiB: at most 258 stamps, whatever its size), and its last 8 bytes — into the
// real memory it was given. When the queue really completes its token (what
// the GPU read is final), the stamps are verified: a stamp that changed means another reservation
// wrote into bytes a queued copy was still reading.
//
// Cheap enough for every run (a few stores per reservation). Stamps never write outside
// [offset, offset + size) of the reservation.
// Threading: not synchronised; the simulator's thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "staging/core/timeline.hpp"

namespace staging::sim {

class ByteCheck {
 public:
  /// Where region `region`'s memory starts now, or null when it no longer exists.
  using Resolve = std::function<std::byte*(uint32_t region)>;

  /// Writes the stamps of reservation `id` (payload [offset, offset + size) of `region`, whose
  /// memory starts at `base`) and remembers it until its token completes.
  void add(uint64_t id, TimelineValue token, uint32_t region, uint64_t offset, uint64_t size,
           std::byte* base) {
    for_each_stamp(size, [&](uint64_t pos, std::size_t n) {
      const uint64_t v = stamp(id, pos);
      std::memcpy(base + offset + pos, &v, n);
    });
    pending_.push_back(Entry{id, token, region, offset, size});
  }

  /// Verifies every remembered reservation whose token is <= `completed` (tokens arrive in
  /// non-decreasing order) and forgets it. Returns a message per corrupted reservation.
  std::vector<std::string> verify_through(TimelineValue completed, const Resolve& resolve) {
    std::vector<std::string> bad;
    while (!pending_.empty() && pending_.front().token <= completed) {
      verify(pending_.front(), resolve, &bad);
      pending_.pop_front();
    }
    return bad;
  }

  /// Verifies and forgets every remembered reservation in `region` (its memory is about to go).
  std::vector<std::string> verify_region(uint32_t region, const Resolve& resolve) {
    std::vector<std::string> bad;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->region == region) {
        verify(*it, resolve, &bad);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    return bad;
  }

  /// Forgets everything (the memory is gone without a final read).
  void clear() noexcept { pending_.clear(); }

  [[nodiscard]] uint64_t checked() const noexcept { return checked_; }
  [[nodiscard]] uint64_t corrupted() const noexcept { return corrupted_; }

 private:
  struct Entry {
    uint64_t id;
    TimelineValue token;
    uint32_t region;
    uint64_t offset;
    uint64_t size;
  };
  static constexpr uint64_t kStride = 4096;

  // splitmix64 of the id and position: distinct per reservation and place, never all zeros.
  static uint64_t stamp(uint64_t id, uint64_t pos) noexcept {
    uint64_t z = id * 0x9E3779B97F4A7C15ull + pos + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Calls f(pos, n) for every stamp: n <= 8 bytes at pos, all inside [0, size).
  // Stamps never overlap each other.
  template <class F>
  static void for_each_stamp(uint64_t size, F&& f) {
    if (size < 8) {
      f(0, static_cast<std::size_t>(size));
      return;
    }
    uint64_t last = 0;
    const uint64_t stride = std::max(kStride, size / 256);
    for (uint64_t pos = 0; pos + 8 <= size; pos += stride) {
      f(pos, 8);
      last = pos;
    }
    if (size - 8 >= last + 8) f(size - 8, 8);
  }
  void verify(const Entry& e, const Resolve& resolve, std::vector<std::string>* bad) {
    std::byte* base = resolve(e.region);
    if (base == nullptr) return;
    ++checked_;
    bool ok = true;
    uint64_t where = 0;
    for_each_stamp(e.size, [&](uint64_t pos, std::size_t n) {
      const uint64_t want = stamp(e.id, pos);
      if (ok && std::memcmp(base + e.offset + pos, &want, n) != 0) {
        ok = false;
        where = e.offset + pos;
      }
    });
    if (ok) return;
    ++corrupted_;
    bad->push_back("byte check: reservation #" + std::to_string(e.id) + " (region " +
                   std::to_string(e.region) + ", bytes [" + std::to_string(e.offset) + ", " +
                   std::to_string(e.offset + e.size) + "), token " + std::to_string(e.token) +
                   ") was overwritten at byte " + std::to_string(where) +
                   " before the GPU finished reading it");
  }

  std::deque<Entry> pending_;
  uint64_t checked_ = 0;
  uint64_t corrupted_ = 0;
};

}  // namespace staging::sim
