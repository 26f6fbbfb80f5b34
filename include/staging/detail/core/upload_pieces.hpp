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
//            else a band of rows of texel blocks of one slice  (block-compressed: block rows)
//
//   level 0 of a 2-layer image, budget of 3 rows:   layer 0 [r0 r1 r2][r3 r4 r5][r6]
//                                                   layer 1 [r0 r1 r2][r3 r4 r5][r6]
//   level 1 (fits whole):                           [layer 0 + layer 1]
//
// In staging memory an image piece is laid out by the texture copy layout engine
// (copy_layout.hpp) under the API's CopyLimits: its rows `row_pitch` apart (padded where the API
// wants a row pitch alignment; tight otherwise, so one memcpy fills the piece). The budget a
// piece must fit is in staging bytes; a padded piece takes more staging bytes than source bytes.
// PieceCursor walks an upload from its first piece to its last; next() cuts the largest piece
// the budget holds.
//
// Pure: no allocation, no shared state; safe from any thread on distinct cursors.
#pragma once

#include <cstdint>
#include <optional>

#include "staging/core/errors.hpp"
#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/core/limits.hpp"

namespace staging {

/// The subresources of an image an upload writes: levels [base_level, base_level + levels) of an
/// image whose level 0 is `extent`, layers [base_layer, base_layer + layers). Level L's extent is
/// mip_extent(extent, L).
struct ImageShape {
  TexelBlock block;         ///< the format's texel block (of the aspect uploaded)
  TexelExtent extent;       ///< level 0's extent in texels (every dimension > 0)
  uint32_t base_level = 0;  ///< the first level written
  uint32_t levels = 1;      ///< levels written (>= 1; base_level + levels <= 32)
  uint32_t base_layer = 0;  ///< the first array layer written
  uint32_t layers = 1;      ///< array layers written (>= 1)
};

/// One level of an image upload: its layout in staging memory (every layer of it) and where it
/// starts in the packed source.
struct LevelLayout {
  TextureLayout layout;  ///< the whole level, all of the shape's layers
  uint64_t offset = 0;   ///< where the level starts in the packed source
};

/// Level `level` (absolute, base_level <= level < base_level + levels) of `shape` under
/// `limits`. Errors: Empty (a zero extent, block, level or layer count), Overflow, OutOfRange (a
/// level outside the shape, or base_level + levels > 32).
[[nodiscard]] Expected<LevelLayout, LayoutError> level_layout(
    const ImageShape& shape, uint32_t level, const CopyLimits& limits = {}) noexcept;

/// The packed source size of every level of `shape`. Errors: as level_layout().
[[nodiscard]] Expected<uint64_t, LayoutError> image_bytes(const ImageShape& shape) noexcept;

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
  /// The piece's layout in staging memory (row_pitch, row_length for the copy's row length in
  /// texels, slice_pitch, copy_bytes) and in the source (packed_bytes).
  TextureLayout layout;
};

/// One piece of an upload: `bytes` bytes of the packed source from `source_offset`, taking
/// `staging_bytes` of staging memory, copied to `dst_offset` of a buffer (buffer uploads) or to
/// `image` (image uploads).
struct UploadPiece {
  uint64_t source_offset = 0;  ///< in the packed source (and in the upload's byte count)
  uint64_t bytes = 0;          ///< > 0: source bytes
  /// Staging bytes the piece takes (== bytes for buffers and tight rows; the image layout's
  /// copy_bytes otherwise).
  uint64_t staging_bytes = 0;
  uint64_t dst_offset = 0;  ///< buffer uploads: the destination offset (the buffer's)
  ImagePiece image;         ///< image uploads: the region and its staging layout
  bool first = false;       ///< the upload's first piece
  bool last = false;        ///< the upload's last piece
};

/// Walks one upload piece by piece. A plain value; copy it to look ahead.
class PieceCursor {
 public:
  /// An empty cursor (done()).
  PieceCursor() noexcept = default;
  /// A buffer upload of `bytes` (> 0) to `dst_offset`, cut in multiples of `granule` (>= 1;
  /// 0 is treated as 1) except its last piece. Errors: Empty (bytes 0), Overflow (dst_offset +
  /// bytes overflows).
  static Expected<PieceCursor, LayoutError> buffer(uint64_t bytes, uint64_t dst_offset = 0,
                                                   uint64_t granule = 1) noexcept;
  /// An image upload of `shape`, its pieces laid out under `limits` (copy_layout.hpp). Errors:
  /// as level_layout() for any of its levels.
  static Expected<PieceCursor, LayoutError> image(const ImageShape& shape,
                                                  const CopyLimits& limits = {}) noexcept;

  /// The largest piece that starts where the last one ended and takes at most `budget` bytes of
  /// staging memory, or none when not even the smallest piece fits (a buffer granule — or what
  /// is left when less; one row of blocks) or the upload is done. Advances past it.
  std::optional<UploadPiece> next(uint64_t budget) noexcept;
  /// The staging bytes of the smallest piece next() could cut now (0 when done): what a budget
  /// must hold.
  [[nodiscard]] uint64_t smallest_next() const noexcept;
  /// The alignment every piece's staging offset needs (1 for buffers; the image layout's
  /// offset_alignment).
  [[nodiscard]] uint64_t alignment() const noexcept { return alignment_; }
  /// True once every byte has been cut.
  [[nodiscard]] bool done() const noexcept { return cut_ == total_; }
  /// Source bytes cut so far.
  [[nodiscard]] uint64_t cut_bytes() const noexcept { return cut_; }
  /// The upload's packed source size.
  [[nodiscard]] uint64_t total_bytes() const noexcept { return total_; }
  /// True for image uploads.
  [[nodiscard]] bool is_image() const noexcept { return image_; }

 private:
  std::optional<UploadPiece> next_buffer(uint64_t budget) noexcept;
  std::optional<UploadPiece> next_image(uint64_t budget) noexcept;

  ImageShape shape_{};
  CopyLimits limits_{};
  uint64_t total_ = 0;
  uint64_t cut_ = 0;
  uint64_t dst_offset_ = 0;
  uint64_t granule_ = 1;
  uint64_t alignment_ = 1;
  bool image_ = false;
  // Image position: the next row of blocks to cut.
  uint32_t level_ = 0;  // absolute
  uint32_t layer_ = 0;  // relative to base_layer
  uint32_t slice_ = 0;  // in blocks
  uint32_t row_ = 0;    // in blocks
};

}  // namespace staging
