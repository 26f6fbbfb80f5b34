// Random payloads for the core's streaming tests: never zero, so that a copy that did not happen
// cannot pass for one that did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace staging::test {

/// `n` pseudo-random bytes from `seed`, none of them zero.
inline std::vector<std::byte> random_bytes(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(static_cast<std::size_t>(n));
  for (auto& b : v)
    b = static_cast<std::byte>(rng() | 1);
  return v;
}

}  // namespace staging::test
