// libFuzzer target: a ByteRing driven by an operation sequence decoded from the input, checked
// after every step against the reference model of byte_ring_harness.hpp (properties M1–M8: no
// overlap with live intervals, FIFO reclamation only after completion, bytes intact until the GPU
// read them, held bytes <= cap, waits <= timeout, right refusals, a silent InvariantChecker).
// A broken property aborts (a crash for libFuzzer); so does anything ASan or UBSan finds.
//
// Input: 16 bytes of ring setup (capacity, cap, policy, timeouts, delay model), then 13 bytes per
// operation (kind, three 32-bit arguments), at most kMaxOps operations. Shorter inputs are padded
// with zeros. Built only with clang (-fsanitize=fuzzer,address,undefined): tests/core/fuzz/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../byte_ring_harness.hpp"

namespace {

constexpr std::size_t kSetupBytes = 16;
constexpr std::size_t kOpBytes = 13;
constexpr std::size_t kMaxOps = 4096;

uint32_t read32(const uint8_t* data, std::size_t size, std::size_t at) {
  uint8_t b[4] = {};
  for (std::size_t i = 0; i < 4; ++i)
    b[i] = at + i < size ? data[at + i] : 0;
  uint32_t v;
  std::memcpy(&v, b, 4);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace staging::harness;
  const Setup setup = Setup::from(read32(data, size, 0), read32(data, size, 4),
                                  read32(data, size, 8), read32(data, size, 12));
  Harness h(setup);
  if (!h.ok()) {
    std::fprintf(stderr, "fuzz: ring could not be created for %s\n", describe(setup).c_str());
    std::abort();
  }
  const std::size_t ops = size > kSetupBytes ? (size - kSetupBytes) / kOpBytes : 0;
  for (std::size_t i = 0; i < ops && i < kMaxOps; ++i) {
    const std::size_t at = kSetupBytes + i * kOpBytes;
    const Op op = Op::from(data[at], read32(data, size, at + 1), read32(data, size, at + 5),
                           read32(data, size, at + 9));
    if (!h.step(op)) {
      std::fprintf(stderr, "fuzz: property broken at op %zu (%s) on ring %s:\n  %s\n", i,
                   name(op.kind), describe(setup).c_str(), h.failure().c_str());
      std::abort();
    }
  }
  return 0;
}
