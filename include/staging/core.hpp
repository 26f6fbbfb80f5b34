// Umbrella header of staging::core: the GPU-free part of the library.
#pragma once

#include "staging/core/byte_ring.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/core/observer.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/core/stream.hpp"
#include "staging/core/timeline.hpp"
