// copy_to_staging (public in staging/cuda/copy.hpp): the fill threads' copy routine. The
// internal spelling staging::cuda::detail:: is kept for the layer's own sources.
#pragma once

#include "staging/cuda/copy.hpp"

namespace staging::cuda::detail {

using ::staging::cuda::copy_to_staging;
using ::staging::cuda::resolve;

}  // namespace staging::cuda::detail
