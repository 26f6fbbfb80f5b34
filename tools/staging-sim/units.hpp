// The simulator's quantities: parsing and printing byte counts ("64MiB", "4096") and durations
// ("2ms", "1.5s"), the limits every time in an input must respect, and saturating sums. Pure
// functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "staging/core/timeline.hpp"

namespace staging::sim {

/// The longest time or duration an input may state (a trace's times, a stall, a delay model,
/// an option): 2^60 ns, about 36 years. Far beyond any real run, and small enough that sums of a
/// few times and durations never overflow.
inline constexpr Duration kTimeLimit{int64_t{1} << 60};
/// The simulated clock's limit: 2^61 ns, about 73 years. A run whose queue would complete work
/// later than this (e.g. huge uploads over a tiny --bandwidth) stops with an error.
inline constexpr Duration kClockLimit{int64_t{1} << 61};

/// A decimal number — digits with an optional fraction ("12", "1.5", ".25"; no sign, exponent,
/// hex or spaces) — times `scale`, the fraction rounded to nearest (`round`) or down. Fraction
/// digits beyond the ninth are checked and ignored. None on anything else or above `max`.
/// Precondition: scale <= 2^34.
[[nodiscard]] std::optional<uint64_t> parse_scaled(std::string_view text, uint64_t scale,
                                                   uint64_t max, bool round);

/// A byte count: a decimal number with an optional binary or decimal suffix — B, K/KiB, M/MiB,
/// G/GiB (powers of 1024), KB/MB/GB (powers of 1000). "64MiB", "512K", "1.5MiB" (rounded down),
/// "4096". None on anything else, or when the value does not fit 64 bits.
[[nodiscard]] std::optional<uint64_t> parse_bytes(std::string_view text);

/// A duration: a decimal number with a unit — ns, us, ms, s, min, h. "2ms", "1.5s", "250us",
/// "1h". None on anything else (a bare number has no unit and is refused) or above kTimeLimit.
[[nodiscard]] std::optional<Duration> parse_duration(std::string_view text);

/// "32.0 MiB", "512 KiB", "17 B": the largest binary unit that keeps the value >= 1.
[[nodiscard]] std::string format_bytes(uint64_t bytes);
/// "1.25 s", "12.3 ms", "850 us", "0 s"; from a year on "73.1 years".
[[nodiscard]] std::string format_duration(Duration d);
/// "12,345,678": an integer with thousands separators.
[[nodiscard]] std::string format_count(uint64_t value);
/// Nanoseconds as a double number of milliseconds (for tables and JSON).
[[nodiscard]] inline double to_ms(Duration d) {
  return static_cast<double>(d.count()) / 1e6;
}

/// `text` for an error message: in single quotes, bytes outside printable ASCII as \xNN, cut
/// after 40 characters ("..."), so a message about a binary file stays one readable line.
[[nodiscard]] std::string quote(std::string_view text);

/// a + b, or the largest value when that overflows (totals in reports).
[[nodiscard]] constexpr uint64_t add_sat(uint64_t a, uint64_t b) noexcept {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
/// a + b for durations >= 0, or Duration::max() when that overflows.
[[nodiscard]] constexpr Duration add_sat(Duration a, Duration b) noexcept {
  return b > Duration{0} && a > Duration::max() - b ? Duration::max() : a + b;
}

}  // namespace staging::sim
