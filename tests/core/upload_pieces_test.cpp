// PieceCursor: cutting buffer and image uploads into pieces that fit a budget. Every image test
// plays the pieces into a FakeImage (as a GPU applies buffer-to-image copies) and compares every
// byte with the source, so a piece in the wrong place, of the wrong size, or missing, fails.
#include "staging/detail/core/upload_pieces.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "random_bytes.hpp"
#include "staging/testing/fake_image.hpp"

namespace staging {
namespace {

using testing::FakeImage;

using test::random_bytes;

// Cuts `shape` with budgets drawn from `budget`, under `limits`; fills each piece's staging
// bytes from the source (repack_rows: padded rows where the limits ask for them) and plays it
// into a FakeImage; checks the pieces are contiguous in the source and fit their budgets; returns
// the pieces.
template <class Budget>
std::vector<UploadPiece> stream_image(const ImageShape& shape, Budget budget, uint64_t seed = 1,
                                      const CopyLimits& limits = {}) {
  auto cursor = PieceCursor::image(shape, limits).value();
  const auto source = random_bytes(cursor.total_bytes(), seed);
  FakeImage image(shape);
  std::vector<UploadPiece> pieces;
  std::vector<std::byte> staging;
  uint64_t expected_offset = 0;
  while (!cursor.done()) {
    const uint64_t b = budget();
    auto piece = cursor.next(b);
    if (!piece) {
      EXPECT_LT(b, cursor.smallest_next());
      continue;
    }
    EXPECT_LE(piece->staging_bytes, b);
    EXPECT_EQ(piece->source_offset, expected_offset);
    EXPECT_EQ(piece->bytes, piece->image.layout.packed_bytes);
    EXPECT_EQ(piece->staging_bytes, piece->image.layout.copy_bytes);
    EXPECT_EQ(piece->first, expected_offset == 0);
    expected_offset += piece->bytes;
    EXPECT_EQ(piece->last, expected_offset == cursor.total_bytes());
    staging.assign(static_cast<std::size_t>(piece->staging_bytes), std::byte{0});
    repack_rows(staging.data(), source.data() + piece->source_offset, piece->image.layout);
    image.copy(staging.data(), piece->image);
    pieces.push_back(*piece);
  }
  EXPECT_EQ(expected_offset, source.size());
  EXPECT_TRUE(std::equal(source.begin(), source.end(), image.packed().begin()))
      << "the pieces did not rebuild the image";
  return pieces;
}

TEST(UploadPieces, ABufferIsCutInGranulesWithAShortLastPiece) {
  auto c = PieceCursor::buffer(1000, 64, 256).value();
  auto a = c.next(600).value();  // 512: two granules
  EXPECT_EQ(a.source_offset, 0u);
  EXPECT_EQ(a.bytes, 512u);
  EXPECT_EQ(a.dst_offset, 64u);
  EXPECT_TRUE(a.first);
  EXPECT_FALSE(a.last);
  EXPECT_FALSE(c.next(255));  // less than a granule with 488 left
  EXPECT_EQ(c.smallest_next(), 256u);
  auto b = c.next(1 << 20).value();  // the rest, whatever its size
  EXPECT_EQ(b.bytes, 488u);
  EXPECT_EQ(b.dst_offset, 576u);
  EXPECT_TRUE(b.last);
  EXPECT_TRUE(c.done());
  EXPECT_FALSE(c.next(1 << 20));
}

TEST(UploadPieces, TheRestOfABufferMayBeSmallerThanAGranule) {
  auto c = PieceCursor::buffer(300, 0, 256).value();
  EXPECT_EQ(c.next(256)->bytes, 256u);
  EXPECT_EQ(c.smallest_next(), 44u);
  EXPECT_EQ(c.next(44)->bytes, 44u);
}

TEST(UploadPieces, BadShapesAreErrors) {
  EXPECT_EQ(PieceCursor::buffer(0).error(), LayoutError::Empty);
  EXPECT_EQ(PieceCursor::buffer(2, UINT64_MAX).error(), LayoutError::Overflow);
  ImageShape s{.block = {4, 1, 1, 1}, .extent = {16, 16, 1}};
  EXPECT_TRUE(PieceCursor::image(s));
  s.layers = 0;
  EXPECT_EQ(PieceCursor::image(s).error(), LayoutError::Empty);
  s.layers = 1;
  s.base_level = 30;
  s.levels = 3;
  EXPECT_EQ(PieceCursor::image(s).error(), LayoutError::OutOfRange);
  s = {.block = {16, 4, 4, 1}, .extent = {1u << 31, 1u << 31, 1}, .layers = 1u << 20};
  EXPECT_EQ(PieceCursor::image(s).error(), LayoutError::Overflow);
}

TEST(UploadPieces, LevelLayoutOfAMipChain) {
  // 10 x 6 RGBA8, 3 levels, 2 layers: 10x6, 5x3, 2x1.
  const ImageShape s{.block = {4, 1, 1, 1}, .extent = {10, 6, 1}, .levels = 3, .layers = 2};
  const auto l0 = level_layout(s, 0).value();
  const auto l1 = level_layout(s, 1).value();
  const auto l2 = level_layout(s, 2).value();
  EXPECT_EQ(l0.layout.packed_bytes, 10u * 6 * 4 * 2);
  EXPECT_EQ(l1.offset, l0.layout.packed_bytes);
  EXPECT_EQ(l1.layout.extent.width, 5u);
  EXPECT_EQ(l1.layout.rows, 3u);
  EXPECT_EQ(l2.layout.extent.width, 2u);
  EXPECT_EQ(l2.layout.extent.height, 1u);
  EXPECT_EQ(image_bytes(s).value(), l2.offset + l2.layout.packed_bytes);
  EXPECT_EQ(level_layout(s, 3).error(), LayoutError::OutOfRange);
}

TEST(UploadPieces, BlockCompressedLevelsAreCutByBlockRows) {
  // BC7 (16-byte 4x4 blocks) 256 x 256: 64 block rows of 1 KiB. A budget of 10 KiB cuts 10 block
  // rows (40 texel rows) at a time; the small levels (8x8 and below) go whole.
  const ImageShape s{.block = {16, 4, 4, 1}, .extent = {256, 256, 1}, .levels = 9};
  const auto pieces = stream_image(s, [] { return uint64_t{10 * 1024}; });
  ASSERT_GE(pieces.size(), 7u);
  EXPECT_EQ(pieces[0].image.level, 0u);
  EXPECT_EQ(pieces[0].image.y, 0u);
  EXPECT_EQ(pieces[0].image.height, 40u);
  EXPECT_EQ(pieces[1].image.y, 40u);
  EXPECT_EQ(pieces[6].image.y, 240u);
  EXPECT_EQ(pieces[6].image.height, 16u);  // the last 4 block rows
  EXPECT_EQ(pieces[6].bytes, 4u * 1024);
}

TEST(UploadPieces, APartialBlockRowReachesTheLevelsEdge) {
  // BC1 (8-byte 4x4 blocks) 10 x 10: 3 x 3 blocks; the last block row is 2 texels high.
  const ImageShape s{.block = {8, 4, 4, 1}, .extent = {10, 10, 1}, .levels = 4};
  const auto pieces = stream_image(s, [] { return uint64_t{24}; });  // one block row
  ASSERT_GE(pieces.size(), 3u);
  EXPECT_EQ(pieces[2].image.y, 8u);
  EXPECT_EQ(pieces[2].image.height, 2u);
}

TEST(UploadPieces, LayersGoWholeWhenTheLevelDoesNot) {
  // 16 x 16 RGBA8 (1 KiB a layer), 6 layers (a cube), budget 2.5 KiB: layers in twos.
  const ImageShape s{.block = {4, 1, 1, 1}, .extent = {16, 16, 1}, .layers = 6};
  const auto pieces = stream_image(s, [] { return uint64_t{2560}; });
  ASSERT_EQ(pieces.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(pieces[i].image.base_layer, 2 * i);
    EXPECT_EQ(pieces[i].image.layers, 2u);
    EXPECT_EQ(pieces[i].image.height, 16u);
  }
}

TEST(UploadPieces, DepthSlicesOfA3DImage) {
  // 8 x 8 x 8 R8: 64-byte slices, budget 200: slices in threes, then rows of the slices' rest.
  const ImageShape s{.block = {1, 1, 1, 1}, .extent = {8, 8, 8}, .levels = 4};
  const auto pieces = stream_image(s, [] { return uint64_t{200}; });
  EXPECT_EQ(pieces[0].image.z, 0u);
  EXPECT_EQ(pieces[0].image.depth, 3u);
  EXPECT_EQ(pieces[1].image.z, 3u);
}

TEST(UploadPieces, PaddedRowsTakeMoreStagingThanSource) {
  // RGBA8 37 texels wide (148-byte rows) under a 256-byte row pitch: a band of 5 rows takes
  // 4 x 256 + 148 staging bytes for 5 x 148 source bytes.
  CopyLimits limits;
  limits.texture_row_pitch_alignment = 256;
  const ImageShape s{.block = {4, 1, 1, 1}, .extent = {37, 19, 1}};
  auto cursor = PieceCursor::image(s, limits).value();
  const auto piece = cursor.next(4 * 256 + 148).value();
  EXPECT_EQ(piece.image.height, 5u);
  EXPECT_EQ(piece.bytes, 5u * 148);
  EXPECT_EQ(piece.staging_bytes, 4u * 256 + 148);
  EXPECT_EQ(piece.image.layout.row_pitch, 256u);
  EXPECT_EQ(cursor.alignment(), 512u);  // the default texture copy alignment
  stream_image(
      s, [] { return uint64_t{700}; }, 3, limits);
}

TEST(UploadPieces, ABaseLevelAndLayerOffsetTheRegions) {
  const ImageShape s{.block = {4, 1, 1, 1},
                     .extent = {64, 64, 1},
                     .base_level = 2,
                     .levels = 2,
                     .base_layer = 3,
                     .layers = 2};
  const auto pieces = stream_image(s, [] { return uint64_t{1} << 20; });
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].image.level, 2u);
  EXPECT_EQ(pieces[0].image.width, 16u);
  EXPECT_EQ(pieces[0].image.base_layer, 3u);
  EXPECT_EQ(pieces[0].image.layers, 2u);
  EXPECT_EQ(pieces[1].image.level, 3u);
}

