// The non-template parts of counters.hpp: paths, titles and table rows.
#include "staging/core/counters.hpp"

#include <cinttypes>
#include <cstdio>

namespace staging {

std::string CounterInfo::path() const {
  std::string out;
  for (const std::string_view part : {group, key, index}) {
    if (part.empty()) continue;
    if (!out.empty()) out += '.';
    out += part;
  }
  return out;
}

std::string CounterInfo::title() const {
  std::string out;
  if (!group_label.empty()) {
    out += group_label;
    out += ": ";
  }
  out += label;
  if (!index.empty()) {
    out += " (";
    out += index;
    out += ')';
  }
  return out;
}

namespace detail {

void append_counter_row(std::string& out, std::string_view title, uint64_t value) {
  constexpr std::size_t kColumn = 30;  // titles are padded with dots to this width
  const std::string dots(title.size() < kColumn ? kColumn - title.size() : 1, '.');
  char number[24];
  std::snprintf(number, sizeof number, "%12" PRIu64, value);
  out += "  ";
  out += title;
  out += ' ';
  out += dots;
  out += ' ';
  out += number;
  out += '\n';
}

}  // namespace detail
}  // namespace staging
