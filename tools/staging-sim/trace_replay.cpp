#include "trace_replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "staging/detail/core/align.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

using Fail = Unexpected<std::string>;
using nlohmann::json;

// Upload::kind until a kind is given (then "upload" when none is).
constexpr uint32_t kNoKind = UINT32_MAX;

enum class Field : uint8_t { Time, Size, Alignment, Kind, Frame, Granularity };

// A column (CSV) or key (JSON) of an upload.
struct Key {
  std::string_view name;
  Field field;
  uint64_t ns_per_unit = 0;  // Time only
};

constexpr Key kKeys[] = {
    {"time_us", Field::Time, 1000},  {"time_ms", Field::Time, 1000000},
    {"time_ns", Field::Time, 1},     {"size", Field::Size},
    {"alignment", Field::Alignment}, {"kind", Field::Kind},
    {"frame", Field::Frame},         {"granularity", Field::Granularity},
};
constexpr std::string_view kKeyNames =
    "time_us|time_ms|time_ns, size, alignment, kind, frame, granularity";

const Key* find_key(std::string_view name) {
  const auto* k = std::find_if(std::begin(kKeys), std::end(kKeys),
                               [&](const Key& key) { return key.name == name; });
  return k == std::end(kKeys) ? nullptr : k;
}

// What a field's value must be (completes "<key> must be ...").
std::string_view rule(Field f) {
  switch (f) {
    case Field::Time:
      return "a number >= 0 (digits and a decimal point; at most 36 years)";
    case Field::Size:
    case Field::Alignment:
    case Field::Granularity:
      return "an integer >= 1 (at most 2^64 - 1)";
    case Field::Frame:
      return "an integer >= 0 (at most 2^63 - 1), or -1, empty or null: not tied to a frame";
    case Field::Kind:
      return "a word of [A-Za-z0-9_.-], 1 to 64 characters";
  }
  return "valid";
}

bool valid_kind(std::string_view k) {
  return !k.empty() && k.size() <= 64 && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

std::optional<uint64_t> integer(std::string_view s) {
  if (s.find('.') != s.npos) return std::nullopt;
  return parse_scaled(s, 1, UINT64_MAX, false);
}

std::optional<Duration> time_of(uint64_t ns) {
  if (ns > static_cast<uint64_t>(kTimeLimit.count())) return std::nullopt;
  return Duration{static_cast<Duration::rep>(ns)};
}

// A JSON time in units of `ns_per_unit`: an integer, or a finite non-negative float (rounded to
// the nanosecond); none above kTimeLimit.
std::optional<Duration> json_time(const json& v, uint64_t ns_per_unit) {
  if (v.is_number_unsigned()) {
    const auto ns = checked_mul(v.get<uint64_t>(), ns_per_unit);
    return ns ? time_of(*ns) : std::nullopt;
  }
  if (!v.is_number_float()) return std::nullopt;
  const double ns = v.get<double>() * static_cast<double>(ns_per_unit);
  if (!std::isfinite(ns) || ns < 0 || ns > static_cast<double>(kTimeLimit.count())) {
    return std::nullopt;
  }
  return time_of(static_cast<uint64_t>(std::llround(ns)));
}

std::optional<uint64_t> positive(std::optional<uint64_t> v) {
  return v && *v > 0 ? v : std::nullopt;
}

// Sets field `key` of `u` from a CSV cell. False when the cell breaks the field's rule.
bool set_field(Workload& w, Upload& u, const Key& key, std::string_view cell) {
  switch (key.field) {
    case Field::Time: {
      const auto ns = parse_scaled(cell, key.ns_per_unit, static_cast<uint64_t>(kTimeLimit.count()),
                                   /*round=*/true);
      if (ns) u.time = Duration{static_cast<Duration::rep>(*ns)};
      return ns.has_value();
    }
    case Field::Size:
      return (u.size = positive(integer(cell)).value_or(0)) > 0;
    case Field::Alignment:
      return cell.empty() || (u.alignment = positive(integer(cell)).value_or(0)) > 0;
    case Field::Granularity:
      return cell.empty() || (u.granularity = positive(integer(cell)).value_or(0)) > 0;
    case Field::Frame: {
      if (cell.empty() || cell == "-1") return true;
      const auto f = integer(cell);
      if (!f || *f > static_cast<uint64_t>(INT64_MAX)) return false;
      u.frame = static_cast<int64_t>(*f);
      return true;
    }
    case Field::Kind:
      if (cell.empty()) return true;
      if (!valid_kind(cell)) return false;
      u.kind = w.kind_id(cell);
      return true;
  }
  return false;
}

// Sets field `key` of `u` from a JSON value. False when the value breaks the field's rule.
bool set_field(Workload& w, Upload& u, const Key& key, const json& v) {
  const auto unsigned_value = [&]() -> std::optional<uint64_t> {
    return v.is_number_unsigned() ? std::optional(v.get<uint64_t>()) : std::nullopt;
  };
  switch (key.field) {
    case Field::Time: {
      const auto t = json_time(v, key.ns_per_unit);
      if (t) u.time = *t;
      return t.has_value();
    }
    case Field::Size:
      return (u.size = positive(unsigned_value()).value_or(0)) > 0;
    case Field::Alignment:
      return (u.alignment = positive(unsigned_value()).value_or(0)) > 0;
    case Field::Granularity:
      return (u.granularity = positive(unsigned_value()).value_or(0)) > 0;
    case Field::Frame: {
      if (v.is_null() ||
          (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() == -1)) {
        return true;
      }
      const auto f = unsigned_value();
      if (!f || *f > static_cast<uint64_t>(INT64_MAX)) return false;
      u.frame = static_cast<int64_t>(*f);
      return true;
    }
    case Field::Kind:
      if (!v.is_string() || !valid_kind(v.get_ref<const std::string&>())) return false;
      u.kind = w.kind_id(v.get_ref<const std::string&>());
      return true;
  }
  return false;
}

std::string_view trim(std::string_view s) {
  const std::size_t begin = s.find_first_not_of(" \t\r");
  if (begin == s.npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

std::vector<std::string_view> split_csv(std::string_view line) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == line.npos ? line.npos : comma - start)));
    if (comma == line.npos) return out;
    start = comma + 1;
  }
}

