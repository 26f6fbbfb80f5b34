// The GFXReconstruct importer (gfxr_import.hpp, gfxr_blocks.hpp): what it makes of a small
// capture written here line by line (copies from host-visible memory, image copies, updates,
// host writes placed by block index, submissions, frames, completion), and that hostile input — a
// line cut short, lines out of order, deep nesting, a huge line, handles never created, sizes
// near 2^64, a truncated or bogus binary capture, a compressed one — is refused with a message
// naming the place, or skipped and counted.
#include "gfxr_import.hpp"

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gfxr_blocks.hpp"
#include "gfxr_format.hpp"

namespace staging::sim {
namespace {

// JSON Lines as gfxrecon-convert writes them: one call a line with its block index.
class Capture {
 public:
  Capture& call(const std::string& name, const std::string& args,
                const std::string& ret = "\"VK_SUCCESS\"") {
    text_ += "{\"index\":" + std::to_string(index_++) + ",\"vkFunc\":{\"name\":\"" + name + "\"" +
             (ret.empty() ? "" : ",\"return\":" + ret) + ",\"args\":" + args + "}}\n";
    return *this;
  }
  // Leaves block numbers free for fill-memory commands.
  Capture& gap(uint64_t blocks) {
    index_ += blocks;
    return *this;
  }
  [[nodiscard]] uint64_t next_index() const { return index_; }
  [[nodiscard]] const std::string& text() const { return text_; }

  // Memory types: 0 device-local, 1 host-visible. Device 4 on physical device 2.
  Capture& device() {
    return call("vkGetPhysicalDeviceMemoryProperties",
                R"({"physicalDevice":2,"pMemoryProperties":{"memoryTypeCount":2,"memoryTypes":[)"
                R"({"propertyFlags":1,"heapIndex":0},{"propertyFlags":6,"heapIndex":0}]}})",
                "")
        .call("vkCreateDevice", R"({"physicalDevice":2,"pCreateInfo":{},"pDevice":4})");
  }
  Capture& memory(uint64_t id, uint64_t size, int type) {
    return call("vkAllocateMemory",
                "{\"device\":4,\"pAllocateInfo\":{\"allocationSize\":" + std::to_string(size) +
                    ",\"memoryTypeIndex\":" + std::to_string(type) +
                    "},\"pMemory\":" + std::to_string(id) + "}");
  }
  Capture& buffer(uint64_t id, uint64_t memory, uint64_t offset) {
    return call("vkCreateBuffer", "{\"device\":4,\"pCreateInfo\":{\"size\":65536},\"pBuffer\":" +
                                      std::to_string(id) + "}")
        .call("vkBindBufferMemory", "{\"device\":4,\"buffer\":" + std::to_string(id) +
                                        ",\"memory\":" + std::to_string(memory) +
                                        ",\"memoryOffset\":" + std::to_string(offset) + "}");
  }
  Capture& command_buffer(uint64_t id) {
    return call("vkAllocateCommandBuffers",
                R"({"device":4,"pAllocateInfo":{"commandPool":9,"commandBufferCount":1},)"
                R"("pCommandBuffers":[)" +
                    std::to_string(id) + "]}")
        .call("vkBeginCommandBuffer", "{\"commandBuffer\":" + std::to_string(id) + "}");
  }
  Capture& copy(uint64_t cb, uint64_t src, uint64_t offset, uint64_t size) {
    return call("vkCmdCopyBuffer",
                "{\"commandBuffer\":" + std::to_string(cb) + ",\"srcBuffer\":" +
                    std::to_string(src) + ",\"dstBuffer\":99,\"regionCount\":1,\"pRegions\":[{" +
                    "\"srcOffset\":" + std::to_string(offset) +
                    ",\"dstOffset\":0,\"size\":" + std::to_string(size) + "}]}",
                "");
  }
  Capture& submit(uint64_t cb, uint64_t fence = 0) {
    return call("vkQueueSubmit",
                R"({"queue":5,"submitCount":1,"pSubmits":[{"commandBufferCount":1,)"
                R"("pCommandBuffers":[)" +
                    std::to_string(cb) + "]}],\"fence\":" +
                    (fence == 0 ? std::string("\"VK_NULL_HANDLE\"") : std::to_string(fence)) + "}");
  }
  Capture& present() { return call("vkQueuePresentKHR", R"({"queue":5,"pPresentInfo":{}})"); }
  Capture& wait(uint64_t fence) {
    return call("vkWaitForFences", "{\"device\":4,\"fenceCount\":1,\"pFences\":[" +
                                       std::to_string(fence) + "],\"waitAll\":1}");
  }

