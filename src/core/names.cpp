// Names of the core's enums, for logs, tables and test output.
#include "staging/core/slot_state.hpp"
#include "staging/core/staging_allocator.hpp"
#include "staging/core/staging_ring.hpp"

namespace staging {

std::string_view to_string(SlotState state) noexcept {
  switch (state) {
    case SlotState::Empty:
      return "Empty";
    case SlotState::Ready:
      return "Ready";
    case SlotState::Recording:
      return "Recording";
    case SlotState::InFlight:
      return "InFlight";
    case SlotState::Abandoned:
      return "Abandoned";
    case SlotState::Failed:
      return "Failed";
  }
  return "?";
}

std::string_view to_string(AllocError error) noexcept {
  switch (error) {
    case AllocError::OutOfMemory:
      return "OutOfMemory";
    case AllocError::MapFailed:
      return "MapFailed";
    case AllocError::DeviceLost:
      return "DeviceLost";
    case AllocError::Other:
      return "Other";
  }
  return "?";
}

std::string_view to_string(ConfigError error) noexcept {
  switch (error) {
    case ConfigError::NoSlots:
      return "NoSlots";
    case ConfigError::MinNotPowerOfTwo:
      return "MinNotPowerOfTwo";
    case ConfigError::MaxBelowMin:
      return "MaxBelowMin";
  }
  return "?";
}

std::string_view to_string(Refusal refusal) noexcept {
  switch (refusal) {
    case Refusal::TooLarge:
      return "TooLarge";
    case Refusal::AllInFlight:
      return "AllInFlight";
    case Refusal::AllocationFailed:
      return "AllocationFailed";
  }
  return "?";
}

std::string_view to_string(FinishError error) noexcept {
  switch (error) {
    case FinishError::Inactive:
      return "Inactive";
    case FinishError::ForeignLease:
      return "ForeignLease";
  }
  return "?";
}

Expected<RingConfig, ConfigError> validate(const RingConfig& config) noexcept {
  if (config.slots == 0) return unexpected(ConfigError::NoSlots);
  if (!is_power_of_two(config.min_slot_bytes)) return unexpected(ConfigError::MinNotPowerOfTwo);
  if (config.max_slot_bytes < config.min_slot_bytes) return unexpected(ConfigError::MaxBelowMin);
  return config;
}

}  // namespace staging
