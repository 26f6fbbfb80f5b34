// FakeImage: an image in host memory that buffer-to-image copies can be played into, for host
// tests of code that cuts texture uploads (a stream's pieces, a frame's regions).
//
// It holds every level and layer of an ImageShape in the packed layout of upload_pieces.hpp
// (level by level, layer by layer, slice by slice, rows of texel blocks), and copy() applies one
// region from staging memory laid out as the region's TextureLayout says (its row pitch, slice and
// layer pitch) the way a GPU applies a buffer-to-image copy: so after the pieces of an upload are
// copied in, packed() equals the upload's source if and only if the pieces covered every block
// exactly where it belongs.
//
// Threading: not synchronised. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/upload_pieces.hpp"

namespace staging::testing {

/// See the file comment. A plain value.
class FakeImage {
 public:
  /// An image of `shape` (valid: image_bytes() succeeds; asserted), every byte set to `fill`.
  explicit FakeImage(const ImageShape& shape, std::byte fill = std::byte{0})
      : shape_(shape), bytes_(static_cast<std::size_t>(image_bytes(shape).value()), fill) {}

  /// Copies `region` from staging memory at `staging`, laid out as region.layout says (rows
  /// row_pitch apart, slices slice_pitch, layers layer_pitch), as a GPU's buffer-to-image copy
  /// with that row length and image height does. Precondition (asserted): the region lies inside
  /// the shape, on block boundaries (or reaching the level's edge), spanning whole rows.
  void copy(const std::byte* staging, const ImagePiece& region) {
    const LevelLayout level = level_layout(shape_, region.level).value();
    const TextureLayout& l = level.layout;
    const TextureLayout& r = region.layout;
    const TexelBlock& b = shape_.block;
    STAGING_ASSERT(region.x == 0 && region.width == l.extent.width, "FakeImage: partial rows");
    STAGING_ASSERT(region.y % b.height == 0 && region.z % b.depth == 0,
                   "FakeImage: off the block grid");
    STAGING_ASSERT(
        region.y + region.height <= l.extent.height && region.z + region.depth <= l.extent.depth,
        "FakeImage: past the level's edge");
    STAGING_ASSERT(region.base_layer >= shape_.base_layer &&
                       region.base_layer + region.layers <= shape_.base_layer + shape_.layers,
                   "FakeImage: layers outside the shape");
    STAGING_ASSERT(r.row_bytes == l.row_bytes && r.layers == region.layers,
                   "FakeImage: a layout that is not the region's");
    for (uint32_t layer = 0; layer < r.layers; ++layer) {
      for (uint32_t s = 0; s < r.slices; ++s) {
        for (uint32_t row = 0; row < r.rows; ++row) {
          const uint64_t dst =
              level.offset +
              (region.base_layer - shape_.base_layer + layer) * l.rows * l.slices * l.row_bytes +
              (region.z / b.depth + s) * l.rows * l.row_bytes +
              (region.y / b.height + row) * l.row_bytes;
          const uint64_t src = layer * r.layer_pitch + s * r.slice_pitch + row * r.row_pitch;
          std::memcpy(bytes_.data() + dst, staging + src, static_cast<std::size_t>(l.row_bytes));
        }
      }
    }
  }

  /// Every level and layer, in the packed layout.
  [[nodiscard]] std::span<const std::byte> packed() const noexcept { return bytes_; }
  /// One level (absolute index), every layer, in the packed layout.
  [[nodiscard]] std::span<const std::byte> level(uint32_t level) const {
    const LevelLayout l = level_layout(shape_, level).value();
    return std::span(bytes_).subspan(static_cast<std::size_t>(l.offset),
                                     static_cast<std::size_t>(l.layout.packed_bytes));
  }
  /// The shape it was made with.
  [[nodiscard]] const ImageShape& shape() const noexcept { return shape_; }

 private:
  ImageShape shape_;
  std::vector<std::byte> bytes_;
};

}  // namespace staging::testing
