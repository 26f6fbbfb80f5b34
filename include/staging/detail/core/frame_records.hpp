// The storage behind SharedFrame's placements: block records, their packed references, the
// per-thread stripes that hold both, and the merge that puts the references in offset order.
//
// A writer records its placements in a block record (up to N of them, all inside one of its
// blocks, in offset order) and, when it closes the record (moving to the next, or leaving),
// writes the record's count into the record and its reference (first offset, address) into its
// stripe's reference log. The owner reads only the
// references, packed, to order the records: one run per stripe, each already in offset order when
// one thread filled the stripe, merged pairwise.
//
// Threading: a record and its reference are written by the writer that claimed them; read once
// the frame's writers have left (a drained WriterGate).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "staging/detail/core/placement_log.hpp"

namespace staging::detail {

/// Up to N placements of one writer, inside one of its blocks, in offset order.
template <class Placement, uint32_t N>
struct FrameRecord {
  uint32_t count = 0;  ///< entries written (published when the writer closes the record)
  std::array<Placement, N> entries{};
};

/// Where a record is and the offset of its first placement (null record: never written).
template <class Record>
struct FrameRecordRef {
  uint64_t first = 0;
  const Record* record = nullptr;
};

/// One stripe of a frame's record log: the records one thread (usually) claims, in claim order,
/// and their references (the reference of record i at index i; claimed with it).
template <class Record>
struct FrameRecordStripe {
  explicit FrameRecordStripe(std::size_t first_segment) noexcept
      : log(first_segment), refs(first_segment) {}
  PlacementLog<Record> log;
  PlacementLog<FrameRecordRef<Record>> refs;
};

/// Bytes a writer took from the frame's cursor for one placement.
struct TakenBytes {
  uint64_t offset = 0;  ///< where the placement goes
  bool grown = false;   ///< the writer's current block was grown in place
};

/// Merges the sorted runs of `items` (run i starts at runs[i] and ends where the next starts, the
/// last at items.size()) pairwise until one is left: O(n log k) for k runs, or O(k) when the runs
/// already follow each other in order (each run's last item not after the next run's first, as
/// the runs of a frame laid out in lanes do): then nothing moves. `scratch` is the other buffer
/// (no allocation once it has grown to n). Runs may be empty. `runs` is left holding
/// {runs[0], n} (or {n} if it was empty).
template <class T, class Less>
void merge_sorted_runs(std::vector<T>& items, std::vector<std::size_t>& runs,
                       std::vector<T>& scratch, Less less) {
  const std::size_t n = items.size();
  runs.push_back(n);
  bool ordered = true;
  for (std::size_t r = 1; ordered && r + 1 < runs.size(); ++r) {
    if (runs[r] == runs[r + 1] || runs[r] == 0) continue;  // an empty run, or nothing before it
    ordered = !less(items[runs[r]], items[runs[r] - 1]);
  }
  if (ordered) {
    if (runs.size() > 2) runs.erase(runs.begin() + 1, runs.end() - 1);  // as the merges leave it
    return;
  }
  scratch.resize(n);
  while (runs.size() > 2) {
    const auto at = [&](std::size_t i) { return items.begin() + static_cast<std::ptrdiff_t>(i); };
    std::size_t kept = 0;
    for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
      const std::size_t mid = runs[r + 1];
      const std::size_t end = r + 2 < runs.size() ? runs[r + 2] : mid;
      std::merge(at(runs[r]), at(mid), at(mid), at(end),
                 scratch.begin() + static_cast<std::ptrdiff_t>(runs[r]), less);
      runs[kept++] = runs[r];
    }
    runs[kept++] = n;
    runs.resize(kept);
    items.swap(scratch);
  }
}

}  // namespace staging::detail