Workload named(std::string_view name) {
  Workload w;
  w.name = fmt::format("trace:{}", name);
  w.description = fmt::format("uploads replayed from {}", name);
  return w;
}

// The header's columns: every one known, none twice, time and size present.
Expected<std::vector<const Key*>, std::string> read_header(
    const std::vector<std::string_view>& cells) {
  std::vector<const Key*> columns;
  for (std::string_view c : cells) {
    const Key* key = find_key(c);
    if (key == nullptr) {
      return Fail{fmt::format("unknown column {} (columns: {})", quote(c), kKeyNames)};
    }
    if (std::any_of(columns.begin(), columns.end(),
                    [&](const Key* k) { return k->field == key->field; })) {
      return Fail{fmt::format("column {} repeats a column", quote(c))};
    }
    columns.push_back(key);
  }
  const auto has = [&](Field f) {
    return std::any_of(columns.begin(), columns.end(), [&](const Key* k) { return k->field == f; });
  };
  if (!has(Field::Time) || !has(Field::Size)) {
    return Fail{std::string("the header must name a time column (time_us) and size")};
  }
  return columns;
}

Expected<Workload, std::string> parse_csv(std::string_view text, std::string_view name) {
  Workload w = named(name);
  std::optional<std::vector<const Key*>> columns;
  std::size_t line_no = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t nl = text.find('\n', start);
    const std::string_view line = trim(text.substr(start, nl == text.npos ? nl : nl - start));
    start = nl == text.npos ? text.size() : nl + 1;
    ++line_no;
    const auto fail = [&](const std::string& why) {
      return Fail{fmt::format("{}:{}: {}", name, line_no, why)};
    };
    if (line.empty() || line.front() == '#') continue;
    if (nl == text.npos) return fail("the last line has no newline: is the file cut short?");
    const std::vector<std::string_view> cells = split_csv(line);
    if (!columns) {
      auto header = read_header(cells);
      if (!header) return fail(header.error());
      columns = std::move(*header);
      continue;
    }
    if (cells.size() > columns->size()) return fail("more cells than header columns");
    Upload u;
    u.kind = kNoKind;
    for (std::size_t i = 0; i < columns->size(); ++i) {
      const Key& key = *(*columns)[i];
      const std::string_view cell = i < cells.size() ? cells[i] : std::string_view{};
      if (!set_field(w, u, key, cell)) {
        return fail(fmt::format("{} must be {}, not {}", key.name, rule(key.field), quote(cell)));
      }
    }
    if (u.kind == kNoKind) u.kind = w.kind_id("upload");
    w.uploads.push_back(u);
  }
  if (!columns) return Fail{fmt::format("{}: no header line", name)};
  return w;
}

