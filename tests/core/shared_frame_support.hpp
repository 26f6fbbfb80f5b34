// Helpers of the SharedFrame property and stress tests: the payload the writers record, the bytes
// they write (a pattern of their own, never zeros) and the checks of a collected frame.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "staging/detail/core/shared_frame.hpp"

namespace staging::test {

/// Who placed an upload: the writer (thread) and its sequence number.
struct Origin {
  uint32_t writer = 0;
  uint32_t seq = 0;
  friend bool operator==(const Origin&, const Origin&) = default;
};

/// A writer's own record of a placement it made.
struct Made {
  uint64_t offset = 0;
  uint64_t size = 0;
  Origin origin;
  bool discarded = false;
};

/// The byte `i` of the upload `origin` writes: random-looking, different per writer and upload.
inline std::byte pattern_byte(Origin origin, uint64_t i) noexcept {
  uint64_t z = (uint64_t{origin.writer} << 32 | origin.seq) + 0x9E3779B97F4A7C15ull * (i / 8 + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::byte>((z >> ((i % 8) * 8)) & 0xFF);
}

/// Writes `origin`'s pattern into `bytes`.
inline void write_pattern(std::span<std::byte> bytes, Origin origin) noexcept {
  for (uint64_t i = 0; i < bytes.size(); ++i)
    bytes[i] = pattern_byte(origin, i);
}

/// Checks a collected frame against what the writers say they placed: sorted by offset, no
/// overlap, inside [base, base + memory.size()), aligned as asked (`alignment_of`), every
/// placement not discarded present exactly once with its payload, no other, and its bytes equal
/// to its writer's pattern. Returns "" or the first failure.
template <class AlignmentOf>
std::string check_collected(const SharedFrame<Origin>::Placements& view, std::vector<Made> made,
                            std::span<const std::byte> memory, uint64_t base,
                            AlignmentOf alignment_of) {
  const std::vector<FramePlacement<Origin>> collected(view.begin(), view.end());
  if (collected.size() != view.size()) {
    return "the view counts " + std::to_string(view.size()) + " placements and yields " +
           std::to_string(collected.size());
  }
  std::erase_if(made, [](const Made& m) { return m.discarded; });
  std::sort(made.begin(), made.end(),
            [](const Made& a, const Made& b) { return a.offset < b.offset; });
  if (collected.size() != made.size()) {
    return "collected " + std::to_string(collected.size()) + " placements, writers made " +
           std::to_string(made.size());
  }
  uint64_t previous_end = base;
  for (std::size_t i = 0; i < collected.size(); ++i) {
    const FramePlacement<Origin>& p = collected[i];
    const Made& m = made[i];
    const std::string at = "placement " + std::to_string(i) + " (writer " +
                           std::to_string(p.payload.writer) + " #" + std::to_string(p.payload.seq) +
                           " at " + std::to_string(p.offset) + ")";
    if (p.offset != m.offset || p.size != m.size || !(p.payload == m.origin)) {
      return at + ": differs from what its writer placed (lost, duplicated or moved)";
    }
    if (p.offset < previous_end) return at + ": overlaps the one before it";
    if (p.offset + p.size > base + memory.size()) return at + ": past the frame's end";
    const uint64_t alignment = alignment_of(p.payload);
    if (alignment > 1 && p.offset % alignment != 0) return at + ": misaligned";
    for (uint64_t b = 0; b < p.size; ++b) {
      if (memory[p.offset - base + b] != pattern_byte(p.payload, b)) {
        return at + ": byte " + std::to_string(b) + " is not what its writer wrote";
      }
    }
    previous_end = p.offset + p.size;
  }
  return "";
}

/// Checks that every byte of a drained frame's used range is accounted for: a placement (a
/// discarded one included), alignment padding before one (less than its alignment), padding
/// before a lane (lane_padding_bytes()), or stranded (a block's or a lane's unused end,
/// stranded_bytes()), none counted twice. Walking the placements in offset order, the gaps
/// between them hold the stranded bytes and the lanes' padding, plus at most
/// min(gap, alignment - 1) before each placement; a tail lost in a race (bytes that are none of
/// these) fails. Returns "" or the failure.
///
///   used  [ p0 |pad| p1 | stranded ...... |pad| p2 | ... | lane end (stranded) | p9 ... ]
template <class AlignmentOf>
std::string check_accounted(const SharedFrame<Origin>& frame, std::vector<Made> made,
                            AlignmentOf alignment_of) {
  std::sort(made.begin(), made.end(),
            [](const Made& a, const Made& b) { return a.offset < b.offset; });
  uint64_t at = frame.base_offset();
  uint64_t gaps = 0;
  uint64_t padding_room = 0;
  for (const Made& m : made) {
    if (m.offset < at) return "placements overlap at " + std::to_string(m.offset);
    const uint64_t gap = m.offset - at;
    gaps += gap;
    padding_room += std::min(gap, alignment_of(m.origin) - 1);
    at = m.offset + m.size;
  }
  const uint64_t used_end = frame.base_offset() + frame.used_bytes();
  if (at > used_end) return "a placement ends past the used range";
  gaps += used_end - at;
  const uint64_t skipped = frame.stranded_bytes() + frame.lane_padding_bytes();
  if (skipped > gaps) {
    return "stranded and lane padding bytes (" + std::to_string(skipped) +
           ") exceed the bytes no placement holds (" + std::to_string(gaps) + ")";
  }
  if (gaps - skipped > padding_room) {
    return std::to_string(gaps - skipped - padding_room) +
           " bytes of the used range are neither placed, padding nor stranded (a lost tail)";
  }
  return "";
}

}  // namespace staging::test