 private:
  std::string text_ = R"({"header":{"json-version":"0.8.0"}})"
                      "\n";
  uint64_t index_ = 1;
};

Expected<GfxrImport, std::string> run(const std::string& text, FillMemoryReader* fills = nullptr) {
  std::istringstream in(text);
  return import_gfxr(in, "cap.jsonl", fills);
}

// A binary capture: the file header, then blocks.
class Binary {
 public:
  explicit Binary(uint32_t compression = 0) {
    u32(0x52584647);
    u32(0);
    u32(0);
    u32(1);
    u32(1);
    u32(compression);
  }
  Binary& block(uint32_t type, const std::string& body) {
    u64(body.size());
    u32(type);
    bytes_ += body;
    return *this;
  }
  Binary& call() { return block(4, std::string(16, '\x01')); }
  Binary& fill(uint64_t memory, uint64_t offset, uint64_t size, int64_t claim = -1) {
    Binary body;
    body.bytes_.clear();
    body.u32(0x10002);
    body.u64(1);
    body.u64(memory);
    body.u64(offset);
    body.u64(claim < 0 ? size : static_cast<uint64_t>(claim));
    std::mt19937 random(static_cast<uint32_t>(size));
    for (uint64_t i = 0; i < size; ++i)
      body.bytes_.push_back(static_cast<char>(random()));
    return block(3, body.bytes_);
  }
  [[nodiscard]] Expected<FillMemoryReader, std::string> reader() const {
    return FillMemoryReader::open(std::make_unique<std::istringstream>(bytes_), "cap.gfxr");
  }
  std::string bytes_;

 private:
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      bytes_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      bytes_.push_back(static_cast<char>(v >> (8 * i)));
  }
};

std::string error_of(const Expected<GfxrImport, std::string>& r) {
  return r ? std::string("(imported)") : r.error();
}

TEST(GfxrImport, CopiesFromHostVisibleMemoryBecomeUploadsOfTheirSubmissionAndFrame) {
  Capture c;
  c.device().memory(10, 1 << 20, 1).memory(11, 1 << 20, 0).buffer(20, 10, 4096).buffer(21, 11, 0);
  c.command_buffer(30).copy(30, 20, 64, 1000).copy(30, 21, 0, 500).submit(30, 40).present();
  c.command_buffer(30).copy(30, 20, 8, 2000).submit(30, 41).wait(40).present();
  const auto r = run(c.text());
  ASSERT_TRUE(r) << r.error();
  const auto& w = r->workload;
  ASSERT_EQ(w.uploads.size(), 2u);  // the copy from device-local memory is not an upload
  EXPECT_EQ(w.uploads[0].size, 1000u);
  EXPECT_EQ(w.uploads[0].alignment, 64u);  // 4096 + 64: the largest power of two dividing it
  EXPECT_EQ(w.uploads[0].frame, 0);
  EXPECT_EQ(w.uploads[1].size, 2000u);
  EXPECT_EQ(w.uploads[1].alignment, 8u);
  EXPECT_EQ(w.uploads[1].frame, 1);
  EXPECT_EQ(w.uploads[1].time, kImportFramePeriod);
  EXPECT_EQ(w.kinds[w.uploads[0].kind], "buffer_copy");
  const ImportStats& s = r->stats;
  EXPECT_EQ(s.commands[0], 3u);
  EXPECT_EQ(s.bytes[0], 3500u);
  EXPECT_EQ(s.imported_uploads[0], 2u);
  EXPECT_EQ(s.imported_bytes[0], 3000u);
  EXPECT_EQ(s.skipped.at("source_not_host_visible"), 1u);
  EXPECT_EQ(s.submissions, 2u);
  EXPECT_EQ(s.frames, 2u);
  EXPECT_EQ(s.app_staging_peak_bytes, 1u << 20);  // memory 10 backs a copy source
  EXPECT_EQ(s.completions_learned, 1u);           // fence 40 in frame 1: a lag of one frame
  EXPECT_EQ(s.lag_frames[0], 1u);
  ASSERT_TRUE(w.default_delay);
  EXPECT_EQ(w.default_delay->text, "fixed:24999us");
}

TEST(GfxrImport, ACommandBufferSubmittedTwiceUploadsTwiceAndOneNeverSubmittedIsCounted) {
  Capture c;
  c.device().memory(10, 1 << 20, 1).buffer(20, 10, 0).command_buffer(30).copy(30, 20, 0, 256);
  c.submit(30).submit(30).command_buffer(31).copy(31, 20, 0, 128);
  const auto r = run(c.text());
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->workload.uploads.size(), 2u);
  EXPECT_EQ(r->stats.frames, 2u);  // no present: a frame per submission
  EXPECT_EQ(r->stats.skipped.at("never_submitted"), 1u);
}

