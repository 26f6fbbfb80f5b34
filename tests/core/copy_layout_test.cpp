// The copy layout engine (copy_layout.hpp), once for every backend: row pitch, image height,
// slice and layer pitch, offset alignment under an API's CopyLimits, the last row's padding,
// overflow; mip extents; bands of block rows for streaming; and the repacking itself, checked
// byte for byte with random data.
//
// Sketch notation: one cell per row of blocks in staging memory, [rrr...] the row's texel data,
// '.' its padding up to the row pitch.
#include "staging/detail/core/copy_layout.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace staging {
namespace {

// WebGPU: rows 256 bytes apart, textures placed at lcm(8, block bytes).
constexpr CopyLimits kWebGpu{.buffer_copy_alignment = 8,
                             .texture_copy_alignment = 8,
                             .texture_row_pitch_alignment = 256,
                             .non_coherent_atom_size = 1};
// Vulkan on a device with optimalBufferCopyOffsetAlignment 128, rows unpadded.
constexpr CopyLimits kVulkan{.buffer_copy_alignment = 128,
                             .texture_copy_alignment = 128,
                             .texture_row_pitch_alignment = 1,
                             .non_coherent_atom_size = 64};
constexpr TexelBlock kRgba8{4, 1, 1, 1, 0};
constexpr TexelBlock kBc1{8, 4, 4, 1, 0};
constexpr TexelBlock kBc7{16, 4, 4, 1, 0};
constexpr TexelBlock kD32{4, 1, 1, 1, 4};
constexpr TexelBlock kS8{1, 1, 1, 1, 4};

std::vector<std::byte> random_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> out(n);
  for (std::byte& b : out)
    b = static_cast<std::byte>(gen() & 0xff);
  return out;
}

//   37 texels of RGBA8, 19 rows:  [148 bytes ........ 108 pad] x 18, then [148 bytes]
TEST(CopyLayout, RowsArePaddedToTheRowPitchAndTheLastRowIsNot) {
  const auto l = texture_layout({37, 19, 1}, 1, kRgba8, kWebGpu);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->row_bytes, 148u);
  EXPECT_EQ(l->rows, 19u);
  EXPECT_EQ(l->slices, 1u);
  EXPECT_EQ(l->images, 1u);
  EXPECT_EQ(l->row_pitch, 256u);
  EXPECT_EQ(l->row_length, 64u);  // texels per row pitch (bufferRowLength)
  EXPECT_EQ(l->slice_pitch, 256u * 19);
  EXPECT_EQ(l->packed_bytes, 148u * 19);
  EXPECT_EQ(l->padded_bytes, 256u * 19);
  EXPECT_EQ(l->copy_bytes, 256u * 18 + 148);
  EXPECT_EQ(l->offset_alignment, 8u);
  EXPECT_FALSE(l->tight());
}

TEST(CopyLayout, AlignedRowsAndUnpaddedLimitsAreTight) {
  const auto webgpu = texture_layout({64, 4, 1}, 2, TexelBlock{8, 1, 1, 1, 0}, kWebGpu);
  ASSERT_TRUE(webgpu.has_value());
  EXPECT_EQ(webgpu->row_pitch, 512u);
  EXPECT_TRUE(webgpu->tight());
  EXPECT_EQ(webgpu->copy_bytes, webgpu->packed_bytes);
  const auto vulkan = texture_layout({37, 19, 1}, 1, kRgba8, kVulkan);
  ASSERT_TRUE(vulkan.has_value());
  EXPECT_TRUE(vulkan->tight());
  EXPECT_EQ(vulkan->padded_bytes, 148u * 19);
  EXPECT_EQ(vulkan->offset_alignment, 128u);  // lcm(128, 4)
}

// BC1: 8-byte 4x4 blocks; a 10x6 region is 3x2 blocks (the extent rounds up to whole blocks).
TEST(CopyLayout, CompressedBlocksRoundTheExtentUp) {
  const auto l = texture_layout({10, 6, 1}, 1, kBc1, kWebGpu);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->row_bytes, 24u);
  EXPECT_EQ(l->rows, 2u);
  EXPECT_EQ(l->row_length, 256u / 8 * 4);
  EXPECT_EQ(l->copy_bytes, 256u + 24);
  const auto bc7 = texture_layout({2048, 2048, 1}, 1, kBc7, kVulkan);
  ASSERT_TRUE(bc7.has_value());
  EXPECT_EQ(bc7->packed_bytes, 2048u * 2048);  // 1 byte per texel
}

