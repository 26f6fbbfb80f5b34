// Cutting an upload of any size into pieces that each fit the staging memory free right now.
//
// An upload's source is tightly packed: a buffer's bytes; an image's texel blocks level by level
// (from its first level to its last), in each level layer by layer, in each layer depth slice by
// slice, in each slice row of blocks by row — the layout of a KTX-style file without padding.
// A piece is a contiguous range of that source that is also one valid copy region:
//
//   buffer:  bytes [o, o + n)                                  (cut anywhere, in `granule` steps)
//   image:   a whole level (all its layers)                    when the budget holds it
//            else whole layers of one level
//            else whole depth slices of one layer              (3D images)
//            else rows of texel blocks of one slice            (block-compressed: block rows)
//
//   level 0 of a 2-layer image, budget of 3 rows:   layer 0 [r0 r1 r2][r3 r4 r5][r6]
//                                                   layer 1 [r0 r1 r2][r3 r4 r5][r6]
//   level 1 (fits whole):                           [layer 0 + layer 1]
//
// The piece is copied to the staging memory as it is (rows stay tightly packed: a copy's row
// length is the region's width), so one memcpy fills it. PieceCursor walks an upload from its
// first piece to its last; next() cuts the largest piece the budget holds.
//
// Pure: no allocation, no shared state; safe from any thread on distinct cursors.
#pragma once

#include <cstdint>
#include <optional>

#include "staging/core/enum_names.hpp"
#include "staging/core/expected.hpp"

namespace staging {

/// A texel block as laid out in a buffer: `bytes` per block of width × height × depth texels
/// (1 × 1 × 1 for uncompressed formats, 4 × 4 × 1 for BC and ETC2).
struct BlockShape {
  uint32_t bytes = 0;   ///< bytes per block (> 0)
  uint32_t width = 1;   ///< texels (>= 1)
  uint32_t height = 1;  ///< texels (>= 1)
  uint32_t depth = 1;   ///< texels (>= 1)
};

/// The subresources of an image an upload writes: levels [base_level, base_level + levels) of an
/// image whose level 0 is width × height × depth texels, layers [base_layer, base_layer +
/// layers). Level L is max(1, width >> L) × max(1, height >> L) × max(1, depth >> L) texels.
struct ImageShape {
  BlockShape block;         ///< the format's texel block (of the aspect uploaded)
  uint32_t width = 0;       ///< level 0's width in texels (> 0)
  uint32_t height = 1;      ///< level 0's height in texels (> 0)
  uint32_t depth = 1;       ///< level 0's depth in texels (> 0; 1 for 2D images)
  uint32_t base_level = 0;  ///< the first level written
  uint32_t levels = 1;      ///< levels written (>= 1; base_level + levels <= 32)
  uint32_t base_layer = 0;  ///< the first array layer written
  uint32_t layers = 1;      ///< array layers written (>= 1)
};

/// The size of one level of an image in blocks, and of its packed source.
struct LevelLayout {
  uint32_t width = 0;        ///< texels
  uint32_t height = 0;       ///< texels
  uint32_t depth = 0;        ///< texels
  uint64_t row_bytes = 0;    ///< bytes of one row of blocks
  uint32_t rows = 0;         ///< rows of blocks per depth slice
  uint32_t slices = 0;       ///< depth slices of blocks per layer
  uint64_t slice_bytes = 0;  ///< row_bytes × rows
  uint64_t layer_bytes = 0;  ///< slice_bytes × slices
  uint64_t bytes = 0;        ///< layer_bytes × the shape's layers
  uint64_t offset = 0;       ///< where the level starts in the packed source
};

/// Why an upload's shape is unusable.
enum class ShapeError : uint8_t {
  /// A zero size, extent, block dimension, level or layer count.
  Empty,
  /// A level index of 32 or more (base_level + levels > 32), or a size that overflows 64 bits.
  OutOfRange,
};

/// Names of ShapeError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<ShapeError>) noexcept {
  return std::to_array<std::string_view>({"Empty", "OutOfRange"});
}
static_assert(enum_names_complete<ShapeError>(), "ShapeError: a value has no name");

