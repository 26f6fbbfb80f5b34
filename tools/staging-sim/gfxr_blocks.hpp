// The fill-memory commands of a GFXReconstruct capture file (.gfxr): the bytes an application
// wrote into mapped device memory, which the capture layer records as metadata blocks and
// gfxrecon-convert's JSON Lines leave out.
//
// The file format (GFXReconstruct's framework/format/format.h, little-endian, packed to 4 bytes):
//   file header   fourcc "GFXR", major and minor version (uint32 each), option count (uint32),
//                 then that many (key, value) uint32 pairs; key 1 is the compression type
//                 (0 none, 1 LZ4, 2 zlib, 3 Zstandard)
//   blocks        each a header (size: uint64, the bytes after the header; type: uint32) and
//                 `size` bytes. Types: 1 frame marker, 2 state marker, 3 metadata, 4 function
//                 call, 5 annotation, 6 method call; bit 31 marks a compressed block.
//   fill memory   a metadata block whose id's low 16 bits are 2: thread id, memory id, offset
//                 (from the start of the mapped range, not of the memory object) and data size
//                 (uint64 each), then the data.
// Blocks are numbered from 0 in file order; gfxrecon-convert writes that number as each JSON
// line's "index", which places every fill-memory command among the calls.
//
// Only uncompressed captures are read: a compressed one is refused with the command that
// decompresses it. The reader streams the file (one block header at a time, the data skipped) in
// time linear in its size, and refuses a truncated block, a size past the end of the file and an
// unknown block type with the byte offset where it stopped. Not synchronised; one thread.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>

#include "staging/core/errors.hpp"

namespace staging::sim {

/// One fill-memory command: `size` bytes written at `offset` into the mapped range of memory
/// object `memory_id` (the capture's handle id, as in the JSON Lines), block `block_index`.
struct FillCommand {
  uint64_t block_index = 0;
  uint64_t memory_id = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// Reads a capture's fill-memory commands in file order. Move-only (owns the open file).
class FillMemoryReader {
 public:
  /// Opens `path` and checks its header. Errors: the file cannot be opened, is not a
  /// GFXReconstruct capture, or is compressed (the message says how to decompress it).
  [[nodiscard]] static Expected<FillMemoryReader, std::string> open(const std::string& path);
  /// The same for a capture already open as `in` (seekable; tests and the fuzzer read from
  /// memory); `name` is used in messages.
  [[nodiscard]] static Expected<FillMemoryReader, std::string> open(
      std::unique_ptr<std::istream> in, std::string name);

  /// The next fill-memory command, or none at the end of the file. Errors name the file, the
  /// block and its byte offset: a truncated block, a size past the end, an unknown block type,
  /// a fill-memory block whose data size disagrees with the block's.
  [[nodiscard]] Expected<std::optional<FillCommand>, std::string> next();

  /// Blocks read so far (the index the next block will have).
  [[nodiscard]] uint64_t blocks() const noexcept { return index_; }

 private:
  FillMemoryReader(std::string path, std::unique_ptr<std::istream> in, uint64_t size, uint64_t pos)
      : path_(std::move(path)), in_(std::move(in)), size_(size), pos_(pos) {}
  [[nodiscard]] std::string where(std::string_view what) const;

  std::string path_;
  std::unique_ptr<std::istream> in_;
  uint64_t size_ = 0;   // the file's bytes
  uint64_t pos_ = 0;    // the next block header's offset
  uint64_t index_ = 0;  // the next block's index
};

}  // namespace staging::sim
