// WriterGate: counts the threads writing into one piece of staging memory, and seals it.
//
// The protocol of a frame (or any batch) that several threads write into at once:
//
//   owner:    open() ............................ seal() ── wait_drained() or a hand-off ── open()
//   writer A:        enter() ── write ── leave()
//   writer B:                enter() ──── write ──── leave()     <- the last writer after the seal
//   writer C:                                 enter() refused (sealed)
//
// A writer enters before it writes and leaves when its bytes are complete; seal() closes the gate
// to new writers and says how many are still inside. The gate is *drained* once it is sealed and
// no writer is inside: only then may the owner read (or have the GPU copy) what the writers wrote.
// Exactly one party observes the moment the gate drains — seal() when no writer was inside, else
// the leave() of the last writer — so either the owner waits for it (bounded, wait_drained()) or
// the last writer is told and hands the batch on (the "last writer seals" shape of upload pages).
//
// Cost: enter() is one compare-and-swap, leave() one atomic decrement; no lock is taken except by
// the last writer leaving a sealed gate (to wake a waiting owner). One cache line of state.
//
// Memory order: everything a writer wrote before its leave() is visible to the thread that then
// sees the gate drained (wait_drained(), seal() returning 0, or the last leave() returning true);
// everything the owner wrote before open() is visible to the writers that enter after it.
//
// Threading: enter()/leave() from any thread, concurrently with each other and with seal(),
// writers() and wait_drained(); open() and seal() from the owner's thread (one at a time).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "staging/core/timeline.hpp"

namespace staging {

/// See the file comment. Starts sealed and drained (closed): open() admits writers.
/// Not movable (writers and waiters refer to it by address).
class WriterGate {
 public:
  /// A closed gate (sealed, no writer): enter() is refused until open().
  WriterGate() noexcept = default;
  WriterGate(const WriterGate&) = delete;
  WriterGate& operator=(const WriterGate&) = delete;

  /// Admits writers. Precondition (asserted): the gate is drained (sealed with no writer inside,
  /// e.g. freshly made); opening a gate that writers are still inside would let them write into
  /// the next batch. Owner's thread.
  void open() noexcept;

  /// Enters as a writer: true when admitted (the caller must call leave() exactly once later),
  /// false when the gate is sealed (nothing changed; the caller is not a writer). Also false when
  /// 2^31 - 1 writers are already inside. Lock-free; any thread.
  [[nodiscard]] bool enter() noexcept;

  /// Leaves as a writer (precondition: entered and not yet left; asserted when no writer is
  /// inside). Returns true when this call drained a sealed gate — exactly one leave() per seal
  /// does, when seal() found writers inside — so the caller now holds the batch (it may read and
  /// hand it on, as the owner would after wait_drained()). Any thread.
  bool leave() noexcept;

  /// Seals the gate (later enter() calls are refused) and returns how many writers were inside at
  /// that moment: 0 means the gate is drained now and the caller holds the batch; otherwise the
  /// last of them to leave() is told so. Sealing a sealed gate changes nothing and returns the
  /// writers inside (a second seal never hands the batch out twice: 0 then means "drained", not
  /// "you hold it" — see drained()). Owner's thread.
  uint32_t seal() noexcept;

  /// Waits until the gate is drained or `timeout` passes (negative: 0, which checks once), and
  /// returns drained(). Precondition: sealed (an open gate never drains; returns false at
  /// once). Sleeps on a condition variable; woken by the last leave(). Any thread, typically the
  /// owner's after seal().
  [[nodiscard]] bool wait_drained(Duration timeout);

  /// Writers inside now (a snapshot; may change at once unless the gate is drained).
  [[nodiscard]] uint32_t writers() const noexcept;
  /// True once seal() (or the initial state) closed the gate, until open().
  [[nodiscard]] bool sealed() const noexcept;
  /// Sealed with no writer inside: what the writers wrote is complete and stays so until open().
  [[nodiscard]] bool drained() const noexcept;

 private:
  static constexpr uint64_t kSealed = uint64_t{1} << 63;
  static constexpr uint64_t kCountMask = (uint64_t{1} << 31) - 1;

  // Bit 63: sealed; bits 0..30: writers inside.
  alignas(64) std::atomic<uint64_t> state_{kSealed};
  std::mutex mutex_;            // only for the sleep of wait_drained()
  std::condition_variable cv_;  // notified by the leave() that drains a sealed gate
};

}  // namespace staging
