// staging-fuzz-sim-trace: libFuzzer over staging-sim's upload-trace parsers (CSV and JSON, the
// same entry point as --replay). Every input must either parse into a trace that keeps the
// format's promises or be refused with a short, printable message; never crash, throw, hang, or
// take time that grows with a number written in the input (the parser's work follows the input's
// length only).
//
// What a parsed trace promises: at least one upload; uploads in time order; every time and stall
// within kTimeLimit; size, alignment and granularity >= 1; frame >= -1; every kind an index into
// `kinds`, each kind a word of [A-Za-z0-9_.-] of 1 to 64 characters, no kind twice.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "trace_replay.hpp"
#include "units.hpp"

namespace {

using namespace staging::sim;

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "staging-fuzz-sim-trace: broken promise: %s\n", what);
  std::abort();
}

bool word(const std::string& k) {
  return !k.empty() && k.size() <= 64 && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto trace = parse_trace(text, "fuzz");
  if (!trace) {
    const std::string& m = trace.error();
    require(m.rfind("fuzz", 0) == 0 && m.size() < 400, "a refusal names the file, briefly");
    require(std::all_of(m.begin(), m.end(), [](char c) { return c >= 0x20 && c < 0x7f; }),
            "a refusal is printable ASCII (bytes it quotes are escaped)");
    return 0;
  }
  const Workload& w = *trace;
  require(!w.uploads.empty(), "a trace has an upload");
  std::set<std::string> kinds(w.kinds.begin(), w.kinds.end());
  require(kinds.size() == w.kinds.size(), "no kind twice");
  require(std::all_of(w.kinds.begin(), w.kinds.end(), word), "kinds are words");
  for (std::size_t i = 0; i < w.uploads.size(); ++i) {
    const Upload& u = w.uploads[i];
    require(u.time >= staging::Duration{0} && u.time <= kTimeLimit, "times within the limit");
    require(i == 0 || w.uploads[i - 1].time <= u.time, "uploads in time order");
    require(u.size >= 1 && u.alignment >= 1 && u.granularity >= 1, "sizes >= 1");
    require(u.frame >= -1, "frame >= -1");
    require(u.kind < w.kinds.size(), "kind indexes kinds");
    require(u.relative == RelativeSize::None, "a trace's sizes are absolute");
  }
  for (const StallWindow& s : w.stalls) {
    require(s.at >= staging::Duration{0} && s.at <= kTimeLimit, "stall times within the limit");
    require(s.length >= staging::Duration{0} && s.length <= kTimeLimit,
            "stall lengths within the limit");
  }
  return 0;
}