/// Level `level` (absolute, base_level <= level < base_level + levels) of `shape`: its extent,
/// block counts, bytes and offset in the packed source. Errors: Empty, OutOfRange.
[[nodiscard]] Expected<LevelLayout, ShapeError> level_layout(const ImageShape& shape,
                                                             uint32_t level) noexcept;

/// The packed source size of every level of `shape`. Errors: Empty, OutOfRange.
[[nodiscard]] Expected<uint64_t, ShapeError> image_bytes(const ImageShape& shape) noexcept;

/// Where an image piece goes: a region of one level (in texels), all of it in one copy.
struct ImagePiece {
  uint32_t level = 0;       ///< the level (absolute)
  uint32_t base_layer = 0;  ///< the first layer (absolute)
  uint32_t layers = 1;      ///< layers
  uint32_t x = 0;           ///< texel offset (always 0: pieces span whole rows)
  uint32_t y = 0;           ///< texel offset of the first row (a multiple of the block height)
  uint32_t z = 0;           ///< texel offset of the first slice (a multiple of the block depth)
  uint32_t width = 0;       ///< texels (the level's width)
  uint32_t height = 0;      ///< texels (rows × block height, cut at the level's edge)
  uint32_t depth = 0;       ///< texels (slices × block depth, cut at the level's edge)
};

/// One piece of an upload: `bytes` bytes of the packed source from `source_offset`, copied to
/// `dst_offset` of a buffer (buffer uploads) or to `image` (image uploads).
struct UploadPiece {
  uint64_t source_offset = 0;  ///< in the packed source (and in the upload's byte count)
  uint64_t bytes = 0;          ///< > 0
  uint64_t dst_offset = 0;     ///< buffer uploads: the destination offset (the buffer's)
  ImagePiece image;            ///< image uploads: the region
  bool first = false;          ///< the upload's first piece
  bool last = false;           ///< the upload's last piece
};

/// Walks one upload piece by piece. A plain value; copy it to look ahead.
class PieceCursor {
 public:
  /// An empty cursor (done()).
  PieceCursor() noexcept = default;
  /// A buffer upload of `bytes` (> 0) to `dst_offset`, cut in multiples of `granule` (>= 1;
  /// 0 is treated as 1) except its last piece. Errors: Empty (bytes 0), OutOfRange (dst_offset +
  /// bytes overflows).
  static Expected<PieceCursor, ShapeError> buffer(uint64_t bytes, uint64_t dst_offset = 0,
                                                  uint64_t granule = 1) noexcept;
  /// An image upload of `shape`. Errors: as level_layout() for any of its levels.
  static Expected<PieceCursor, ShapeError> image(const ImageShape& shape) noexcept;

  /// The largest piece that starts where the last one ended and has at most `budget` bytes, or
  /// none when not even the smallest piece fits (a buffer granule — or what is left when less;
  /// one row of blocks) or the upload is done. Advances past it.
  std::optional<UploadPiece> next(uint64_t budget) noexcept;
  /// The size of the smallest piece next() could cut now (0 when done): what a budget must hold.
  [[nodiscard]] uint64_t smallest_next() const noexcept;
  /// True once every byte has been cut.
  [[nodiscard]] bool done() const noexcept { return cut_ == total_; }
  /// Bytes cut so far.
  [[nodiscard]] uint64_t cut_bytes() const noexcept { return cut_; }
  /// The upload's packed source size.
  [[nodiscard]] uint64_t total_bytes() const noexcept { return total_; }
  /// True for image uploads.
  [[nodiscard]] bool is_image() const noexcept { return image_; }

 private:
  std::optional<UploadPiece> next_buffer(uint64_t budget) noexcept;
  std::optional<UploadPiece> next_image(uint64_t budget) noexcept;

  ImageShape shape_{};
  uint64_t total_ = 0;
  uint64_t cut_ = 0;
  uint64_t dst_offset_ = 0;
  uint64_t granule_ = 1;
  bool image_ = false;
  // Image position: the next block row to cut.
  uint32_t level_ = 0;  // absolute
  uint32_t layer_ = 0;  // relative to base_layer
  uint32_t slice_ = 0;  // in blocks
  uint32_t row_ = 0;    // in blocks
};

}  // namespace staging
