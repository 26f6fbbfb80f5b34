// Overflow-checked size arithmetic: every offset and size the library computes goes through
// these (invariant I2 of docs/safety.md). All functions are pure, constexpr, noexcept and safe
// from any thread.
#pragma once

#include <cstdint>
#include <optional>

namespace staging {

/// `value` rounded up to a multiple of `alignment`, or none when the rounding overflows 64 bits.
///
/// Any alignment is accepted, not only powers of two (texel blocks of 12 bytes, lcm() of mixed
/// rules). An alignment of zero is treated as one (no alignment requirement).
///   align_up(0, 8) == 0, align_up(9, 8) == 16, align_up(10, 3) == 12, align_up(5, 0) == 5,
///   align_up(UINT64_MAX, 2) == none.
[[nodiscard]] constexpr std::optional<uint64_t> align_up(uint64_t value,
                                                         uint64_t alignment) noexcept {
  if (alignment <= 1) return value;
  const uint64_t remainder = value % alignment;
  if (remainder == 0) return value;
  const uint64_t pad = alignment - remainder;
  if (value > UINT64_MAX - pad) return std::nullopt;
  return value + pad;
}

/// `a + b`, or none when the sum overflows 64 bits.
[[nodiscard]] constexpr std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) noexcept {
  if (a > UINT64_MAX - b) return std::nullopt;
  return a + b;
}

/// `a * b`, or none when the product overflows 64 bits.
[[nodiscard]] constexpr std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) noexcept {
  if (a != 0 && b > UINT64_MAX / a) return std::nullopt;
  return a * b;
}

/// True for 1, 2, 4, ...; false for 0.
[[nodiscard]] constexpr bool is_power_of_two(uint64_t value) noexcept {
  return value != 0 && (value & (value - 1)) == 0;
}

/// The smallest power of two >= `value` (1 for 0), or none when that exceeds 2^63.
[[nodiscard]] constexpr std::optional<uint64_t> next_power_of_two(uint64_t value) noexcept {
  if (value <= 1) return 1;
  if (value > (uint64_t{1} << 63)) return std::nullopt;
  uint64_t p = 1;
  while (p < value)
    p <<= 1;
  return p;
}

/// The greatest common divisor; gcd(0, b) == b, gcd(a, 0) == a, gcd(0, 0) == 0.
[[nodiscard]] constexpr uint64_t gcd(uint64_t a, uint64_t b) noexcept {
  while (b != 0) {
    const uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// The least common multiple of two alignments (0 is treated as 1), or none on overflow.
/// Used to combine alignment rules, e.g. lcm(texel block 12, optimal copy offset 128) == 384.
[[nodiscard]] constexpr std::optional<uint64_t> lcm(uint64_t a, uint64_t b) noexcept {
  if (a == 0) a = 1;
  if (b == 0) b = 1;
  return checked_mul(a / gcd(a, b), b);
}

}  // namespace staging
