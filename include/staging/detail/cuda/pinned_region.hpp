// PinnedRegionAllocator's record of one live region: where its pinned bytes start, and how many.
//
// Threading: read and written under the allocator's lock.
#pragma once

#include <cstddef>
#include <cstdint>

namespace staging::cuda::detail {

/// One live pinned region.
struct PinnedRegion {
  std::byte* base = nullptr;
  uint64_t bytes = 0;
};

}  // namespace staging::cuda::detail