// The offset alignment: the API's texture alignment and the block's own rule (Vulkan depth and
// stencil need 4, whatever their size); never below either.
TEST(CopyLayout, OffsetAlignmentMeetsTheApiAndTheBlock) {
  const CopyLimits one{.buffer_copy_alignment = 1,
                       .texture_copy_alignment = 1,
                       .texture_row_pitch_alignment = 1,
                       .non_coherent_atom_size = 1};
  EXPECT_EQ(texture_layout({4, 4, 1}, 1, kRgba8, one)->offset_alignment, 4u);
  EXPECT_EQ(texture_layout({4, 4, 1}, 1, kS8, one)->offset_alignment, 4u);
  EXPECT_EQ(texture_layout({4, 4, 1}, 1, kD32, one)->offset_alignment, 4u);
  EXPECT_EQ(texture_layout({4, 4, 1}, 1, TexelBlock{12, 1, 1, 1, 0}, kWebGpu)->offset_alignment,
            24u);
  EXPECT_EQ(texture_layout({4, 4, 1}, 1, kBc7, kWebGpu)->offset_alignment, 16u);
  // A row pitch alignment that is not a multiple of the block: lcm keeps rows on blocks.
  const CopyLimits odd{.buffer_copy_alignment = 1,
                       .texture_copy_alignment = 1,
                       .texture_row_pitch_alignment = 6,
                       .non_coherent_atom_size = 1};
  EXPECT_EQ(texture_layout({3, 2, 1}, 1, kRgba8, odd)->row_pitch, 12u);
  EXPECT_EQ(texture_layout({4, 2, 1}, 1, kRgba8, odd)->row_pitch, 24u);
}

// 3 layers of a 5x3 region of 16-byte texels under WebGPU: every row is padded but the very last.
//   layer 0: [80 .. 176 pad] x 3   layer 1: same   layer 2: [80 ..] [80 ..] [80]
TEST(CopyLayout, LayersAndSlicesFollowEachOtherAtTheirPitches) {
  const auto l = texture_layout({5, 3, 1}, 3, TexelBlock{16, 1, 1, 1, 0}, kWebGpu);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->images, 3u);
  EXPECT_EQ(l->layer_pitch, 256u * 3);
  EXPECT_EQ(l->copy_bytes, 256u * 8 + 80);
  // A 3D region: depth slices of one layer, then layers.
  const auto v = texture_layout({8, 4, 5}, 2, kRgba8, kWebGpu);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->slices, 5u);
  EXPECT_EQ(v->images, 10u);
  EXPECT_EQ(v->slice_pitch, 256u * 4);
  EXPECT_EQ(v->layer_pitch, 256u * 4 * 5);
  EXPECT_EQ(v->padded_bytes, 256u * 4 * 5 * 2);
  EXPECT_EQ(v->packed_bytes, 32u * 4 * 5 * 2);
}

