// Texel blocks of Vulkan formats, from their names as GFXReconstruct writes them
// ("VK_FORMAT_R8G8B8A8_UNORM"): how many bytes a buffer-to-image copy reads per block, and the
// block's width and height in texels. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace staging::sim {

/// A format's texel block as a copy's buffer side lays it out.
struct TexelBlock {
  uint32_t bytes = 0;
  uint32_t width = 1;
  uint32_t height = 1;
};

/// The texel block of format `name` for the copied `aspect` (VkImageAspectFlags: 1 color,
/// 2 depth, 4 stencil). Uncompressed formats: the bits their name lists (R8G8B8A8: 4 bytes;
/// "_PACKnn" formats: nn bits); for a depth/stencil format, the depth aspect alone (D24 and D32:
/// 4 bytes, D16: 2) or the stencil alone (1 byte). Block-compressed formats: BC1-BC7, ETC2/EAC,
/// ASTC (16 bytes per block, the block's size from the name). None for anything else, e.g.
/// multi-planar (G8_B8R8_2PLANE) or unknown formats.
[[nodiscard]] std::optional<TexelBlock> texel_block(std::string_view name, uint32_t aspect);

}  // namespace staging::sim
