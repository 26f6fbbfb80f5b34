// staging-fuzz-destination: libFuzzer over the Vulkan backend's destination checks
// (check_destination for BufferDestination and ImageDestination). Random descriptions × random
// regions; the property: a region the check accepts never writes outside the described destination.
// What a region touches is computed here independently of the check, in 128-bit arithmetic: for a
// buffer, the byte range; for an image, the texel box (inside the mip level's extent, whose
// block-aligned edges it may only cross at the level's edge), the subresources (mip level, array
// layers), and the byte range of its texel blocks in the tightly packed subresource, which must
// end inside it. Any violation aborts with the case printed.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "staging/detail/vulkan/format.hpp"
#include "staging/vulkan/frame.hpp"

namespace {

using staging::vulkan::BufferDestination;
using staging::vulkan::check_destination;
using staging::vulkan::ImageDestination;
using staging::vulkan::ImageRegion;
using u128 = unsigned __int128;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "destination check accepted a region outside its destination: %s\n", what);
  std::abort();
}

void fuzz_buffer(FuzzedDataProvider& in) {
  const auto small = [&] { return in.ConsumeIntegralInRange<uint64_t>(0, 1 << 20); };
  const BufferDestination target{reinterpret_cast<VkBuffer>(std::uintptr_t{0x10}),
                                 in.ConsumeBool() ? small() : in.ConsumeIntegral<uint64_t>()};
  const uint64_t offset = in.ConsumeBool() ? small() : in.ConsumeIntegral<uint64_t>();
  const uint64_t size = in.ConsumeBool() ? small() : in.ConsumeIntegral<uint64_t>();
  if (!check_destination(target, offset, size)) return;
  if (size == 0) fail("an empty buffer range");
  if (u128{offset} + size > target.size) fail("bytes past the buffer's size");
}

constexpr VkFormat kFormats[] = {
    VK_FORMAT_R8G8B8A8_UNORM,
    VK_FORMAT_R32G32B32A32_SFLOAT,
    VK_FORMAT_R32G32B32_SFLOAT,
    VK_FORMAT_R8_UNORM,
    VK_FORMAT_BC1_RGBA_UNORM_BLOCK,
    VK_FORMAT_BC7_UNORM_BLOCK,
    VK_FORMAT_ASTC_8x8_UNORM_BLOCK,
    VK_FORMAT_D16_UNORM,
    VK_FORMAT_D24_UNORM_S8_UINT,
    VK_FORMAT_D32_SFLOAT_S8_UINT,
    VK_FORMAT_UNDEFINED,
    VK_FORMAT_G8_B8R8_2PLANE_420_UNORM,
};
constexpr VkImageAspectFlags kAspects[] = {0, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_ASPECT_DEPTH_BIT,
                                           VK_IMAGE_ASPECT_STENCIL_BIT,
                                           VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT};

uint32_t dimension(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      return in.ConsumeIntegralInRange<uint32_t>(0, 16);
    case 1:
      return in.ConsumeIntegralInRange<uint32_t>(0, 4096);
    default:
      return in.ConsumeIntegral<uint32_t>();
  }
}

// Mostly near the mip level's edge (where the mistakes are), sometimes anywhere.
int32_t coordinate(FuzzedDataProvider& in, uint32_t level) {
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) return in.ConsumeIntegral<int32_t>();
  const int64_t v = in.ConsumeIntegralInRange<int64_t>(-2, int64_t{level} + 2);
  return static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX));
}
uint32_t length(FuzzedDataProvider& in, uint32_t level, int32_t offset) {
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) return dimension(in);
  const int64_t left = int64_t{level} - std::max<int32_t>(offset, 0);
  const int64_t v = in.ConsumeIntegralInRange<int64_t>(0, std::max<int64_t>(left, 0) + 5);
  return static_cast<uint32_t>(std::min<int64_t>(v, UINT32_MAX));
}