TEST(CopyLayout, EmptyAndOverflowingRegionsAreRefused) {
  EXPECT_EQ(texture_layout({0, 4, 1}, 1, kRgba8, kWebGpu).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout({4, 0, 1}, 1, kRgba8, kWebGpu).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout({4, 4, 0}, 1, kRgba8, kWebGpu).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout({4, 4, 1}, 0, kRgba8, kWebGpu).error(), LayoutError::Empty);
  EXPECT_EQ(texture_layout({4, 4, 1}, 1, TexelBlock{0, 1, 1, 1, 0}, kWebGpu).error(),
            LayoutError::Empty);
  EXPECT_EQ(texture_layout({4, 4, 1}, 1, TexelBlock{4, 0, 1, 1, 0}, kWebGpu).error(),
            LayoutError::Empty);
  EXPECT_EQ(texture_layout({1u << 20, 1u << 20, 1u << 20}, 1, TexelBlock{16, 1, 1, 1, 0}, kWebGpu)
                .error(),
            LayoutError::Overflow);
  EXPECT_EQ(texture_layout({UINT32_MAX, UINT32_MAX, UINT32_MAX}, UINT32_MAX,
                           TexelBlock{UINT32_MAX, 1, 1, 1, 0}, kWebGpu)
                .error(),
            LayoutError::Overflow);
  // bufferRowLength is 32 bits: a row pitch of 2^32 texels or more cannot be expressed.
  EXPECT_EQ(texture_layout({UINT32_MAX, 1, 1}, 1, TexelBlock{1, 1, 1, 1, 0}, kWebGpu).error(),
            LayoutError::Overflow);
  // A row pitch alignment of 2^63 + 14 bytes: the pitch fits 64 bits, but in texels (2-texel
  // blocks of 1 byte) it is 2^64 + 28, which must not wrap around to 28.
  CopyLimits huge;
  huge.texture_row_pitch_alignment = (uint64_t{1} << 63) + 14;
  EXPECT_EQ(texture_layout({2, 1, 1}, 1, TexelBlock{1, 2, 2, 1, 0}, huge).error(),
            LayoutError::Overflow);
}

TEST(CopyLayout, MipExtentsHalveAndNeverReachZero) {
  const TexelExtent base{2048, 512, 1};
  EXPECT_EQ(mip_extent(base, 0).width, 2048u);
  EXPECT_EQ(mip_extent(base, 3).width, 256u);
  EXPECT_EQ(mip_extent(base, 3).height, 64u);
  EXPECT_EQ(mip_extent(base, 10).width, 2u);
  EXPECT_EQ(mip_extent(base, 10).height, 1u);
  EXPECT_EQ(mip_extent(base, 11).width, 1u);
  EXPECT_EQ(mip_extent(base, 40).width, 1u);
  EXPECT_EQ(mip_extent({7, 7, 9}, 1).depth, 4u);
  // A BC7 level smaller than a block still takes one whole block.
  const auto tail = texture_layout(mip_extent({2048, 2048, 1}, 10), 1, kBc7, kVulkan);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->packed_bytes, 16u);
}

// 37x19 RGBA8 under WebGPU: a band of r rows takes (r - 1) * 256 + 148 bytes.
TEST(CopyLayout, RowsThatFitCountWholeRowsTheLastOneUnpadded) {
  const TextureLayout l = texture_layout({37, 19, 1}, 1, kRgba8, kWebGpu).value();
  EXPECT_EQ(rows_that_fit(l, 147), 0u);
  EXPECT_EQ(rows_that_fit(l, 148), 1u);
  EXPECT_EQ(rows_that_fit(l, 256 + 147), 1u);
  EXPECT_EQ(rows_that_fit(l, 256 + 148), 2u);
  EXPECT_EQ(rows_that_fit(l, 1u << 30), 19u);  // never more than the image has
}

