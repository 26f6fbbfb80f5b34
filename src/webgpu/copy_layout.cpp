#include "staging/detail/webgpu/copy_layout.hpp"

#include "staging/detail/core/align.hpp"

namespace staging::webgpu {

std::optional<uint64_t> upload_footprint(uint64_t size, uint64_t alignment) noexcept {
  const std::optional<uint64_t> rounded = align_up(size, MAP_SIZE_ALIGNMENT);
  if (!rounded) return std::nullopt;
  return checked_add(*rounded, alignment == 0 ? 0 : alignment - 1);
}

}  // namespace staging::webgpu
