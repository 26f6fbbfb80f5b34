#include "gfxr_blocks.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <fstream>

namespace staging::sim {
namespace {

using Fail = Unexpected<std::string>;

constexpr uint32_t kFourcc = 0x52584647;  // "GFXR"
constexpr uint32_t kMaxOptions = 64;
constexpr uint32_t kCompressionOption = 1;
constexpr uint32_t kCompressedBit = 0x80000000u;
constexpr uint32_t kMetaDataBlock = 3;
constexpr uint32_t kLastBlockType = 6;  // method call
constexpr uint32_t kFillMemory = 2;     // MetaDataType::kFillMemoryCommand
constexpr uint64_t kBlockHeaderBytes = 12;
constexpr uint64_t kFillHeaderBytes = 4 + 4 * 8;  // meta id; thread, memory, offset, size

uint64_t u64_at(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint32_t u32_at(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

bool read_exact(std::istream& in, unsigned char* out, std::size_t n) {
  in.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n));
  return static_cast<std::size_t>(in.gcount()) == n;
}

std::string_view compression_name(uint32_t type) {
  switch (type) {
    case 1:
      return "LZ4";
    case 2:
      return "zlib";
    case 3:
      return "Zstandard";
    default:
      return "an unknown compression";
  }
}

}  // namespace

Expected<FillMemoryReader, std::string> FillMemoryReader::open(const std::string& path) {
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file) return Fail{fmt::format("{}: cannot open", path)};
  return open(std::move(file), path);
}

Expected<FillMemoryReader, std::string> FillMemoryReader::open(std::unique_ptr<std::istream> stream,
                                                               std::string path) {
  std::istream& in = *stream;
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) return Fail{fmt::format("{}: cannot read its size", path)};
  const uint64_t size = static_cast<uint64_t>(end);
  in.seekg(0);
  std::array<unsigned char, 16> header{};
  if (!read_exact(in, header.data(), header.size()) || u32_at(header.data()) != kFourcc) {
    return Fail{fmt::format("{}: not a GFXReconstruct capture (no \"GFXR\" file header)", path)};
  }
  const uint32_t options = u32_at(header.data() + 12);
  if (options > kMaxOptions) {
    return Fail{fmt::format("{}: the file header claims {} options (at most {})", path, options,
                            kMaxOptions)};
  }
  for (uint32_t i = 0; i < options; ++i) {
    std::array<unsigned char, 8> pair{};
    if (!read_exact(in, pair.data(), pair.size())) {
      return Fail{fmt::format("{}: the file header is cut short", path)};
    }
    const uint32_t value = u32_at(pair.data() + 4);
    if (u32_at(pair.data()) == kCompressionOption && value != 0) {
      return Fail{fmt::format(
          "{}: the capture is compressed ({}); capture with "
          "GFXRECON_CAPTURE_COMPRESSION_TYPE=NONE, or decompress it with: gfxrecon-compress {} "
          "UNCOMPRESSED.gfxr NONE",
          path, compression_name(value), path)};
    }
  }
  const uint64_t pos = 16 + uint64_t{8} * options;
  return FillMemoryReader(std::move(path), std::move(stream), size, pos);
}

std::string FillMemoryReader::where(std::string_view what) const {
  return fmt::format("{}: block {} at byte {}: {}", path_, index_, pos_, what);
}

Expected<std::optional<FillCommand>, std::string> FillMemoryReader::next() {
  while (pos_ < size_) {
    std::array<unsigned char, kBlockHeaderBytes + kFillHeaderBytes> h{};
    if (size_ - pos_ < kBlockHeaderBytes) return Fail{where("the block header is cut short")};
    in_->seekg(static_cast<std::streamoff>(pos_));
    if (!read_exact(*in_, h.data(), kBlockHeaderBytes)) return Fail{where("cannot read")};
    const uint64_t body = u64_at(h.data());
    const uint32_t type = u32_at(h.data() + 8);
    if (body > size_ - pos_ - kBlockHeaderBytes) {
      return Fail{
          where(fmt::format("its size ({} bytes) runs past the end of the file ({} "
                            "bytes): is the capture cut short?",
                            body, size_))};
    }
    if ((type & ~kCompressedBit) == 0 || (type & ~kCompressedBit) > kLastBlockType) {
      return Fail{where(fmt::format("unknown block type {:#x}", type))};
    }
    if (type & kCompressedBit) {
      return Fail{where("a compressed block in a capture whose header says uncompressed")};
    }
    const uint64_t index = index_++;
    const uint64_t at = pos_;
    pos_ = at + kBlockHeaderBytes + body;
    if (type != kMetaDataBlock || body < 4) continue;
    if (!read_exact(*in_, h.data() + kBlockHeaderBytes, 4)) return Fail{where("cannot read")};
    if ((u32_at(h.data() + kBlockHeaderBytes) & 0xffff) != kFillMemory) continue;
    const auto fail = [&](std::string_view what) {
      return Fail{fmt::format("{}: block {} at byte {}: {}", path_, index, at, what)};
    };
    if (body < kFillHeaderBytes) return fail("a fill-memory block too short for its header");
    if (!read_exact(*in_, h.data() + kBlockHeaderBytes + 4, kFillHeaderBytes - 4)) {
      return fail("cannot read");
    }
    const unsigned char* f = h.data() + kBlockHeaderBytes + 4;
    FillCommand c{index, u64_at(f + 8), u64_at(f + 16), u64_at(f + 24)};
    if (c.size != body - kFillHeaderBytes) {
      return fail(fmt::format("a fill-memory block of {} data bytes says it holds {}",
                              body - kFillHeaderBytes, c.size));
    }
    return std::optional<FillCommand>(c);
  }
  return std::optional<FillCommand>();
}

}  // namespace staging::sim
