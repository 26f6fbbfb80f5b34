// Copying host bytes into staging memory: the routine the fill threads run (fill_pool.hpp), public
// for producers that write staging memory themselves (from a decompressor's output, a file buffer).
//
// Staging memory is written once by the CPU and read by the GPU's DMA engine, never by this CPU
// again. Two ways to write it:
//  - Memcpy: plain stores through the caches. Fastest when the staging memory is already in the
//    CPU's last-level cache (a ring smaller than the cache that an upload cycles through): no DRAM
//    round trip, and the DMA engine reads the lines from the cache.
//  - Streaming: non-temporal stores that bypass the caches. Fastest when the staging memory is
//    not cached: no read-for-ownership of every destination line, one DRAM write per byte.
// Which one wins depends on the host and on the upload; docs/cuda.md shows where they cross.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "staging/detail/core/enum_names.hpp"

namespace staging {

/// How bytes are copied into staging memory.
enum class FillMethod : uint8_t {
  /// Chosen by whoever runs the copy: the Uploader per upload (see its FillMethod documentation);
  /// copy_to_staging() and a FillJob without another choice: Streaming on x86-64, Memcpy
  /// elsewhere.
  Auto,
  /// std::memcpy.
  Memcpy,
  /// Non-temporal (streaming) stores, AVX2 when the CPU has it, else SSE2; fenced before the copy
  /// returns. x86-64 only (Memcpy elsewhere).
  Streaming,
};

/// Names of FillMethod's values, in order, as the tools spell them (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<FillMethod>) noexcept {
  return std::to_array<std::string_view>({"auto", "memcpy", "streaming"});
}
static_assert(enum_names_complete<FillMethod>(), "FillMethod: a value has no name");

/// The method copy_to_staging() runs for `method` on this machine and build: Auto becomes
/// Streaming on x86-64 and Memcpy elsewhere; Streaming becomes Memcpy where it is not available
/// (non-x86-64); Memcpy stays Memcpy. Never returns Auto.
[[nodiscard]] FillMethod resolve_fill_method(FillMethod method) noexcept;

/// Copies `bytes` from `src` to `dst` (the ranges must not overlap; any alignment) by `method`.
/// Streaming stores are fenced before return (sfence): the bytes are visible to any thread (and
/// DMA engine) that synchronises with this one afterwards. Copies under 512 bytes use memcpy
/// whatever the method. `bytes` may be 0 (nothing is copied; the pointers must still be valid).
/// Threading: reentrant.
void copy_to_staging(std::byte* dst, const std::byte* src, std::size_t bytes,
                     FillMethod method = FillMethod::Auto) noexcept;

}  // namespace staging