Expected<StallWindow, std::string> parse_stall(const json& s) {
  const auto get = [&](const char* key) -> std::optional<Duration> {
    const auto it = s.find(key);
    return it == s.end() ? std::nullopt : json_time(*it, 1000);
  };
  const std::optional<Duration> at = s.is_object() ? get("at_us") : std::nullopt;
  const std::optional<Duration> length = s.is_object() ? get("for_us") : std::nullopt;
  if (!at || !length || s.size() != 2) {
    return Fail{std::string(
        "a stall is {\"at_us\": A, \"for_us\": F}, each a number >= 0 (at most 36 years)")};
  }
  return StallWindow{*at, *length};
}

Expected<Workload, std::string> parse_json(std::string_view text, std::string_view name) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return Fail{fmt::format("{}: not valid JSON (at byte {})", name, e.byte)};
  } catch (const json::exception&) {  // e.g. 1e400: a number no double holds
    return Fail{fmt::format("{}: not valid JSON (a number out of range)", name)};
  }
  Workload w = named(name);
  const json* uploads = &doc;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) {
      if ((key == "uploads" || key == "stalls") && !value.is_array()) {
        return Fail{fmt::format("{}: \"{}\" must be an array", name, key)};
      }
      if (key == "uploads") {
        uploads = &value;
      } else if (key == "stalls") {
        for (const json& s : value) {
          auto stall = parse_stall(s);
          if (!stall)
            return Fail{fmt::format("{}: stall {}: {}", name, w.stalls.size(), stall.error())};
          w.stalls.push_back(*stall);
        }
      } else {
        return Fail{fmt::format(
            "{}: unexpected {} at the top level (an object has an \"uploads\" array and "
            "optionally a \"stalls\" array)",
            name, quote(key))};
      }
    }
    if (uploads == &doc) return Fail{fmt::format("{}: expected an \"uploads\" array", name)};
  } else if (!doc.is_array()) {
    return Fail{fmt::format("{}: expected an object or an array", name)};
  }
  for (const json& e : *uploads) {
    const auto fail = [&](const std::string& why) {
      return Fail{fmt::format("{}: upload {}: {}", name, w.uploads.size(), why)};
    };
    if (!e.is_object()) return fail("not an object");
    Upload u;
    u.kind = kNoKind;
    bool has_time = false, has_size = false;
    for (const auto& [key_name, value] : e.items()) {
      const Key* key = find_key(key_name);
      if (key == nullptr) return fail(fmt::format("unknown key {}", quote(key_name)));
      if (key->field == Field::Time && std::exchange(has_time, true)) {
        return fail("more than one time key");
      }
      has_size = has_size || key->field == Field::Size;
      if (!set_field(w, u, *key, value)) {
        return fail(fmt::format("{} must be {}", key->name, rule(key->field)));
      }
    }
    if (!has_time) return fail("needs time_us (or time_ms, time_ns)");
    if (!has_size) return fail("needs size");
    if (u.kind == kNoKind) u.kind = w.kind_id("upload");
    w.uploads.push_back(u);
  }
  return w;
}

}  // namespace

Expected<Workload, std::string> parse_trace(std::string_view text, std::string_view name) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const bool json = first != text.npos && (text[first] == '{' || text[first] == '[');
  auto parsed = json ? parse_json(text, name) : parse_csv(text, name);
  if (!parsed) return parsed;
  Workload& w = *parsed;
  if (w.uploads.empty()) return Fail{fmt::format("{}: the trace has no uploads", name)};
  std::stable_sort(w.uploads.begin(), w.uploads.end(),
                   [](const Upload& a, const Upload& b) { return a.time < b.time; });
  return parsed;
}

Expected<Workload, std::string> read_trace(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Fail{fmt::format("{}: cannot open: {}", path,
                            errno != 0 ? std::strerror(errno) : "unknown reason")};
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto w = parse_trace(text.str(), path);
  if (w) {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    w->name = fmt::format("trace:{}", name);
    w->description = fmt::format("uploads replayed from {}", name);
  }
  return w;
}

}  // namespace staging::sim
