// Umbrella header of staging::core: the GPU-free part of the library.
#pragma once

#include "staging/core/align.hpp"
#include "staging/core/assert.hpp"
#include "staging/core/byte_ring.hpp"
#include "staging/core/counters.hpp"
#include "staging/core/enum_names.hpp"
#include "staging/core/expected.hpp"
#include "staging/core/invariant_checker.hpp"
#include "staging/core/limits.hpp"
#include "staging/core/ring_observer.hpp"
#include "staging/core/slot_fence.hpp"
#include "staging/core/slot_lease.hpp"
#include "staging/core/slot_state.hpp"
#include "staging/core/staging_allocator.hpp"
#include "staging/core/staging_ring.hpp"
#include "staging/core/staging_stats.hpp"
#include "staging/core/timeline.hpp"
