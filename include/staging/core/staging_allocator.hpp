// StagingAllocator: creates the buffers slots are made of. Backends implement it over their
// API (a mapped VkBuffer, a MAP_WRITE WebGPU buffer); tests implement it with a fake.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "staging/core/expected.hpp"
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

/// Creates slot buffers of type `Buffer` for a StagingRing<Buffer>.
///
/// `Buffer` is a movable value type that owns the API objects and releases them in its
/// destructor; it must offer `uint64_t capacity() const`. The ring destroys a buffer only when
/// no frame can still read it (Ready, Abandoned or Failed slots) — but a backend whose API needs
/// deferred destruction even then may defer it in Buffer's destructor.
///
/// Threading: called only from the thread that calls StagingRing::begin().
template <class Buffer>
class StagingAllocator {
 public:
  virtual ~StagingAllocator() = default;
  /// Creates one buffer of exactly `capacity` bytes (a power of two between the ring's min and
  /// max slot bytes), usable as a copy source and writable by the CPU. May fail; must not throw.
  virtual Expected<Buffer, AllocError> create(uint64_t capacity) = 0;
};

}  // namespace staging
