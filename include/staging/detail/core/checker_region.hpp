// InvariantChecker's model of one region: its size and the intervals live in it.
//
// Threading: the checker's (one thread at a time).
#pragma once

#include <cstdint>
#include <map>

namespace staging::detail {

/// What InvariantChecker knows of one region.
struct CheckerRegion {
  uint64_t bytes = 0;
  uint64_t max_size = 0;                        ///< longest interval ever live in it
  std::multimap<uint64_t, uint64_t> by_offset;  ///< offset -> id of live intervals
};

}  // namespace staging::detail