TEST(UploadPieces, RandomShapesAndBudgetsRebuildEveryByte) {
  std::mt19937_64 rng(20240611);
  const TexelBlock blocks[] = {{1, 1, 1, 1},  {4, 1, 1, 1},  {8, 4, 4, 1},
                               {16, 4, 4, 1}, {12, 1, 1, 1}, {16, 8, 8, 1}};
  CopyLimits padded;  // rows padded to 256 bytes, as WebGPU and D3D12 want them
  padded.texture_row_pitch_alignment = 256;
  for (int round = 0; round < 300; ++round) {
    ImageShape s;
    s.block = blocks[rng() % std::size(blocks)];
    s.extent.width = 1 + static_cast<uint32_t>(rng() % 70);
    s.extent.height = 1 + static_cast<uint32_t>(rng() % 70);
    s.extent.depth = rng() % 5 == 0 ? 1 + static_cast<uint32_t>(rng() % 9) : 1;
    s.base_level = static_cast<uint32_t>(rng() % 2);
    s.levels = 1 + static_cast<uint32_t>(rng() % 7);
    s.base_layer = static_cast<uint32_t>(rng() % 3);
    s.layers = 1 + static_cast<uint32_t>(rng() % 4);
    const CopyLimits limits = round % 2 == 0 ? CopyLimits{} : padded;
    const uint64_t total = level_layout(s, s.base_level, limits).value().layout.padded_bytes * 2;
    // Budgets up to about a third of the image, never all below its largest row (level 0's).
    const uint64_t hi = std::max(total / 3, level_layout(s, s.base_level).value().layout.row_bytes);
    SCOPED_TRACE("round " + std::to_string(round));
    stream_image(
        s, [&] { return rng() % (hi + 1); }, round, limits);
  }
}

}  // namespace
}  // namespace staging
