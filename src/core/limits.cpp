#include "staging/detail/core/limits.hpp"

#include "staging/detail/core/align.hpp"

namespace staging {

std::optional<uint64_t> texture_offset_alignment(const CopyLimits& limits,
                                                 uint64_t block_bytes) noexcept {
  return lcm(limits.texture_copy_alignment, block_bytes);
}

std::optional<uint64_t> slot_capacity(uint64_t needed) noexcept {
  return slot_capacity(needed, MIN_SLOT_BYTES, MAX_SLOT_BYTES);
}

std::optional<uint64_t> slot_capacity(uint64_t needed, uint64_t min_bytes,
                                      uint64_t max_bytes) noexcept {
  if (needed > max_bytes) return std::nullopt;
  if (needed <= min_bytes) return min_bytes;
  const std::optional<uint64_t> pow2 = next_power_of_two(needed);
  if (!pow2 || *pow2 > max_bytes) return std::nullopt;
  return pow2;
}

}  // namespace staging
