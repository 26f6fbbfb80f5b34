// StagingRingConfig validation.
#include "staging/core/slot_ring.hpp"
#include "staging/detail/core/staging_allocator.hpp"
#include "staging/detail/core/staging_ring.hpp"

namespace staging {

Expected<StagingRingConfig, ConfigError> validate(const StagingRingConfig& config) noexcept {
  if (config.slots == 0) return unexpected(ConfigError::NoSlots);
  if (config.slots > STAGING_SLOTS_LIMIT) return unexpected(ConfigError::TooManySlots);
  if (!is_power_of_two(config.min_slot_bytes)) return unexpected(ConfigError::MinNotPowerOfTwo);
  if (config.max_slot_bytes < config.min_slot_bytes) return unexpected(ConfigError::MaxBelowMin);
  if (config.max_slot_bytes > SLOT_BYTES_LIMIT) return unexpected(ConfigError::SlotTooLarge);
  return config;
}

}  // namespace staging
