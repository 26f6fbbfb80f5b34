// ByteRingDeps: everything a byte ring works with, the internal parts included — the clock the
// library's tests and simulator control, and staging-sim's Record-mode invariant checker — and
// create_byte_ring(), ByteRing::create with all of them given. Users call ByteRing::create.
#pragma once

#include "staging/core/byte_ring.hpp"

namespace staging::detail {

/// What a ring works with. The pointees must outlive the ring.
struct ByteRingDeps {
  RegionAllocator* allocator = nullptr;  ///< required
  /// Null: std::chrono::steady_clock.
  Clock* clock = nullptr;
  Observer* observer = nullptr;  ///< null: no timeline events
  /// Fed every operation whatever check_invariants says. Null: the ring makes its own Abort-mode
  /// checker when check_invariants is set, and runs none otherwise.
  InvariantChecker* checker = nullptr;
};

// create_byte_ring() is declared in staging/core/byte_ring.hpp (ByteRing befriends it). Errors:
// those of ByteRing::create, and MissingDependency (deps.allocator is null) before
// AllocationFailed.

}  // namespace staging::detail
