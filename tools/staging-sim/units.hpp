// Parsing and printing of the simulator's quantities: byte counts ("64MiB", "4096") and durations
// ("2ms", "1.5s"). Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "staging/core/timeline.hpp"

namespace staging::sim {

/// A byte count: a non-negative integer with an optional binary or decimal suffix — B, K/KiB,
/// M/MiB, G/GiB (powers of 1024), KB/MB/GB (powers of 1000). "64MiB", "512K", "4096".
/// Fractions are allowed with a suffix ("1.5MiB") and rounded down to whole bytes. None on
/// anything else, or when the value does not fit 64 bits.
[[nodiscard]] std::optional<uint64_t> parse_bytes(std::string_view text);

/// A duration: a non-negative number with a unit — ns, us, ms, s. "2ms", "1.5s", "250us". None on
/// anything else (a bare number has no unit and is refused), or when it overflows.
[[nodiscard]] std::optional<Duration> parse_duration(std::string_view text);

/// "32.0 MiB", "512 KiB", "17 B": the largest binary unit that keeps the value >= 1.
[[nodiscard]] std::string format_bytes(uint64_t bytes);
/// "1.25 s", "12.3 ms", "850 us", "0 s".
[[nodiscard]] std::string format_duration(Duration d);
/// "12,345,678": an integer with thousands separators.
[[nodiscard]] std::string format_count(uint64_t value);
/// Nanoseconds as a double number of milliseconds (for tables and JSON).
[[nodiscard]] inline double to_ms(Duration d) {
  return static_cast<double>(d.count()) / 1e6;
}

}  // namespace staging::sim
