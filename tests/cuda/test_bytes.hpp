// Random test payloads and byte comparison for the cuda tests (never zeros: a copy that did not
// happen cannot pass for one that did).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace staging::cuda::testing {

/// `bytes` pseudo-random bytes from `seed`, none of them zero.
inline std::vector<std::byte> random_bytes(std::size_t bytes, uint64_t seed) {
  std::vector<std::byte> out(bytes);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < bytes; i += 8) {
    uint64_t v = rng();
    for (std::size_t k = 0; k < 8 && i + k < bytes; ++k) {
      const auto b = static_cast<uint8_t>(v >> (8 * k));
      out[i + k] = static_cast<std::byte>(b == 0 ? 0x5A : b);
    }
  }
  return out;
}

/// "" when `a` and `b` hold the same `bytes` bytes, else where and how they first differ.
inline std::string first_difference(const std::byte* a, const std::byte* b, std::size_t bytes) {
  if (std::memcmp(a, b, bytes) == 0) return "";
  for (std::size_t i = 0; i < bytes; ++i) {
    if (a[i] != b[i]) {
      std::size_t n = 0;
      while (i + n < bytes && a[i + n] != b[i + n])
        ++n;
      return "first difference at byte " + std::to_string(i) + " of " + std::to_string(bytes) +
             " (" + std::to_string(static_cast<unsigned>(a[i])) + " vs " +
             std::to_string(static_cast<unsigned>(b[i])) + "), " + std::to_string(n) +
             " bytes differ from there";
    }
  }
  return "";
}

}  // namespace staging::cuda::testing