TEST(GfxrImport, ImageCopiesAreSizedFromTheFormatAndKeepTheirRowPitch) {
  Capture c;
  c.device().memory(10, 1 << 20, 1).buffer(20, 10, 0).command_buffer(30);
  c.call("vkCreateImage",
         R"({"device":4,"pCreateInfo":{"format":"VK_FORMAT_BC1_RGB_UNORM_BLOCK"},"pImage":50})");
  c.call("vkCmdCopyBufferToImage",
         R"({"commandBuffer":30,"srcBuffer":20,"dstImage":50,"regionCount":1,"pRegions":[)"
         R"({"bufferOffset":512,"bufferRowLength":0,"bufferImageHeight":0,"imageSubresource":)"
         R"({"aspectMask":1,"layerCount":2},"imageExtent":{"width":64,"height":30,"depth":1}}]})",
         "");
  c.submit(30);
  const auto r = run(c.text());
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->workload.uploads.size(), 1u);
  const Upload& u = r->workload.uploads[0];
  EXPECT_EQ(u.granularity, 16u * 8);            // 16 blocks of 8 bytes a row
  EXPECT_EQ(u.size, uint64_t{16} * 8 * 8 * 2);  // 8 rows of blocks (30 texels), 2 layers
  EXPECT_EQ(u.alignment, 256u);
  EXPECT_EQ(r->workload.kinds[u.kind], "image_copy");
}

TEST(GfxrImport, TexelBlocksComeFromTheFormatName) {
  EXPECT_EQ(texel_block("VK_FORMAT_R8G8B8A8_UNORM", 1)->bytes, 4u);
  EXPECT_EQ(texel_block("VK_FORMAT_R16G16B16A16_SFLOAT", 1)->bytes, 8u);
  EXPECT_EQ(texel_block("VK_FORMAT_A2B10G10R10_UNORM_PACK32", 1)->bytes, 4u);
  EXPECT_EQ(texel_block("VK_FORMAT_D24_UNORM_S8_UINT", 2)->bytes, 4u);
  EXPECT_EQ(texel_block("VK_FORMAT_D24_UNORM_S8_UINT", 4)->bytes, 1u);
  EXPECT_EQ(texel_block("VK_FORMAT_ASTC_8x6_UNORM_BLOCK", 1)->height, 6u);
  EXPECT_FALSE(texel_block("VK_FORMAT_G8_B8R8_2PLANE_420_UNORM", 1));
  EXPECT_FALSE(texel_block("VK_FORMAT_R99999999999G8", 1));
  EXPECT_FALSE(texel_block("garbage", 1));
}

