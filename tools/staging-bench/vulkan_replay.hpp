// staging-bench --backend vulkan --replay TRACE: a trace of an application's uploads (docs/sim.md
// "Trace replay"; e.g. imported from a GFXReconstruct capture by staging-sim --gfxr) re-issued
// on the device twice — through the library (vulkan_replay_ring.cpp: a Ring frame per trace
// frame, the Streamer for uploads over the frame budget) and the application's own way as the
// trace records it (vulkan_replay_app.cpp) — with every destination read back and every byte
// compared. One table row per method and route (docs/vulkan.md, "Replaying a trace").
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "bench.hpp"
#include "vulkan_context.hpp"

namespace staging::bench::vk {

/// Adds --replay, --replay-frames and --replay-budget-mib to `group`.
void add_replay_options(CLI::Option_group& group);
/// True when --replay was given (the replay then runs instead of the scenarios).
[[nodiscard]] bool replay_requested();
/// Reads and checks the trace (before any device is touched): empty when usable, else what is
/// wrong with it (a usage error).
[[nodiscard]] std::string check_replay();
/// Replays the trace read by check_replay(); returns the number of failures (a byte mismatch, a
/// Vulkan error).
int run_replay(Context& vk, Report& report);

}  // namespace staging::bench::vk
