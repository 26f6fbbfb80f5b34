#include "staging/core/byte_ring.hpp"
#include "staging/core/slot_ring.hpp"

namespace staging {

std::string format_stats(const StagingStats& stats) {
  return format_counters(stats);
}

std::string format_stats(const ByteRingStats& stats) {
  return format_counters(stats);
}

}  // namespace staging