TEST(GfxrImport, HostWritesArePlacedByBlockIndexAndThoseIntoStagingMemoryAreNotUploads) {
  Capture c;
  c.device().memory(10, 1 << 20, 1).memory(11, 4096, 1);
  c.call("vkMapMemory", R"({"device":4,"memory":11,"offset":1024,"size":4096,"flags":0})");
  c.buffer(20, 10, 0).command_buffer(30).copy(30, 20, 0, 64);
  const uint64_t fill_at = c.next_index();
  c.gap(2).submit(30);
  Binary b;
  for (uint64_t i = 0; i < fill_at; ++i)
    b.call();
  b.fill(11, 16, 300).fill(10, 0, 64);
  b.call();
  auto reader = b.reader();
  ASSERT_TRUE(reader) << reader.error();
  const auto r = run(c.text(), &*reader);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->stats.host_writes, 2u);
  EXPECT_EQ(r->stats.host_write_bytes, 364u);
  EXPECT_EQ(r->stats.imported_host_writes, 1u);
  EXPECT_EQ(r->stats.skipped.at("host_write_to_copy_source"), 1u);
  ASSERT_EQ(r->workload.uploads.size(), 2u);
  EXPECT_EQ(r->workload.kinds[r->workload.uploads[0].kind], "host_write");
  EXPECT_EQ(r->workload.uploads[0].alignment, 16u);  // map offset 1024 + 16
}

TEST(GfxrImport, ALineCutShortIsAnErrorNamingTheLine) {
  Capture c;
  c.device().memory(10, 4096, 1);
  const std::string cut = c.text().substr(0, c.text().size() - 20);
  EXPECT_NE(error_of(run(cut)).find("cap.jsonl:4: not valid JSON"), std::string::npos)
      << error_of(run(cut));
}

TEST(GfxrImport, LinesOutOfBlockOrderAreAnError) {
  const std::string text =
      "{\"index\":5,\"vkFunc\":{\"name\":\"vkDeviceWaitIdle\",\"args\":{}}}\n"
      "{\"index\":3,\"vkFunc\":{\"name\":\"vkDeviceWaitIdle\",\"args\":{}}}\n";
  EXPECT_NE(error_of(run(text)).find("cap.jsonl:2: block index 3 after 5"), std::string::npos);
}

TEST(GfxrImport, DeepNestingAndHugeLinesAreErrorsNotCrashes) {
  const std::string deep = "{\"a\":" + std::string(100000, '[') + "\n";
  EXPECT_NE(error_of(run(deep)).find("cap.jsonl:1: nested deeper than 64"), std::string::npos);
  const std::string huge = "{\"a\":\"" + std::string((std::size_t{64} << 20) + 10, 'x') + "\"}\n";
  EXPECT_NE(error_of(run(huge)).find("cap.jsonl:1: a line longer than 64 MiB"), std::string::npos);
  EXPECT_NE(error_of(run("[1,2]\n")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(run("{\"vkFunc\":{\"args\":{}}}\n")).find("without a \"name\""),
            std::string::npos);
}

TEST(GfxrImport, UnknownCallsAreIgnoredAndUnknownHandlesSkippedAndCounted) {
  Capture c;
  c.call("vkSomethingNobodyHeardOf", R"({"x":[1,2,{"y":null}]})");
  c.device().memory(10, 4096, 1).buffer(20, 10, 0).command_buffer(30);
  c.copy(30, 777, 0, 64);  // a buffer never created
  c.copy(31, 20, 0, 64);   // a command buffer never allocated
  c.submit(32);            // nor this one
  c.call("vkBindBufferMemory", R"({"device":4,"buffer":20,"memory":888,"memoryOffset":0})");
  c.call("vkCmdCopyBuffer", R"({"commandBuffer":"thirty","srcBuffer":20,"pRegions":[]})", "");
  c.call("vkAllocateMemory", R"({"device":4,"pAllocateInfo":{"allocationSize":-5}})");
  const auto r = run(c.text());
  ASSERT_TRUE(r) << r.error();
  const auto& skipped = r->stats.skipped;
  EXPECT_EQ(skipped.at("unknown_buffer"), 1u);
  EXPECT_EQ(skipped.at("unknown_command_buffer"), 2u);
  EXPECT_EQ(skipped.at("unknown_memory"), 1u);
  EXPECT_EQ(skipped.at("malformed_call"), 2u);
  EXPECT_TRUE(r->workload.uploads.empty());
}

TEST(GfxrImport, SizesNear2To64AreCheckedNotWrapped) {
  Capture c;
  c.device().memory(10, 4096, 1).buffer(20, 10, UINT64_MAX - 1).command_buffer(30);
  c.copy(30, 20, 16, UINT64_MAX).copy(30, 20, 0, UINT64_MAX);  // offset overflows; size fits
  c.call("vkCreateImage",
         R"({"device":4,"pCreateInfo":{"format":"VK_FORMAT_R32G32B32A32_SFLOAT"},"pImage":50})");
  c.call(
      "vkCmdCopyBufferToImage",
      R"({"commandBuffer":30,"srcBuffer":20,"dstImage":50,"pRegions":[{"bufferOffset":0,)"
      R"("bufferRowLength":4294967295,"bufferImageHeight":4294967295,"imageSubresource":)"
      R"({"aspectMask":1,"layerCount":4294967295},"imageExtent":{"width":1,"height":1,"depth":4294967295}}]})",
      "");
  c.submit(30);
  const auto r = run(c.text());
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->stats.skipped.at("malformed_region"), 2u);
  EXPECT_EQ(r->stats.bytes[0], UINT64_MAX);  // saturated
  ASSERT_EQ(r->workload.uploads.size(), 1u);
  EXPECT_EQ(r->workload.uploads[0].size, UINT64_MAX);
}

