// The built-in workloads: deterministic upload scenarios generated from a seed, sized for the
// default configuration (a 32 MiB ring, 64 MiB cap, 2 frames in flight). docs/sim.md describes
// each one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "upload.hpp"

namespace staging::sim {

/// The built-in workloads' names, in the order --compare runs them.
[[nodiscard]] const std::vector<std::string_view>& workload_names();

/// Generates workload `name` for `duration` of virtual time from `seed` (same arguments, same
/// uploads). None for an unknown name.
[[nodiscard]] std::optional<Workload> make_workload(std::string_view name, uint64_t seed,
                                                    Duration duration);

}  // namespace staging::sim
