// copy_to_staging: the fill threads' copy routine, host bytes into the pinned ring.
//
// Internal to the cuda layer (GPU-free; tested without a GPU).
#pragma once

#include <cstddef>

#include "staging/cuda/uploader.hpp"

namespace staging::cuda::detail {

/// The method FillMethod::Auto stands for on this machine and build (Streaming on x86-64,
/// Memcpy elsewhere); other values are returned unchanged, except Streaming where it is not
/// available (non-x86-64), which becomes Memcpy.
[[nodiscard]] FillMethod resolve(FillMethod method) noexcept;

/// Copies `bytes` from `src` to `dst` (the ranges must not overlap; any alignment) by `method`
/// (resolved first). Streaming stores are fenced before return (sfence): the bytes are globally
/// visible to a thread, or a DMA engine, that synchronises with this one afterwards.
/// Threading: reentrant.
void copy_to_staging(std::byte* dst, const std::byte* src, std::size_t bytes,
                     FillMethod method) noexcept;

}  // namespace staging::cuda::detail
