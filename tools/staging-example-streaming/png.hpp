// A tiny PNG writer: 8-bit RGBA, one IDAT chunk compressed with zlib (Debian's zlib1g).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace example {

/// Writes `rgba` (width × height pixels, 4 bytes each, rows top to bottom) to `path` as a PNG.
/// Returns false (with nothing or a partial file written) when the file cannot be written.
bool write_png(const std::string& path, uint32_t width, uint32_t height,
               const std::vector<uint8_t>& rgba);

}  // namespace example
