// WebGPU's copy arithmetic (copy_layout.hpp), on the host: texture row padding to 256 bytes,
// block-compressed extents, placement alignments, footprints, and the row repacking itself.
#include "staging/webgpu/copy_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace staging::webgpu {
namespace {

TEST(TextureLayout, PadsRowsTo256AndLeavesTheLastRowUnpadded) {
  const auto l = texture_layout(37, 19, 1, TexelBlock{4, 1, 1});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->row_bytes, 148u);
  EXPECT_EQ(l->rows, 19u);
  EXPECT_EQ(l->packed_bytes, 148u * 19);
  EXPECT_EQ(l->padded_row_bytes, 256u);
  EXPECT_EQ(l->staged_bytes, 256u * 18 + 148);
}

TEST(TextureLayout, RowsAlreadyAlignedAreNotPadded) {
  const auto l = texture_layout(64, 4, 2, TexelBlock{8, 1, 1});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->row_bytes, 512u);
  EXPECT_EQ(l->padded_row_bytes, 512u);
  EXPECT_EQ(l->staged_bytes, l->packed_bytes);
  EXPECT_EQ(l->packed_bytes, 512u * 4 * 2);
}

TEST(TextureLayout, OneRowTakesOnlyItsBytes) {
  const auto l = texture_layout(13, 1, 1, TexelBlock{1, 1, 1});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->staged_bytes, 13u);
}

TEST(TextureLayout, CompressedBlocksRoundTheExtentUp) {
  // BC1: 8-byte 4x4 blocks; a 10x6 region is 3x2 blocks.
  const auto l = texture_layout(10, 6, 1, TexelBlock{8, 4, 4});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->row_bytes, 24u);
  EXPECT_EQ(l->rows, 2u);
  EXPECT_EQ(l->staged_bytes, 256u + 24);
}

TEST(TextureLayout, LayersPadEveryRowButTheVeryLast) {
  const auto l = texture_layout(5, 3, 3, TexelBlock{16, 1, 1});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->row_bytes, 80u);
  EXPECT_EQ(l->staged_bytes, 256u * 8 + 80);
}

TEST(TextureLayout, EmptyAndOverflowingRegionsAreRefused) {
  EXPECT_EQ(texture_layout(0, 4, 1, {}).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout(4, 0, 1, {}).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout(4, 4, 0, {}).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout(4, 4, 1, TexelBlock{0, 1, 1}).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout(UINT64_MAX, 4, 1, TexelBlock{4, 1, 1}).error(), LayoutError::Overflow);
  EXPECT_EQ(texture_layout(1u << 20, 1u << 20, 1u << 20, TexelBlock{16, 1, 1}).error(),
            LayoutError::Overflow);
}

TEST(CopyLayout, PlacementAlignmentsMeetMappingAndBlockRules) {
  EXPECT_EQ(BUFFER_PLACEMENT_ALIGNMENT, 8u);
  EXPECT_EQ(texture_placement_alignment(4), 8u);
  EXPECT_EQ(texture_placement_alignment(1), 8u);
  EXPECT_EQ(texture_placement_alignment(16), 16u);
  EXPECT_EQ(texture_placement_alignment(12), 24u);
  EXPECT_EQ(texture_placement_alignment(0), 8u);
}

TEST(CopyLayout, FootprintCoversTheWorstCaseCursor) {
  EXPECT_EQ(upload_footprint(16, 8), 23u);
  EXPECT_EQ(upload_footprint(13, 8), 16u + 7);  // a mapped range is a multiple of 4
  EXPECT_EQ(upload_footprint(13, 0), 16u);
  EXPECT_FALSE(upload_footprint(UINT64_MAX, 8).has_value());
}

TEST(CopyLayout, RepackRowsMovesEveryRowAndLeavesPaddingAlone) {
  const auto l = texture_layout(37, 5, 2, TexelBlock{4, 1, 1});
  ASSERT_TRUE(l.has_value());
  std::vector<std::byte> src(l->packed_bytes);
  std::mt19937 gen(3);
  for (std::byte& b : src)
    b = static_cast<std::byte>(gen() & 0xff);
  std::vector<std::byte> dst(l->staged_bytes, std::byte{0xEE});
  repack_rows(dst.data(), src.data(), *l);
  for (uint64_t r = 0; r < l->rows * l->layers; ++r) {
    for (uint64_t i = 0; i < l->padded_row_bytes && r * l->padded_row_bytes + i < dst.size(); ++i) {
      const std::byte got = dst[r * l->padded_row_bytes + i];
      if (i < l->row_bytes)
        ASSERT_EQ(got, src[r * l->row_bytes + i]) << "row " << r << " byte " << i;
      else
        ASSERT_EQ(got, std::byte{0xEE}) << "padding of row " << r;
    }
  }
}

}  // namespace
}  // namespace staging::webgpu
