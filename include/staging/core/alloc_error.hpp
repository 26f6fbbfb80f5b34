// AllocError: why staging memory could not be created — the one answer of every allocator the
// rings call (a RegionAllocator's regions, a Vulkan MemoryHook's buffers, the slot ring's slots).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "staging/detail/core/enum_names.hpp"

namespace staging {

/// Why a buffer could not be created.
enum class AllocError : uint8_t {
  /// The device or host is out of memory, or a configured budget refuses the request.
  OutOfMemory,
  /// The buffer was created but could not be mapped.
  MapFailed,
  /// The device was lost.
  DeviceLost,
  /// Anything else the backend reports (its own log/stats say more).
  Other,
};

/// Names of AllocError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<AllocError>) noexcept {
  return std::to_array<std::string_view>({"OutOfMemory", "MapFailed", "DeviceLost", "Other"});
}
static_assert(enum_names_complete<AllocError>(), "AllocError: a value has no name");

}  // namespace staging