// BC7 2048x100 (rows of 4 texels; the last row of blocks covers texels 96..99): bands of 10 rows
// of blocks, the last clipped to the region's height.
TEST(CopyLayout, RowBandsSplitAnImageIntoWholeBlockRows) {
  const TextureLayout l = texture_layout({2048, 100, 1}, 2, kBc7, kVulkan).value();
  ASSERT_EQ(l.rows, 25u);
  const RowBand first = row_band(l, 0, 0, 10).value();
  EXPECT_EQ(first.y, 0u);
  EXPECT_EQ(first.height, 40u);
  EXPECT_EQ(first.source_offset, 0u);
  EXPECT_EQ(first.source_bytes, 10u * 8192);
  EXPECT_EQ(first.copy_bytes, 10u * 8192);
  const RowBand last = row_band(l, 1, 20, 5).value();
  EXPECT_EQ(last.layer, 1u);
  EXPECT_EQ(last.slice, 0u);
  EXPECT_EQ(last.y, 80u);
  EXPECT_EQ(last.height, 20u);
  EXPECT_EQ(last.source_offset, (25u + 20u) * 8192);
  const TextureLayout clipped = texture_layout({8, 10, 1}, 1, kBc1, kWebGpu).value();
  const RowBand edge = row_band(clipped, 0, 2, 1).value();  // texels 8..9 of a 4-texel block
  EXPECT_EQ(edge.y, 8u);
  EXPECT_EQ(edge.height, 2u);
  EXPECT_EQ(row_band(l, 2, 0, 1).error(), LayoutError::OutOfRange);
  EXPECT_EQ(row_band(l, 0, 0, 0).error(), LayoutError::OutOfRange);
  EXPECT_EQ(row_band(l, 0, 20, 6).error(), LayoutError::OutOfRange);
  EXPECT_EQ(row_band(l, 0, 25, 1).error(), LayoutError::OutOfRange);
  // A 3D region: images are depth slices of a layer.
  const TextureLayout v = texture_layout({4, 4, 3}, 2, kRgba8, kWebGpu).value();
  const RowBand slice = row_band(v, 4, 1, 2).value();
  EXPECT_EQ(slice.layer, 1u);
  EXPECT_EQ(slice.slice, 1u);
  EXPECT_EQ(slice.z, 1u);
  EXPECT_EQ(slice.depth, 1u);
}

// Every byte of the packed source lands in its row in staging memory; padding is left alone.
TEST(CopyLayout, RepackRowsMovesEveryRowAndLeavesPaddingAlone) {
  for (const CopyLimits& limits : {kWebGpu, kVulkan}) {
    const TextureLayout l = texture_layout({37, 5, 3}, 2, kRgba8, limits).value();
    const std::vector<std::byte> src = random_bytes(l.packed_bytes, 3);
    std::vector<std::byte> dst(l.padded_bytes, std::byte{0xEE});
    repack_rows(dst.data(), src.data(), l);
    for (uint64_t r = 0; r < uint64_t{l.rows} * l.images; ++r) {
      for (uint64_t i = 0; i < l.row_pitch; ++i) {
        const std::byte got = dst[r * l.row_pitch + i];
        if (i < l.row_bytes) {
          ASSERT_EQ(got, src[r * l.row_bytes + i]) << "row " << r << " byte " << i;
        } else {
          ASSERT_EQ(got, std::byte{0xEE}) << "padding of row " << r;
        }
      }
    }
  }
}

// Streaming a region band by band (each band into its own staging bytes, as a streamer copies
// piece by piece) puts every byte where the whole region's repack puts it.
TEST(CopyLayout, BandsByRowsAndImagesReassembleTheWholeRegion) {
  const TextureLayout l = texture_layout({70, 37, 1}, 3, kBc1, kWebGpu).value();
  const std::vector<std::byte> src = random_bytes(l.packed_bytes, 7);
  std::vector<std::byte> whole(l.padded_bytes, std::byte{0});
  repack_rows(whole.data(), src.data(), l);
  const uint64_t budget = 3 * l.row_pitch;  // any budget: bands of up to 3 rows
  uint64_t bands = 0;
  for (uint64_t image = 0; image < l.images; ++image) {
    for (uint32_t row = 0; row < l.rows;) {
      const uint32_t rows = std::min(rows_that_fit(l, budget), l.rows - row);
      const RowBand band = row_band(l, image, row, rows).value();
      std::vector<std::byte> piece(band.copy_bytes, std::byte{0});
      repack_rows(piece.data(), src.data(), l, band);
      const uint64_t at = image * l.slice_pitch + uint64_t{row} * l.row_pitch;
      for (uint32_t r = 0; r < rows; ++r) {
        ASSERT_EQ(std::memcmp(piece.data() + r * l.row_pitch, whole.data() + at + r * l.row_pitch,
                              l.row_bytes),
                  0)
            << "image " << image << " row " << row + r;
      }
      row += rows;
      ++bands;
    }
  }
  EXPECT_EQ(bands, 3u * 4);  // 10 rows of blocks per image: 3 + 3 + 3 + 1
}

TEST(CopyLayout, ErrorsHaveNames) {
  EXPECT_EQ(to_string(LayoutError::OutOfRange), "OutOfRange");
}

}  // namespace
}  // namespace staging
