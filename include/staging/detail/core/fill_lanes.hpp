// FillPool's queue records: a slice of a job a worker claimed, a lane's list of jobs, and the
// cache-line-padded counters each worker adds its copies to.
//
// Threading: FillSlice and FillLane are read and written under the pool's queue lock;
// CacheLinePadded<T> only separates T from its neighbours (T's own rules apply).
#pragma once

#include <cstdint>

namespace staging::detail {

class FillJob;

/// One slice of a job, claimed by one worker.
struct FillSlice {
  /// `lane` of a slice not counted against its lane's thread limit (FillJob::max_threads).
  static constexpr unsigned kUncounted = ~0u;
  FillJob* job = nullptr;
  uint64_t index = 0;
  unsigned lane = kUncounted;  ///< the lane whose limit it counts against
};

/// A lane's jobs with unclaimed slices, in submission order (an intrusive list).
struct FillLane {
  FillJob* head = nullptr;
  FillJob* tail = nullptr;
};

/// T on a cache line of its own (for counters only one thread adds to).
template <class T>
struct alignas(64) CacheLinePadded : T {};

}  // namespace staging::detail