TEST(GfxrBlocks, RefusesTruncatedOversizedBogusAndCompressedCaptures) {
  const auto error = [](const Binary& b) {
    auto r = b.reader();
    if (!r) return r.error();
    for (;;) {
      auto n = r->next();
      if (!n) return n.error();
      if (!*n) return std::string("(read to the end)");
    }
  };
  Binary cut;
  cut.call().fill(10, 0, 100);
  cut.bytes_.resize(cut.bytes_.size() - 1);
  EXPECT_NE(error(cut).find("block 1 at byte 52: its size (136 bytes) runs past the end"),
            std::string::npos)
      << error(cut);
  Binary header;
  header.call();
  header.bytes_ += "\x01\x02\x03";
  EXPECT_NE(error(header).find("the block header is cut short"), std::string::npos);
  Binary bogus;
  bogus.block(77, "abc");
  EXPECT_NE(error(bogus).find("unknown block type 0x4d"), std::string::npos);
  Binary lying;
  lying.fill(10, 0, 16, 1 << 30);
  EXPECT_NE(error(lying).find("a fill-memory block of 16 data bytes says it holds"),
            std::string::npos);
  Binary huge;
  huge.bytes_ += std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x04\0\0\0", 12);
  EXPECT_NE(error(huge).find("runs past the end"), std::string::npos);
  EXPECT_NE(error(Binary(1)).find("compressed (LZ4)"), std::string::npos);
  EXPECT_NE(error(Binary(1)).find("gfxrecon-compress cap.gfxr UNCOMPRESSED.gfxr NONE"),
            std::string::npos);
  Binary not_gfxr;
  not_gfxr.bytes_[0] = 'X';
  EXPECT_NE(error(not_gfxr).find("not a GFXReconstruct capture"), std::string::npos);
}

TEST(GfxrBlocks, AJsonLinesFileBeyondTheCaptureIsRefused) {
  Capture c;
  c.device().memory(10, 4096, 1);
  Binary b;
  b.call();
  auto reader = b.reader();
  ASSERT_TRUE(reader);
  EXPECT_NE(error_of(run(c.text(), &*reader)).find("are the two files from the same capture?"),
            std::string::npos);
}

TEST(GfxrImport, TheTraceCsvIsWhatReplayReads) {
  Capture c;
  c.device().memory(10, 4096, 1).buffer(20, 10, 0).command_buffer(30).copy(30, 20, 32, 48);
  c.submit(30).present();
  const auto r = run(c.text());
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(trace_csv(r->workload),
            "time_us,size,alignment,kind,frame,granularity\n0.000,48,32,buffer_copy,0,1\n");
}

}  // namespace
}  // namespace staging::sim
