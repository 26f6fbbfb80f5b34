#include "trace_replay.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

namespace staging::sim {
namespace {

using Fail = Unexpected<std::string>;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_csv(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == line.npos ? line.npos : comma - start)));
    if (comma == line.npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::optional<int64_t> parse_frame(std::string_view s) {
  if (s.empty() || s == "-1") return -1;
  const std::optional<uint64_t> v = parse_u64(s);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<double> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

bool valid_kind(std::string_view k) {
  if (k.empty() || k.size() > 64) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// Virtual time from a number of time units (ns per unit).
std::optional<Duration> to_time(double value, double ns_per_unit) {
  const double ns = std::round(value * ns_per_unit);
  if (ns >= 9.2e18) return std::nullopt;
  return Duration{static_cast<Duration::rep>(ns)};
}

uint32_t kind_index(Workload& w, std::string_view kind) {
  for (uint32_t i = 0; i < w.kinds.size(); ++i) {
    if (w.kinds[i] == kind) return i;
  }
  w.kinds.emplace_back(kind);
  return static_cast<uint32_t>(w.kinds.size() - 1);
}

Expected<Workload, std::string> parse_csv(std::string_view text, std::string_view name) {
  Workload w;
  w.name = "trace:" + std::string(name);
  w.description = "uploads replayed from " + std::string(name);
  enum Col { Time, Size, Alignment, Kind, Frame, Granularity, kCols };
  std::array<int, kCols> col;
  col.fill(-1);
  double ns_per_unit = 1e3;
  bool header = false;
  std::size_t line_no = 0;
  std::size_t start = 0;
  const auto where = [&] { return std::string(name) + ":" + std::to_string(line_no) + ": "; };
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == text.npos ? text.npos : nl - start);
    start = nl == text.npos ? text.size() + 1 : nl + 1;
    ++line_no;
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> cells = split_csv(line);
    if (!header) {
      header = true;
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const std::string_view c = cells[i];
        int* slot = nullptr;
        if (c == "time_us" || c == "time_ms" || c == "time_ns") {
          slot = &col[Time];
          ns_per_unit = c == "time_us" ? 1e3 : c == "time_ms" ? 1e6 : 1.0;
        } else if (c == "size") {
          slot = &col[Size];
        } else if (c == "alignment") {
          slot = &col[Alignment];
        } else if (c == "kind") {
          slot = &col[Kind];
        } else if (c == "frame") {
          slot = &col[Frame];
        } else if (c == "granularity") {
          slot = &col[Granularity];
        } else {
          return Fail{where() + "unknown column '" + std::string(c) +
                      "' (columns: time_us|time_ms|time_ns, size, alignment, kind, frame, "
                      "granularity)"};
        }
        if (*slot != -1) return Fail{where() + "column '" + std::string(c) + "' appears twice"};
        *slot = static_cast<int>(i);
      }
      if (col[Time] < 0 || col[Size] < 0) {
        return Fail{where() + "the header must name a time column (time_us) and size"};
      }
      continue;
    }
    const auto cell = [&](Col c) -> std::string_view {
      return col[c] >= 0 && static_cast<std::size_t>(col[c]) < cells.size() ? cells[col[c]] : "";
    };
    const auto named = std::count_if(col.begin(), col.end(), [](int c) { return c >= 0; });
    if (cells.size() > static_cast<std::size_t>(named)) {
      return Fail{where() + "more cells than header columns"};
    }
    Upload u;
    const std::optional<double> t = parse_number(cell(Time));
    const std::optional<Duration> time = t ? to_time(*t, ns_per_unit) : std::nullopt;
    if (!time) return Fail{where() + "time must be a non-negative number"};
    u.time = *time;
    const std::optional<uint64_t> size = parse_u64(cell(Size));
    if (!size || *size == 0) return Fail{where() + "size must be an integer > 0"};
    u.size = *size;
    if (!cell(Alignment).empty()) {
      const std::optional<uint64_t> a = parse_u64(cell(Alignment));
      if (!a || *a == 0) return Fail{where() + "alignment must be an integer >= 1"};
      u.alignment = *a;
    }
    if (!cell(Granularity).empty()) {
      const std::optional<uint64_t> g = parse_u64(cell(Granularity));
      if (!g || *g == 0) return Fail{where() + "granularity must be an integer >= 1"};
      u.granularity = *g;
    }
    const std::optional<int64_t> frame = parse_frame(cell(Frame));
    if (!frame) return Fail{where() + "frame must be an integer >= 0, -1 or empty"};
    u.frame = *frame;
    const std::string_view kind = cell(Kind).empty() ? "upload" : cell(Kind);
    if (!valid_kind(kind)) return Fail{where() + "kind must be a word of [A-Za-z0-9_.-]"};
    u.kind = kind_index(w, kind);
    w.uploads.push_back(u);
  }
  if (!header) return Fail{std::string(name) + ": no header line"};
  return w;
}

