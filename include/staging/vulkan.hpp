// Umbrella header of staging::vulkan: the Vulkan backend (docs/vulkan.md).
#pragma once

#include "staging/vulkan/dispatch.hpp"
#include "staging/vulkan/frame.hpp"
#include "staging/vulkan/memory.hpp"
#include "staging/vulkan/ring.hpp"
#include "staging/vulkan/streamer.hpp"
