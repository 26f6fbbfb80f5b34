// FakeImage: an image in host memory that buffer-to-image copies can be played into, for host
// tests of code that cuts texture uploads (a stream's pieces, a frame's regions).
//
// It holds every level and layer of an ImageShape in the packed layout of upload_pieces.hpp
// (level by level, layer by layer, slice by slice, rows of texel blocks), and copy() applies one
// region the way a GPU applies a buffer-to-image copy whose buffer rows are tightly packed (row
// length = the region's width, image height = the region's height): so after the pieces of an
// upload are copied in, packed() equals the upload's source if and only if the pieces covered
// every block exactly where it belongs.
//
// Threading: not synchronised. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "staging/core/assert.hpp"
#include "staging/core/upload_pieces.hpp"

namespace staging::testing {

/// See the file comment. A plain value.
class FakeImage {
 public:
  /// An image of `shape` (valid: image_bytes() succeeds; asserted), every byte set to `fill`.
  explicit FakeImage(const ImageShape& shape, std::byte fill = std::byte{0})
      : shape_(shape), bytes_(static_cast<std::size_t>(image_bytes(shape).value()), fill) {}

  /// Copies `region` from `src`, which holds the region's blocks tightly packed (as a piece's
  /// staging bytes). Precondition (asserted): the region lies inside the shape, on block
  /// boundaries (or reaching the level's edge), spanning whole rows.
  void copy(const std::byte* src, const ImagePiece& region) {
    const LevelLayout l = level_layout(shape_, region.level).value();
    const BlockShape& b = shape_.block;
    STAGING_ASSERT(region.x == 0 && region.width == l.width, "FakeImage: partial rows");
    STAGING_ASSERT(region.y % b.height == 0 && region.z % b.depth == 0,
                   "FakeImage: off the block grid");
    STAGING_ASSERT(region.y + region.height <= l.height && region.z + region.depth <= l.depth,
                   "FakeImage: past the level's edge");
    STAGING_ASSERT(region.base_layer >= shape_.base_layer &&
                       region.base_layer + region.layers <= shape_.base_layer + shape_.layers,
                   "FakeImage: layers outside the shape");
    const uint32_t rows = (region.height + b.height - 1) / b.height;
    const uint32_t slices = (region.depth + b.depth - 1) / b.depth;
    STAGING_ASSERT(region.height == rows * b.height || region.y + region.height == l.height,
                   "FakeImage: a partial block row that does not reach the edge");
    for (uint32_t layer = 0; layer < region.layers; ++layer) {
      for (uint32_t s = 0; s < slices; ++s) {
        for (uint32_t r = 0; r < rows; ++r) {
          const uint64_t dst =
              l.offset + (region.base_layer - shape_.base_layer + layer) * l.layer_bytes +
              (region.z / b.depth + s) * l.slice_bytes + (region.y / b.height + r) * l.row_bytes;
          std::memcpy(bytes_.data() + dst, src, static_cast<std::size_t>(l.row_bytes));
          src += l.row_bytes;
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
                                     static_cast<std::size_t>(l.bytes));
  }
  /// The shape it was made with.
  [[nodiscard]] const ImageShape& shape() const noexcept { return shape_; }

 private:
  ImageShape shape_;
  std::vector<std::byte> bytes_;
};

}  // namespace staging::testing
