// staging-fuzz-sim-gfxr: libFuzzer over staging-sim's GFXReconstruct importer (gfxr_import.hpp,
// the same entry point as --gfxr). An input is JSON Lines, optionally followed by a line
// "--gfxr--" and a binary capture whose fill-memory commands are merged in. Every input must
// either import into a workload that keeps the importer's promises or be refused with a
// non-empty message; never crash, throw, hang, or run out of memory.
//
// What an import promises: uploads in time and frame order; every size >= 1; every alignment a
// power of two from 1 to 256; granularity >= 1; every kind one of the four names; at most
// kMaxImportedUploads uploads; the imported counts within the capture's.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "gfxr_blocks.hpp"
#include "gfxr_import.hpp"

namespace {

using namespace staging::sim;

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "staging-fuzz-sim-gfxr: broken promise: %s\n", what);
  std::abort();
}

void check(const GfxrImport& g) {
  const Workload& w = g.workload;
  require(w.uploads.size() <= kMaxImportedUploads, "too many uploads");
  for (std::size_t i = 0; i < w.uploads.size(); ++i) {
    const Upload& u = w.uploads[i];
    require(u.size >= 1 && u.granularity >= 1, "size and granularity >= 1");
    require(u.alignment >= 1 && u.alignment <= 256 && (u.alignment & (u.alignment - 1)) == 0,
            "alignment a power of two <= 256");
    require(u.kind < w.kinds.size(), "kind index");
    require(u.frame >= 0, "frame >= 0");
    if (i > 0) {
      require(w.uploads[i - 1].time <= u.time, "time order");
      require(w.uploads[i - 1].frame <= u.frame, "frame order");
    }
  }
  for (const std::string& k : w.kinds) {
    require(k == "buffer_copy" || k == "image_copy" || k == "update" || k == "host_write",
            "kind names");
  }
  const ImportStats& s = g.stats;
  require(s.imported_host_writes <= s.host_writes, "host writes imported <= seen");
  require(s.completions_learned + s.completions_unknown == s.submissions, "completions");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSplit = "\n--gfxr--\n";
  const std::size_t split = input.find(kSplit);
  std::istringstream jsonl(std::string(input.substr(0, split)));
  std::optional<FillMemoryReader> fills;
  if (split != input.npos) {
    auto reader = FillMemoryReader::open(
        std::make_unique<std::istringstream>(std::string(input.substr(split + kSplit.size()))),
        "fuzz.gfxr");
    if (!reader) {
      require(!reader.error().empty(), "an error says what");
      return 0;
    }
    fills.emplace(std::move(*reader));
  }
  const auto r = import_gfxr(jsonl, "fuzz.jsonl", fills ? &*fills : nullptr);
  if (r) {
    check(*r);
  } else {
    require(!r.error().empty(), "an error says what");
  }
  return 0;
}
