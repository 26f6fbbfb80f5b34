// The non-template parts of counters.hpp: paths, titles and the table layout.
#include "staging/detail/core/counters.hpp"

#include <algorithm>
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

std::size_t counter_title_column(std::span<const CounterRow> rows) noexcept {
  constexpr std::size_t kMinimumColumn = 30;
  constexpr std::size_t kMinimumDots = 3;
  std::size_t column = kMinimumColumn;
  for (const CounterRow& row : rows)
    column = std::max(column, row.title.size() + kMinimumDots);
  return column;
}

std::string format_counter_rows(std::span<const CounterRow> rows, std::size_t column) {
  column = std::max(column, counter_title_column(rows));
  std::string out;
  for (const CounterRow& row : rows) {
    char number[24];
    std::snprintf(number, sizeof number, "%12" PRIu64, row.value);
    out += "  ";
    out += row.title;
    out += ' ';
    out.append(column - row.title.size(), '.');
    out += ' ';
    out += number;
    out += '\n';
  }
  return out;
}

}  // namespace staging
