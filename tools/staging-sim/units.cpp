#include "units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "staging/detail/core/align.hpp"

namespace staging::sim {
namespace {

bool all_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Splits "12.5MiB" into the number and the suffix after it (spaces between them skipped).
std::pair<std::string_view, std::string_view> split_suffix(std::string_view text) {
  const std::size_t end = std::min(text.find_first_not_of("0123456789."), text.size());
  std::string_view suffix = text.substr(end);
  suffix.remove_prefix(std::min(suffix.find_first_not_of(' '), suffix.size()));
  return {text.substr(0, end), suffix};
}

template <class T, std::size_t N>
std::optional<T> lookup(const std::array<std::pair<std::string_view, T>, N>& table,
                        std::string_view key) {
  for (const auto& [name, value] : table) {
    if (name == key) return value;
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> parse_scaled(std::string_view text, uint64_t scale, uint64_t max,
                                     bool round) {
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == text.npos ? std::string_view{} : text.substr(dot + 1);
  if ((whole.empty() && fraction.empty()) || !all_digits(whole) || !all_digits(fraction) ||
      (dot != text.npos && fraction.empty())) {
    return std::nullopt;
  }
  uint64_t w = 0;
  for (char c : whole) {
    const auto times_ten = checked_mul(w, 10);
    const auto next =
        times_ten ? checked_add(*times_ten, static_cast<uint64_t>(c - '0')) : std::nullopt;
    if (!next) return std::nullopt;
    w = *next;
  }
  // The first nine fraction digits, as billionths (f * scale fits 64 bits: scale <= 2^34).
  uint64_t f = 0;
  for (std::size_t i = 0; i < 9; ++i)
    f = f * 10 + (i < fraction.size() ? static_cast<uint64_t>(fraction[i] - '0') : 0);
  const auto scaled = checked_mul(w, scale);
  if (!scaled) return std::nullopt;
  const auto value = checked_add(*scaled, (f * scale + (round ? 500000000 : 0)) / 1000000000);
  if (!value || *value > max) return std::nullopt;
  return *value;
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 11> kUnits = {{
      {"", 1},
      {"B", 1},
      {"K", uint64_t{1} << 10},
      {"KiB", uint64_t{1} << 10},
      {"M", uint64_t{1} << 20},
      {"MiB", uint64_t{1} << 20},
      {"G", uint64_t{1} << 30},
      {"GiB", uint64_t{1} << 30},
      {"KB", 1000},
      {"MB", 1000000},
      {"GB", 1000000000},
  }};
  const auto [number, suffix] = split_suffix(text);
  const std::optional<uint64_t> scale = lookup(kUnits, suffix);
  if (!scale) return std::nullopt;
  return parse_scaled(number, *scale, UINT64_MAX, /*round=*/false);
}

std::optional<Duration> parse_duration(std::string_view text) {
  // Nanoseconds per unit, as a scale parse_scaled takes (<= 2^34) times a whole multiple: minutes
  // and hours are parsed as seconds, then multiplied.
  struct Unit {
    uint64_t scale;
    uint64_t times;
  };
  static constexpr std::array<std::pair<std::string_view, Unit>, 6> kUnits = {{
      {"ns", {1, 1}},
      {"us", {1000, 1}},
      {"ms", {1000000, 1}},
      {"s", {1000000000, 1}},
      {"min", {1000000000, 60}},
      {"h", {1000000000, 3600}},
  }};
  const auto [number, suffix] = split_suffix(text);
  const std::optional<Unit> unit = lookup(kUnits, suffix);
  if (!unit) return std::nullopt;
  const auto limit = static_cast<uint64_t>(kTimeLimit.count());
  const auto ns = parse_scaled(number, unit->scale, limit / unit->times, /*round=*/true);
  if (!ns) return std::nullopt;
  return Duration{static_cast<Duration::rep>(*ns * unit->times)};
}

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  if (v == std::floor(v)) return fmt::format("{:.0f} {}", v, kUnits[unit]);
  return v < 10 ? fmt::format("{:.2f} {}", v, kUnits[unit])
                : fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string format_duration(Duration d) {
  const double ns = static_cast<double>(d.count());
  if (ns == 0) return "0 s";
  if (d == Duration::max()) return "more than 292 years";  // a saturated total
  if (ns >= 365.25 * 86400e9) return fmt::format("{:.1f} years", ns / (365.25 * 86400e9));
  if (ns >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (ns >= 1e8) return fmt::format("{:.0f} ms", ns / 1e6);
  if (ns >= 1e6) return fmt::format("{:.1f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.0f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string format_count(uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string quote(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out + (text.size() > kMax ? "'..." : "'");
}

}  // namespace staging::sim
