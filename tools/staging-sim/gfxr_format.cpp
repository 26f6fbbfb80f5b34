#include "gfxr_format.hpp"

#include <cctype>
#include <string>

namespace staging::sim {
namespace {

bool starts(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The number at the start of `s` (at most 5 digits); advances `s` past it. 0 when none.
uint32_t number(std::string_view& s) {
  uint32_t v = 0;
  std::size_t i = 0;
  for (; i < s.size() && i < 5 && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
    v = v * 10 + static_cast<uint32_t>(s[i] - '0');
  s.remove_prefix(i);
  return v;
}

std::optional<TexelBlock> compressed(std::string_view f) {
  if (starts(f, "BC1_") || starts(f, "BC4_")) return TexelBlock{8, 4, 4};
  if (starts(f, "BC2_") || starts(f, "BC3_") || starts(f, "BC5_") || starts(f, "BC6H_") ||
      starts(f, "BC7_")) {
    return TexelBlock{16, 4, 4};
  }
  if (starts(f, "ETC2_R8G8B8A8_")) return TexelBlock{16, 4, 4};
  if (starts(f, "ETC2_")) return TexelBlock{8, 4, 4};
  if (starts(f, "EAC_R11G11_")) return TexelBlock{16, 4, 4};
  if (starts(f, "EAC_R11_")) return TexelBlock{8, 4, 4};
  if (starts(f, "ASTC_")) {
    f.remove_prefix(5);
    const uint32_t w = number(f);
    if (f.empty() || f.front() != 'x') return std::nullopt;
    f.remove_prefix(1);
    const uint32_t h = number(f);
    if (w == 0 || h == 0 || f.empty() || f.front() != '_') return std::nullopt;
    return TexelBlock{16, w, h};
  }
  return std::nullopt;
}

// The bits of the channels named in `component` (e.g. "R8G8B8A8", "D24", "X8"), 0 when it is
// not a channel list.
uint32_t channel_bits(std::string_view component) {
  uint32_t bits = 0;
  while (!component.empty()) {
    if (std::string_view("RGBADSXE").find(component.front()) == std::string_view::npos) return 0;
    component.remove_prefix(1);
    const uint32_t b = number(component);
    if (b == 0) return 0;
    bits += b;
  }
  return bits;
}

}  // namespace

std::optional<TexelBlock> texel_block(std::string_view name, uint32_t aspect) {
  if (!starts(name, "VK_FORMAT_") || name.size() > 64) return std::nullopt;
  std::string_view f = name.substr(10);
  if (auto c = compressed(f)) return c;
  if (f.find("PLANE") != f.npos || f.find("422") != f.npos) return std::nullopt;
  const std::size_t pack = f.find("_PACK");
  if (pack != f.npos) {
    std::string_view bits = f.substr(pack + 5);
    const uint32_t b = number(bits);
    if (b == 0 || b % 8 != 0 || !bits.empty()) return std::nullopt;
    return TexelBlock{b / 8, 1, 1};
  }
  const bool depth = f.front() == 'D';
  const std::size_t stencil = f.find("_S8_UINT");
  if (depth || f == "S8_UINT") {
    if (aspect == 4 || f == "S8_UINT")
      return stencil != f.npos || f == "S8_UINT" ? std::optional(TexelBlock{1, 1, 1})
                                                 : std::nullopt;
    std::string_view d = f.substr(1);
    const uint32_t bits = number(d);
    if (bits == 16) return TexelBlock{2, 1, 1};
    if (bits == 24 || bits == 32) return TexelBlock{4, 1, 1};
    return std::nullopt;
  }
  const uint32_t bits = channel_bits(f.substr(0, f.find('_')));
  if (bits == 0 || bits % 8 != 0) return std::nullopt;
  return TexelBlock{bits / 8, 1, 1};
}

}  // namespace staging::sim