Expected<Workload, std::string> parse_json(std::string_view text, std::string_view name) {
  using nlohmann::json;
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Fail{std::string(name) + ": not valid JSON"};
  Workload w;
  w.name = "trace:" + std::string(name);
  w.description = "uploads replayed from " + std::string(name);
  const json* uploads = &doc;
  if (doc.is_object()) {
    if (!doc.contains("uploads") || !doc["uploads"].is_array()) {
      return Fail{std::string(name) + ": expected an object with an \"uploads\" array"};
    }
    uploads = &doc["uploads"];
    if (doc.contains("stalls")) {
      if (!doc["stalls"].is_array()) return Fail{std::string(name) + ": \"stalls\" not an array"};
      for (const json& s : doc["stalls"]) {
        if (!s.is_object() || !s.contains("at_us") || !s.contains("for_us") ||
            !s["at_us"].is_number() || !s["for_us"].is_number() || s["at_us"].get<double>() < 0 ||
            s["for_us"].get<double>() < 0) {
          return Fail{std::string(name) + ": a stall needs numbers at_us and for_us (>= 0)"};
        }
        w.stalls.push_back(StallWindow{*to_time(s["at_us"].get<double>(), 1e3),
                                       *to_time(s["for_us"].get<double>(), 1e3)});
      }
    }
  } else if (!doc.is_array()) {
    return Fail{std::string(name) + ": expected an object or an array"};
  }
  std::size_t index = 0;
  for (const json& e : *uploads) {
    const std::string where = std::string(name) + ": upload " + std::to_string(index++) + ": ";
    if (!e.is_object()) return Fail{where + "not an object"};
    for (const auto& [key, value] : e.items()) {
      static constexpr std::string_view kKeys[] = {
          "time_us", "time_ms", "time_ns", "size", "alignment", "kind", "frame", "granularity"};
      if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
        return Fail{where + "unknown key '" + key + "'"};
      }
      (void)value;
    }
    Upload u;
    std::optional<Duration> time;
    for (const auto& [key, scale] :
         {std::pair{"time_us", 1e3}, std::pair{"time_ms", 1e6}, std::pair{"time_ns", 1.0}}) {
      if (!e.contains(key)) continue;
      if (!e[key].is_number() || e[key].get<double>() < 0) {
        return Fail{where + key + " must be a number >= 0"};
      }
      time = to_time(e[key].get<double>(), scale);
    }
    if (!time) return Fail{where + "needs time_us (or time_ms, time_ns)"};
    u.time = *time;
    const auto positive = [&](const char* key, uint64_t fallback,
                              uint64_t* out) -> std::optional<std::string> {
      if (!e.contains(key)) {
        *out = fallback;
        return std::nullopt;
      }
      if (!e[key].is_number_unsigned() || e[key].get<uint64_t>() == 0) {
        return where + key + " must be an integer > 0";
      }
      *out = e[key].get<uint64_t>();
      return std::nullopt;
    };
    if (!e.contains("size")) return Fail{where + "needs size"};
    if (auto bad = positive("size", 0, &u.size)) return Fail{*bad};
    if (auto bad = positive("alignment", 1, &u.alignment)) return Fail{*bad};
    if (auto bad = positive("granularity", 1, &u.granularity)) return Fail{*bad};
    if (e.contains("frame")) {
      const json& f = e["frame"];
      if (f.is_null()) {
        u.frame = -1;
      } else if (f.is_number_integer() && f.get<int64_t>() >= -1) {
        u.frame = f.get<int64_t>();
      } else {
        return Fail{where + "frame must be an integer >= -1 or null"};
      }
    }
    std::string kind = "upload";
    if (e.contains("kind")) {
      if (!e["kind"].is_string() || !valid_kind(e["kind"].get<std::string>())) {
        return Fail{where + "kind must be a word of [A-Za-z0-9_.-]"};
      }
      kind = e["kind"].get<std::string>();
    }
    u.kind = kind_index(w, kind);
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
  if (w.uploads.empty()) return Fail{std::string(name) + ": the trace has no uploads"};
  std::stable_sort(w.uploads.begin(), w.uploads.end(),
                   [](const Upload& a, const Upload& b) { return a.time < b.time; });
  return parsed;
}

Expected<Workload, std::string> read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail{path + ": cannot open"};
  std::ostringstream text;
  text << in.rdbuf();
  std::string name = path;
  if (const std::size_t slash = name.find_last_of('/'); slash != name.npos) {
    name = name.substr(slash + 1);
  }
  auto w = parse_trace(text.str(), path);
  if (w) {
    w->name = "trace:" + name;
    w->description = "uploads replayed from " + name;
  }
  return w;
}

}  // namespace staging::sim
