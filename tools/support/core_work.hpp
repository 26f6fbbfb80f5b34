// Work that keeps one CPU core's multiplier busy and touches no memory: 8 independent chains of
// multiply-adds (a core's throughput, not one chain's latency). Shared by staging-bench-core's
// CoreThroughput rows and staging-cpu-pairs, so that both measure the same thing. Any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

// Runs `steps` steps of the 8 chains from `seed`; returns their sum (use it, or the compiler may
// drop the work). Each step's values stay in registers, and the compiler may neither fold nor
// vectorise them across steps.
inline uint64_t independent_chains(uint64_t seed, uint32_t steps) {
  std::array<uint64_t, 8> x{};
  for (std::size_t c = 0; c < x.size(); ++c)
    x[c] = seed + c;
  for (uint32_t i = 0; i < steps; ++i) {
    for (auto& v : x)
      v = v * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile(""
                 : "+r"(x[0]), "+r"(x[1]), "+r"(x[2]), "+r"(x[3]), "+r"(x[4]), "+r"(x[5]),
                   "+r"(x[6]), "+r"(x[7]));
  }
  uint64_t sum = 0;
  for (const uint64_t v : x)
    sum += v;
  return sum;
}
