// copy_to_staging: the copy the Uploader's fill threads use, for in-place producers that copy
// into a StagingSpan themselves (from a decompressor's output, a file buffer, ...).
#pragma once

#include <cstddef>

#include "staging/cuda/uploader.hpp"

namespace staging::cuda {

/// The method FillMethod::Auto stands for on this machine and build (Streaming on x86-64, Memcpy
/// elsewhere); other values are returned unchanged, except Streaming where it is not available
/// (non-x86-64), which becomes Memcpy.
[[nodiscard]] FillMethod resolve(FillMethod method) noexcept;

/// Copies `bytes` from `src` to `dst` (the ranges must not overlap; any alignment) by `method`.
/// Streaming stores are fenced before return (sfence): the bytes are visible to any thread (and
/// DMA engine) that synchronises with this one afterwards — e.g. a commit() made after joining.
/// Use it for bytes that this CPU will not read again soon (the GPU reads them). Copies under
/// 512 bytes use memcpy whatever the method. `bytes` may be 0 (then nothing is copied; the
/// pointers must still be valid).
/// Threading: reentrant.
void copy_to_staging(std::byte* dst, const std::byte* src, std::size_t bytes,
                     FillMethod method = FillMethod::Auto) noexcept;

}  // namespace staging::cuda
