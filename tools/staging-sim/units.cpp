#include "units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace staging::sim {
namespace {

// Splits "12.5MiB" into the number and the suffix. None when there is no leading number.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  std::size_t i = 0;
  bool digits = false, dot = false;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits) return std::nullopt;
  const std::string number(text.substr(0, i));
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  std::string_view suffix = text.substr(i);
  while (!suffix.empty() && suffix.front() == ' ')
    suffix.remove_prefix(1);
  return std::pair{value, suffix};
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::optional<uint64_t> parse_bytes(std::string_view text) {
  if (all_digits(text)) {  // exact integer path: no double rounding for large counts
    uint64_t v = 0;
    for (char c : text) {
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10) return std::nullopt;
      v = v * 10 + d;
    }
    return v;
  }
  const auto parts = split_number(text);
  if (!parts) return std::nullopt;
  const auto [value, suffix] = *parts;
  double scale = 0;
  if (suffix == "B" || suffix.empty()) {
    scale = 1;
  } else if (suffix == "K" || suffix == "KiB") {
    scale = 1024.0;
  } else if (suffix == "M" || suffix == "MiB") {
    scale = 1024.0 * 1024.0;
  } else if (suffix == "G" || suffix == "GiB") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else if (suffix == "KB") {
    scale = 1e3;
  } else if (suffix == "MB") {
    scale = 1e6;
  } else if (suffix == "GB") {
    scale = 1e9;
  } else {
    return std::nullopt;
  }
  const double bytes = std::floor(value * scale);
  if (bytes >= 18446744073709551616.0) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<Duration> parse_duration(std::string_view text) {
  const auto parts = split_number(text);
  if (!parts) return std::nullopt;
  const auto [value, suffix] = *parts;
  double ns_per = 0;
  if (suffix == "ns") {
    ns_per = 1;
  } else if (suffix == "us") {
    ns_per = 1e3;
  } else if (suffix == "ms") {
    ns_per = 1e6;
  } else if (suffix == "s") {
    ns_per = 1e9;
  } else {
    return std::nullopt;
  }
  const double ns = std::round(value * ns_per);
  if (ns >= 9.2e18) return std::nullopt;
  return Duration{static_cast<Duration::rep>(ns)};
}

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

std::string format_duration(Duration d) {
  const double ns = static_cast<double>(d.count());
  char buf[32];
  if (ns == 0) return "0 s";
  if (ns >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  } else if (ns >= 1e6) {
    std::snprintf(buf, sizeof buf, ns >= 1e8 ? "%.0f ms" : "%.1f ms", ns / 1e6);
  } else if (ns >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f us", ns / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  }
  return buf;
}

std::string format_count(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(digits[i]);
    const std::size_t left = n - 1 - i;
    if (left > 0 && left % 3 == 0) out.push_back(',');
  }
  return out;
}

}  // namespace staging::sim
