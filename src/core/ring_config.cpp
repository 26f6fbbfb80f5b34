// StagingRingConfig validation.
#include "staging/core/slot_ring.hpp"
#include "staging/detail/core/staging_allocator.hpp"
#include "staging/detail/core/staging_ring.hpp"

namespace staging {

Expected<StagingRingConfig, CreateError> validate(const StagingRingConfig& config) noexcept {
  if (config.slots == 0) return unexpected(CreateError::NoSlots);
  if (config.slots > STAGING_SLOTS_LIMIT) return unexpected(CreateError::TooManySlots);
  if (!is_power_of_two(config.min_slot_bytes)) return unexpected(CreateError::MinNotPowerOfTwo);
  if (config.max_slot_bytes < config.min_slot_bytes) return unexpected(CreateError::MaxBelowMin);
  if (config.max_slot_bytes > SLOT_BYTES_LIMIT) return unexpected(CreateError::SlotTooLarge);
  return config;
}

}  // namespace staging
