// StagingAllocator: creates the buffers slots are made of. Backends implement it over their
// API (a mapped VkBuffer, a MAP_WRITE WebGPU buffer); tests implement it with a fake. Part of the
// slot ring's engine (staging_ring.hpp), not of the API.
#pragma once

#include <cstdint>

#include "staging/core/errors.hpp"

namespace staging {

/// Creates slot buffers of type `Buffer` for a StagingRing<Buffer>.
///
/// `Buffer` is a movable value type that owns the API objects and releases them in its
/// destructor; it must offer `uint64_t capacity() const`. The ring destroys a buffer only in a
/// slot that is Ready, Abandoned or Failed. An Abandoned slot's frame may have been submitted if
/// its FenceToken was dropped unfired after submission: a backend that lets that happen defers
/// the release in Buffer's destructor until the GPU is done with the buffer (as WebGPU's runtime
/// does); so may a backend whose API needs deferred destruction for other reasons.
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
