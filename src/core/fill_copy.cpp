// copy_to_staging: memcpy or streaming (non-temporal) stores into staging memory. Staging memory is
// written once and read by the GPU's DMA engine, never by this CPU again; when it is not in the
// cache, writing it through the caches costs a read-for-ownership per line and evicts useful
// lines, which non-temporal stores avoid (one DRAM write per byte instead of a read and a write).
#include <cstdint>
#include <cstring>

#include "staging/core/fill_pool.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define STAGING_HAVE_STREAMING 1
#else
#define STAGING_HAVE_STREAMING 0
#endif

namespace staging {
namespace {

#if STAGING_HAVE_STREAMING

// Bytes from `dst` to the next multiple of `align` (a power of two), at most `bytes`.
std::size_t head_bytes(const std::byte* dst, std::size_t align, std::size_t bytes) noexcept {
  const auto mis = reinterpret_cast<std::uintptr_t>(dst) & (align - 1);
  const std::size_t head = mis == 0 ? 0 : align - mis;
  return head < bytes ? head : bytes;
}

void stream_sse2(std::byte* dst, const std::byte* src, std::size_t bytes) noexcept {
  const std::size_t head = head_bytes(dst, 16, bytes);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  while (bytes >= 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
    dst += 64;
    src += 64;
    bytes -= 64;
  }
  std::memcpy(dst, src, bytes);
  _mm_sfence();
}

__attribute__((target("avx2"))) void stream_avx2(std::byte* dst, const std::byte* src,
                                                 std::size_t bytes) noexcept {
  const std::size_t head = head_bytes(dst, 32, bytes);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  while (bytes >= 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 96), d);
    dst += 128;
    src += 128;
    bytes -= 128;
  }
  std::memcpy(dst, src, bytes);
  _mm_sfence();
}

bool cpu_has_avx2() noexcept {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

#endif

}  // namespace

FillMethod resolve_fill_method(FillMethod method) noexcept {
#if STAGING_HAVE_STREAMING
  return method == FillMethod::Auto ? FillMethod::Streaming : method;
#else
  (void)method;
  return FillMethod::Memcpy;
#endif
}

void copy_to_staging(std::byte* dst, const std::byte* src, std::size_t bytes,
                     FillMethod method) noexcept {
#if STAGING_HAVE_STREAMING
  // Below a few cache lines the head/tail handling dominates; memcpy is as good.
  if (resolve_fill_method(method) == FillMethod::Streaming && bytes >= 512) {
    if (cpu_has_avx2()) {
      stream_avx2(dst, src, bytes);
    } else {
      stream_sse2(dst, src, bytes);
    }
    return;
  }
#else
  (void)method;
#endif
  std::memcpy(dst, src, bytes);
}

}  // namespace staging
