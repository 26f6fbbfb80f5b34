// PieceCursor: cutting buffer and image uploads into pieces that fit a budget. Every image test
// plays the pieces into a FakeImage (as a GPU applies buffer-to-image copies) and compares every
// byte with the source, so a piece in the wrong place, of the wrong size, or missing, fails.
#include "staging/core/upload_pieces.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "random_bytes.hpp"
#include "staging/testing/fake_image.hpp"

namespace staging {
namespace {

using testing::FakeImage;

using test::random_bytes;

// Cuts `shape` with budgets drawn from `budget`, plays every piece into a FakeImage and checks
// the pieces are contiguous in the source; returns the pieces.
template <class Budget>
std::vector<UploadPiece> stream_image(const ImageShape& shape, Budget budget, uint64_t seed = 1) {
  auto cursor = PieceCursor::image(shape).value();
  const auto source = random_bytes(cursor.total_bytes(), seed);
  FakeImage image(shape);
  std::vector<UploadPiece> pieces;
  uint64_t expected_offset = 0;
  while (!cursor.done()) {
    const uint64_t b = budget();
    auto piece = cursor.next(b);
    if (!piece) {
      EXPECT_LT(b, cursor.smallest_next());
      continue;
    }
    EXPECT_LE(piece->bytes, b);
    EXPECT_EQ(piece->source_offset, expected_offset);
    EXPECT_EQ(piece->first, expected_offset == 0);
    expected_offset += piece->bytes;
    EXPECT_EQ(piece->last, expected_offset == cursor.total_bytes());
    image.copy(source.data() + piece->source_offset, piece->image);
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
  EXPECT_EQ(PieceCursor::buffer(0).error(), ShapeError::Empty);
  EXPECT_EQ(PieceCursor::buffer(2, UINT64_MAX).error(), ShapeError::OutOfRange);
  ImageShape s{.block = {4, 1, 1, 1}, .width = 16, .height = 16};
  EXPECT_TRUE(PieceCursor::image(s));
  s.layers = 0;
  EXPECT_EQ(PieceCursor::image(s).error(), ShapeError::Empty);
  s.layers = 1;
  s.base_level = 30;
  s.levels = 3;
  EXPECT_EQ(PieceCursor::image(s).error(), ShapeError::OutOfRange);
  s = {.block = {16, 4, 4, 1}, .width = 1u << 31, .height = 1u << 31, .layers = 1u << 20};
  EXPECT_EQ(PieceCursor::image(s).error(), ShapeError::OutOfRange);
}

TEST(UploadPieces, LevelLayoutOfAMipChain) {
  // 10 x 6 RGBA8, 3 levels, 2 layers: 10x6, 5x3, 2x1.
  const ImageShape s{.block = {4, 1, 1, 1}, .width = 10, .height = 6, .levels = 3, .layers = 2};
  const auto l0 = level_layout(s, 0).value();
  const auto l1 = level_layout(s, 1).value();
  const auto l2 = level_layout(s, 2).value();
  EXPECT_EQ(l0.bytes, 10u * 6 * 4 * 2);
  EXPECT_EQ(l1.offset, l0.bytes);
  EXPECT_EQ(l1.width, 5u);
  EXPECT_EQ(l1.rows, 3u);
  EXPECT_EQ(l2.width, 2u);
  EXPECT_EQ(l2.height, 1u);
  EXPECT_EQ(image_bytes(s).value(), l2.offset + l2.bytes);
  EXPECT_EQ(level_layout(s, 3).error(), ShapeError::OutOfRange);
}

TEST(UploadPieces, BlockCompressedLevelsAreCutByBlockRows) {
  // BC7 (16-byte 4x4 blocks) 256 x 256: 64 block rows of 1 KiB. A budget of 10 KiB cuts 10 block
  // rows (40 texel rows) at a time; the small levels (8x8 and below) go whole.
  const ImageShape s{.block = {16, 4, 4, 1}, .width = 256, .height = 256, .levels = 9};
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
  const ImageShape s{.block = {8, 4, 4, 1}, .width = 10, .height = 10, .levels = 4};
  const auto pieces = stream_image(s, [] { return uint64_t{24}; });  // one block row
  ASSERT_GE(pieces.size(), 3u);
  EXPECT_EQ(pieces[2].image.y, 8u);
  EXPECT_EQ(pieces[2].image.height, 2u);
}

TEST(UploadPieces, LayersGoWholeWhenTheLevelDoesNot) {
  // 16 x 16 RGBA8 (1 KiB a layer), 6 layers (a cube), budget 2.5 KiB: layers in twos.
  const ImageShape s{.block = {4, 1, 1, 1}, .width = 16, .height = 16, .layers = 6};
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
  const ImageShape s{.block = {1, 1, 1, 1}, .width = 8, .height = 8, .depth = 8, .levels = 4};
  const auto pieces = stream_image(s, [] { return uint64_t{200}; });
  EXPECT_EQ(pieces[0].image.z, 0u);
  EXPECT_EQ(pieces[0].image.depth, 3u);
  EXPECT_EQ(pieces[1].image.z, 3u);
}

TEST(UploadPieces, ABaseLevelAndLayerOffsetTheRegions) {
  const ImageShape s{.block = {4, 1, 1, 1},
                     .width = 64,
                     .height = 64,
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
  const BlockShape blocks[] = {{1, 1, 1, 1},  {4, 1, 1, 1},  {8, 4, 4, 1},
                               {16, 4, 4, 1}, {12, 1, 1, 1}, {16, 8, 8, 1}};
  for (int round = 0; round < 300; ++round) {
    ImageShape s;
    s.block = blocks[rng() % std::size(blocks)];
    s.width = 1 + static_cast<uint32_t>(rng() % 70);
    s.height = 1 + static_cast<uint32_t>(rng() % 70);
    s.depth = rng() % 5 == 0 ? 1 + static_cast<uint32_t>(rng() % 9) : 1;
    s.base_level = static_cast<uint32_t>(rng() % 2);
    s.levels = 1 + static_cast<uint32_t>(rng() % 7);
    s.base_layer = static_cast<uint32_t>(rng() % 3);
    s.layers = 1 + static_cast<uint32_t>(rng() % 4);
    const uint64_t total = image_bytes(s).value();
    // Budgets up to a third of the image, never all below its largest row (level 0's).
    const uint64_t hi = std::max(total / 3, level_layout(s, s.base_level).value().row_bytes);
    SCOPED_TRACE("round " + std::to_string(round));
    stream_image(
        s, [&] { return rng() % (hi + 1); }, round);
  }
}

}  // namespace
}  // namespace staging