void fuzz_image(FuzzedDataProvider& in) {
  const VkImage image = reinterpret_cast<VkImage>(std::uintptr_t{0x20});
  ImageDestination target;
  target.image = image;
  target.format = in.PickValueInArray(kFormats);
  target.extent = {dimension(in), dimension(in), in.ConsumeBool() ? 1u : dimension(in)};
  target.mip_levels = in.ConsumeIntegralInRange<uint32_t>(0, in.ConsumeBool() ? 4 : 34);
  target.array_layers =
      in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(0, 8) : in.ConsumeIntegral<uint32_t>();
  ImageRegion r;
  const int which = in.ConsumeIntegralInRange<int>(0, 3);
  r.image = which == 0   ? VK_NULL_HANDLE
            : which == 1 ? reinterpret_cast<VkImage>(std::uintptr_t{0x30})
                         : image;
  r.format = in.ConsumeBool()
                 ? target.format
                 : (in.ConsumeBool() ? VK_FORMAT_UNDEFINED : in.PickValueInArray(kFormats));
  r.aspect = in.PickValueInArray(kAspects);
  r.mip_level = in.ConsumeIntegralInRange<uint32_t>(0, in.ConsumeBool() ? 3 : 40);
  r.base_layer =
      in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(0, 8) : in.ConsumeIntegral<uint32_t>();
  r.layer_count =
      in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(0, 8) : in.ConsumeIntegral<uint32_t>();
  const uint32_t mip = std::min<uint32_t>(r.mip_level, 31);
  const uint32_t level_w = std::max<uint32_t>(1, target.extent.width >> mip);
  const uint32_t level_h = std::max<uint32_t>(1, target.extent.height >> mip);
  const uint32_t level_d = std::max<uint32_t>(1, target.extent.depth >> mip);
  r.offset = {coordinate(in, level_w), coordinate(in, level_h), coordinate(in, level_d)};
  r.extent = {length(in, level_w, r.offset.x), length(in, level_h, r.offset.y),
              length(in, level_d, r.offset.z)};
  if (!check_destination(target, r)) return;

  // Accepted: check it against the description, computed here from scratch.
  if (r.image != VK_NULL_HANDLE && r.image != image) fail("another image");
  if (r.format != VK_FORMAT_UNDEFINED && r.format != target.format) fail("another format");
  const auto block = staging::vulkan::texel_block(target.format, r.aspect);
  if (!block) fail("a format or aspect without a texel block");
  if (r.mip_level >= target.mip_levels) fail("a mip level the image does not have");
  if (r.layer_count == 0 || u128{r.base_layer} + r.layer_count > target.array_layers)
    fail("array layers the image does not have");
  const uint32_t level[3] = {
      r.mip_level >= 32 ? 1 : std::max<uint32_t>(1, target.extent.width >> r.mip_level),
      r.mip_level >= 32 ? 1 : std::max<uint32_t>(1, target.extent.height >> r.mip_level),
      r.mip_level >= 32 ? 1 : std::max<uint32_t>(1, target.extent.depth >> r.mip_level)};
  const int64_t begin[3] = {r.offset.x, r.offset.y, r.offset.z};
  const uint32_t extent[3] = {r.extent.width, r.extent.height, r.extent.depth};
  const uint32_t bdim[3] = {block->width, block->height, block->depth};
  u128 blocks_in_level[3], last_block[3];
  for (int d = 0; d < 3; ++d) {
    if (begin[d] < 0) fail("a negative offset");
    if (extent[d] == 0) fail("an empty extent");
    const u128 end = static_cast<u128>(begin[d]) + extent[d];
    if (end > level[d]) fail("texels past the mip level's extent");
    if (static_cast<u128>(begin[d]) % bdim[d] != 0) fail("an offset inside a texel block");
    if (end != level[d] && end % bdim[d] != 0) fail("an interior edge inside a texel block");
    blocks_in_level[d] = (u128{level[d]} + bdim[d] - 1) / bdim[d];
    last_block[d] = (end + bdim[d] - 1) / bdim[d] - 1;
    if (last_block[d] >= blocks_in_level[d]) fail("a texel block past the mip level");
  }
  // The last byte written, in the tightly packed subresource range of the level's layers (the
  // sizes stay below 2^96 · 2^32: no 128-bit overflow).
  const u128 row = blocks_in_level[0] * block->bytes;
  const u128 slice = row * blocks_in_level[1];
  const u128 layer = slice * blocks_in_level[2];
  if (layer >= (u128{1} << 95)) return;  // a level of more than 2^95 bytes: not representable
  const u128 last_layer = u128{r.base_layer} + r.layer_count - 1;
  const u128 end_byte = last_layer * layer + last_block[2] * slice + last_block[1] * row +
                        (last_block[0] + 1) * block->bytes;
  if (end_byte > layer * target.array_layers) fail("bytes past the subresources");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  while (in.remaining_bytes() > 0) {
    if (in.ConsumeBool()) {
      fuzz_buffer(in);
    } else {
      fuzz_image(in);
    }
  }
  return 0;
}
