#include "gfxr_import.hpp"

#include <fmt/format.h>

#include <fstream>

#include "gfxr_tracker.hpp"

namespace staging::sim {
namespace {

using nlohmann::json;
using Fail = Unexpected<std::string>;

constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;
constexpr int kMaxDepth = 64;

enum class LineRead : uint8_t { Line, End, TooLong };

// The next line of `in` into `line` (without its '\n'); TooLong past kMaxLineBytes.
LineRead read_line(std::streambuf& in, std::string& line) {
  line.clear();
  for (;;) {
    char buffer[4096];
    std::size_t n = 0;
    int c = 0;
    while (n < sizeof buffer && (c = in.sbumpc()) != std::char_traits<char>::eof() && c != '\n')
      buffer[n++] = static_cast<char>(c);
    if (line.size() + n > kMaxLineBytes) return LineRead::TooLong;
    line.append(buffer, n);
    if (c == '\n') return LineRead::Line;
    if (c == std::char_traits<char>::eof()) return line.empty() ? LineRead::End : LineRead::Line;
  }
}

// The deepest nesting of arrays and objects in `text` (outside strings).
int depth_of(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// The fill-memory commands still to merge, and the last block index seen.
struct FillState {
  FillMemoryReader* fills = nullptr;
  std::optional<FillCommand> pending;
  std::optional<uint64_t> last_index;
};

// Feeds the tracker every fill-memory command before block `index` (all of them: UINT64_MAX).
Expected<void, std::string> fills_before(FillState& state, uint64_t index, gfxr::Tracker& tracker) {
  if (state.fills == nullptr) return {};
  for (;;) {
    if (!state.pending) {
      auto next = state.fills->next();
      if (!next) return Fail{next.error()};
      if (!*next) return {};
      state.pending = **next;
    }
    if (state.pending->block_index >= index) return {};
    if (auto e = tracker.host_write(*state.pending); !e) return e;
    state.pending.reset();
  }
}

// Follows one JSON line: its block index (which must grow; the fill-memory commands before it go
// first), then its call. Errors are the line's.
Expected<void, std::string> follow_line(const std::string& line, FillState& state,
                                        gfxr::Tracker& tracker) {
  if (depth_of(line) > kMaxDepth) return Fail{std::string("nested deeper than 64 levels")};
  json doc;
  try {
    doc = json::parse(line);
  } catch (const json::exception& e) {
    return Fail{
        fmt::format("not valid JSON (is the file cut short, or not gfxrecon-convert's "
                    "JSON Lines?): {}",
                    e.what())};
  }
  if (!doc.is_object())
    return Fail{std::string("not a JSON object (gfxrecon-convert writes one a line)")};
  const auto index = doc.find("index");
  if (index != doc.end()) {
    if (!index->is_number_unsigned()) return Fail{std::string("\"index\" is not a block number")};
    const uint64_t i = index->get<uint64_t>();
    if (state.last_index && i <= *state.last_index) {
      return Fail{fmt::format("block index {} after {}: the lines are out of capture order", i,
                              *state.last_index)};
    }
    state.last_index = i;
    if (auto e = fills_before(state, i, tracker); !e) return e;
  }
  const auto call = doc.find("vkFunc");
  if (call == doc.end()) return {};  // the header, annotations, metadata
  const json& fn_value = *call;
  const json* fn = fn_value.is_object() ? &fn_value : nullptr;
  const json* fname = fn != nullptr && fn->contains("name") ? &(*fn)["name"] : nullptr;
  if (fname == nullptr || !fname->is_string()) {
    return Fail{std::string("\"vkFunc\" without a \"name\"")};
  }
  static const json kNull;
  const auto args = fn->find("args");
  const auto ret = fn->find("return");
  return tracker.call(fname->get<std::string>(), args == fn->end() ? kNull : *args,
                      ret == fn->end() ? kNull : *ret);
}

}  // namespace

Expected<GfxrImport, std::string> import_gfxr(std::istream& jsonl, std::string_view name,
                                              FillMemoryReader* fills) {
  gfxr::Tracker tracker;
  FillState state{fills, std::nullopt, std::nullopt};
  std::string line;
  uint64_t line_no = 0;
  for (LineRead r; (r = read_line(*jsonl.rdbuf(), line)) != LineRead::End;) {
    ++line_no;
    if (r == LineRead::TooLong)
      return Fail{fmt::format("{}:{}: a line longer than 64 MiB", name, line_no)};
    if (line.find_first_not_of(" \t\r") == line.npos) continue;
    if (auto e = follow_line(line, state, tracker); !e) {
      return Fail{fmt::format("{}:{}: {}", name, line_no, e.error())};
    }
  }
  if (auto e = fills_before(state, UINT64_MAX, tracker); !e) return Fail{e.error()};
  if (fills != nullptr && state.last_index && *state.last_index >= fills->blocks()) {
    return Fail{
        fmt::format("{} reaches block {}, but the capture has {} blocks: are the two "
                    "files from the same capture?",
                    name, *state.last_index, fills->blocks())};
  }
  GfxrImport out = tracker.finish(name);
  out.stats.lines = line_no;
  return out;
}

Expected<GfxrImport, std::string> import_gfxr(const std::string& jsonl, const std::string& binary) {
  std::ifstream in(jsonl, std::ios::binary);
  if (!in) return Fail{fmt::format("{}: cannot open", jsonl)};
  std::optional<FillMemoryReader> fills;
  if (!binary.empty()) {
    auto reader = FillMemoryReader::open(binary);
    if (!reader) return Fail{reader.error()};
    fills.emplace(std::move(*reader));
  }
  return import_gfxr(in, jsonl, fills ? &*fills : nullptr);
}

nlohmann::ordered_json import_stats_json(const ImportStats& s) {
  using nlohmann::ordered_json;
  const auto by_command = [](const std::array<uint64_t, 3>& v) {
    ordered_json o;
    for (std::size_t i = 0; i < v.size(); ++i)
      o[kCopyCommandNames[i]] = v[i];
    return o;
  };
  ordered_json skipped = ordered_json::object();
  for (const auto& [reason, n] : s.skipped)
    skipped[reason] = n;
  return {{"copy_commands", by_command(s.commands)},
          {"regions", by_command(s.regions)},
          {"bytes", by_command(s.bytes)},
          {"host_writes", s.host_writes},
          {"host_write_bytes", s.host_write_bytes},
          {"imported",
           {{"uploads", by_command(s.imported_uploads)},
            {"bytes", by_command(s.imported_bytes)},
            {"host_writes", s.imported_host_writes},
            {"host_write_bytes", s.imported_host_write_bytes}}},
          {"submissions", s.submissions},
          {"presents", s.presents},
          {"frames", s.frames},
          {"app_staging_peak_bytes", s.app_staging_peak_bytes},
          {"completion",
           {{"learned", s.completions_learned},
            {"unknown", s.completions_unknown},
            {"lag_frames",
             {{"p50", s.lag_frames[0]}, {"p99", s.lag_frames[1]}, {"max", s.lag_frames[2]}}}}},
          {"lines", s.lines},
          {"calls", s.calls},
          {"skipped", skipped}};
}

std::string trace_csv(const Workload& w) {
  std::string out = "time_us,size,alignment,kind,frame,granularity\n";
  for (const Upload& u : w.uploads) {
    const int64_t ns = u.time.count();
    out += fmt::format("{}.{:03},{},{},{},{},{}\n", ns / 1000, ns % 1000, u.size, u.alignment,
                       w.kinds[u.kind], u.frame, u.granularity);
  }
  return out;
}

}  // namespace staging::sim
