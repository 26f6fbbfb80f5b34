// Texel blocks: how a VkFormat's data is laid out in a buffer for a buffer-to-image copy, and the
// offset alignment such a copy needs (invariant I2). Pure functions, safe from any thread. Used by
// the frame, shared uploads and the streamer to check and lay out image uploads; not API.
//
// Rules (Vulkan spec, "Copying Data Between Buffers and Images"):
//   - bufferOffset is a multiple of the texel block size of the format (of the aspect copied);
//     for depth/stencil formats it is a multiple of 4 instead.
//   - block-compressed formats (BC, ETC2/EAC, ASTC) are copied in whole blocks: the image offset
//     is a multiple of the block extent, and the buffer holds ceil(w/bw) x ceil(h/bh) blocks.
//   - a depth/stencil image is copied one aspect at a time; the buffer holds that aspect only
//     (D24 depth as 4 bytes, stencil as 1 byte).
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "staging/core/errors.hpp"
#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging::vulkan {

/// Why a format/aspect pair cannot be staged.
enum class FormatError : uint8_t {
  /// VK_FORMAT_UNDEFINED, a multi-planar or packed 4:2:2 format, or one this table does not know.
  Unsupported,
  /// The aspect is not exactly one aspect the format has (e.g. COLOR of a depth format, or
  /// DEPTH|STENCIL together: a copy moves one aspect at a time).
  BadAspect,
};

/// Names of FormatError's values, in order (staging::to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<FormatError>) noexcept {
  return std::to_array<std::string_view>({"Unsupported", "BadAspect"});
}
static_assert(enum_names_complete<FormatError>(), "FormatError: a value has no name");

/// The texel block of `format`'s `aspect` (staging::TexelBlock; offset_alignment is the block's
/// bytes for colour formats, 4 for depth/stencil). An aspect of 0 means "the only aspect": COLOR
/// for colour formats, DEPTH or STENCIL for depth-only or stencil-only formats; combined
/// depth/stencil formats need the aspect named.
/// Covers every core 1.0 format that is not multi-planar (including BC, ETC2/EAC and ASTC LDR),
/// ASTC HDR and the 4444 formats.
[[nodiscard]] Expected<TexelBlock, FormatError> texel_block(VkFormat format,
                                                            VkImageAspectFlags aspect = 0) noexcept;

/// True for formats with a depth or stencil aspect.
[[nodiscard]] bool is_depth_stencil(VkFormat format) noexcept;

/// The aspect texel_block() uses when given 0: COLOR, DEPTH, STENCIL, or 0 when the format has
/// both depth and stencil (the caller must choose) or is unsupported.
[[nodiscard]] VkImageAspectFlags default_aspect(VkFormat format) noexcept;

/// The staging offset alignment of a copy into an image on this device, before the format's block
/// rule: lcm(optimalBufferCopyOffsetAlignment, 4). A multiple of 4 is what a copy to an image
/// needs on a queue without graphics or compute (VUID-vkCmdCopyBufferToImage-commandBuffer-07737),
/// such as the dedicated transfer queue a streamer is best given.
[[nodiscard]] uint64_t image_copy_alignment(const VkPhysicalDeviceLimits& limits) noexcept;

}  // namespace staging::vulkan
