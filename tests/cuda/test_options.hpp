// UploadOptions in one expression for the cuda tests (GCC 12 warns about designated initializers
// that leave members out under -Wextra).
#pragma once

#include <optional>

#include "staging/cuda/uploader.hpp"

namespace staging::cuda::testing {

inline UploadOptions opts(std::optional<ExhaustionPolicy> policy,
                          std::optional<Duration> timeout = std::nullopt, uint64_t alignment = 0) {
  UploadOptions o;
  o.policy = policy;
  o.timeout = timeout;
  o.alignment = alignment;
  return o;
}

}  // namespace staging::cuda::testing
