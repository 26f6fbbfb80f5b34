// Umbrella header of staging::cuda: bounded pinned staging for CUDA uploads (docs/cuda.md).
#pragma once

#include "staging/core/fill_pool.hpp"
#include "staging/cuda/multi_uploader.hpp"
#include "staging/cuda/uploader.hpp"
