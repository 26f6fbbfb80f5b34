// WebGPU's copy rules (copy_layout.hpp), on the host: the placement alignments and row pitch the
// core's layout engine gives under COPY_LIMITS, and the footprints that size a frame. The engine
// itself is tested once, in tests/core/copy_layout_test.cpp.
#include "staging/detail/webgpu/copy_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace staging::webgpu {
namespace {

TEST(CopyLayout, PlacementAlignmentsMeetMappingAndBlockRules) {
  EXPECT_EQ(BUFFER_PLACEMENT_ALIGNMENT, 8u);
  const auto placed_at = [](uint32_t block_bytes) {
    return texture_layout({4, 4, 1}, 1, TexelBlock{block_bytes, 1, 1, 1, 0}, COPY_LIMITS)
        .value()
        .offset_alignment;
  };
  EXPECT_EQ(placed_at(4), 8u);
  EXPECT_EQ(placed_at(1), 8u);
  EXPECT_EQ(placed_at(16), 16u);
  EXPECT_EQ(placed_at(12), 24u);
}

TEST(CopyLayout, TextureRowsAre256BytesApartTheLastOneUnpadded) {
  const auto l = texture_layout({37, 19, 1}, 1, TexelBlock{4, 1, 1, 1, 0}, COPY_LIMITS);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->row_pitch, 256u);
  EXPECT_EQ(l->copy_bytes, 256u * 18 + 148);
}

TEST(CopyLayout, FootprintCoversTheWorstCaseCursor) {
  EXPECT_EQ(upload_footprint(16, 8), 23u);
  EXPECT_EQ(upload_footprint(13, 8), 16u + 7);  // a mapped range is a multiple of 4
  EXPECT_EQ(upload_footprint(13, 0), 16u);
  EXPECT_FALSE(upload_footprint(UINT64_MAX, 8).has_value());
}

}  // namespace
}  // namespace staging::webgpu
