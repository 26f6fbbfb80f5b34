// Counter lists (counters.hpp): every stats struct's counters are listed once, and the table,
// the comparison and the lookup all follow that list. Each test gives every counter its own
// value, so a row that prints another counter's value, or a counter left out, is caught.
#include "staging/detail/core/counters.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/testing/fake_region_allocator.hpp"

namespace staging {
namespace {

// "  title ........ value" rows of a table, by title.
std::map<std::string, uint64_t> rows_of(const std::string& table) {
  std::map<std::string, uint64_t> rows;
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_EQ(line.rfind("  ", 0), 0u) << line;
    const std::size_t dots = line.find(" .");
    EXPECT_NE(dots, std::string::npos) << line;
    const std::string title = line.substr(2, dots - 2);
    const std::size_t number = line.find_last_of(' ');
    EXPECT_FALSE(rows.contains(title)) << "title twice: " << title;
    rows[title] = std::stoull(line.substr(number + 1));
  }
  return rows;
}

TEST(Counters, StagingStatsTableShowsEachCounterInItsOwnRow) {
  StagingStats s;
  s.frames_begun = 101;
  s.frames_finished = 102;
  s.placements = 103;
  s.bytes_placed = 104;
  s.placements_refused = 105;
  s.slots_created = 106;
  s.slots_grown = 107;
  s.slots_replaced = 108;
  s.abandoned_seen = 109;
  s.failed_seen = 110;
  s.refusals_too_large = 111;
  s.refusals_all_in_flight = 112;
  s.refusals_allocation_failed = 113;
  s.bytes_allocated = 115;
  s.peak_bytes_allocated = 116;
  const std::map<std::string, uint64_t> expected{
      {"frames begun", 101},
      {"frames finished", 102},
      {"placements", 103},
      {"bytes placed", 104},
      {"placements refused", 105},
      {"slots created", 106},
      {"slots grown", 107},
      {"slots replaced", 108},
      {"abandoned slots seen", 109},
      {"failed slots seen", 110},
      {"refusals: too large", 111},
      {"refusals: all in flight", 112},
      {"refusals: allocation failed", 113},
      {"bytes allocated", 115},
      {"peak bytes allocated", 116},
  };
  EXPECT_EQ(rows_of(format_stats(s)), expected);
  // The exact layout: two spaces, the title, dots to column 32, the value right-aligned in 12.
  const std::string first = "  frames begun " + std::string(18, '.') + "          101\n";
  EXPECT_EQ(format_stats(s).substr(0, first.size()), first);
}

TEST(Counters, ByteRingStatsTableShowsEachCounterInItsOwnRow) {
  ByteRingStats s;
  uint64_t v = 1000;
  // Every member its own value, in declaration order.
  s.reservations = ++v;
  s.bytes_reserved = ++v;
  s.retired = ++v;
  s.cancelled = ++v;
  s.wraps = ++v;
  s.bytes_skipped = ++v;
  s.would_blocks = ++v;
  for (uint64_t& c : s.would_blocks_by_cause)
    c = ++v;
  s.waits = ++v;
  for (uint64_t& c : s.waits_by_cause)
    c = ++v;
  s.wait_total = Duration{static_cast<int64_t>(++v)};
  s.wait_longest = Duration{static_cast<int64_t>(++v)};
  s.timeouts = ++v;
  s.splits = ++v;
  for (uint64_t& c : s.splits_by_cause)
    c = ++v;
  s.grows = ++v;
  s.trims = ++v;
  s.fallbacks = ++v;
  for (uint64_t& c : s.fallbacks_by_cause)
    c = ++v;
  s.fallback_bytes = ++v;
  s.cap_refusals = ++v;
  s.peak_held_bytes = ++v;
  s.held_bytes = ++v;
  s.in_flight_bytes = ++v;
  s.invalid_requests = ++v;
  s.allocation_failures = ++v;
  s.wait_calls = ++v;
  s.polls = ++v;
  s.fallback_held_bytes = ++v;
  s.peak_fallback_bytes = ++v;
  s.peak_in_flight_bytes = ++v;
  s.regions = ++v;
  const std::map<std::string, uint64_t> expected{
      {"reservations", 1001},
      {"bytes reserved", 1002},
      {"retired", 1003},
      {"cancelled", 1004},
      {"wraps", 1005},
      {"bytes skipped by wraps", 1006},
      {"would-block answers", 1007},
      {"would-block answers (InFlight)", 1008},
      {"would-block answers (Fragmentation)", 1009},
      {"would-block answers (Cap)", 1010},
      {"waits", 1011},
      {"waits (InFlight)", 1012},
      {"waits (Fragmentation)", 1013},
      {"waits (Cap)", 1014},
      {"wait time (ns)", 1015},
      {"longest wait (ns)", 1016},
      {"timeouts", 1017},
      {"splits", 1018},
      {"splits (InFlight)", 1019},
      {"splits (Fragmentation)", 1020},
      {"splits (Cap)", 1021},
      {"grows", 1022},
      {"trims", 1023},
      {"fallback regions", 1024},
      {"fallback regions (InFlight)", 1025},
      {"fallback regions (Fragmentation)", 1026},
      {"fallback regions (Cap)", 1027},
      {"fallback bytes", 1028},
      {"cap refusals", 1029},
      {"peak held bytes", 1030},
      {"held bytes", 1031},
      {"bytes in flight", 1032},
      {"invalid requests", 1033},
      {"allocation failures", 1034},
      {"wait calls", 1035},
      {"polls", 1036},
      {"fallback bytes held", 1037},
      {"peak fallback bytes held", 1038},
      {"peak bytes in flight", 1039},
      {"regions", 1040},
  };
  EXPECT_EQ(rows_of(format_stats(s)), expected);
  EXPECT_EQ(counter_value(s, "would_blocks_by_cause.Fragmentation"), 1009u);
  EXPECT_EQ(counter_value(s, "wait_total_ns"), 1015u);
  EXPECT_EQ(counter_value(s, "regions"), 1040u);
  EXPECT_EQ(counter_value(s, "no_such_counter"), std::nullopt);
}

// Every line of a table: two spaces, the title, a space, at least three dots, a space and the
// value right-aligned; all lines equally long, so the values form one column. (Long titles such
// as "would-block answers (Fragmentation)" once got a single dot and pushed their value out.)
void expect_dot_leaders_and_one_value_column(const std::string& table) {
  std::istringstream in(table);
  std::string line;
  std::size_t width = 0;
  while (std::getline(in, line)) {
    const std::size_t leaders = line.find(" ...");
    EXPECT_NE(leaders, std::string::npos) << "fewer than three dots: " << line;
    const std::size_t value = line.find_first_not_of('.', leaders + 1);
    EXPECT_EQ(line.substr(value, 2), "  ") << "no space and padding before the value: " << line;
    if (width == 0) width = line.size();
    EXPECT_EQ(line.size(), width) << "value out of column: " << line;
  }
  EXPECT_GT(width, 0u);
}

TEST(Counters, EveryTitleGetsDotLeadersAndTheValuesLineUp) {
  ByteRingStats byte_ring;
  byte_ring.would_blocks_by_cause[1] = 123456;  // "would-block answers (Fragmentation)"
  expect_dot_leaders_and_one_value_column(format_stats(byte_ring));
  expect_dot_leaders_and_one_value_column(format_stats(StagingStats{}));

  const std::vector<CounterRow> rows{{"a title longer than the usual thirty columns", 7},
                                     {"short", 8}};
  const std::string table = format_counter_rows(rows);
  expect_dot_leaders_and_one_value_column(table);
  EXPECT_EQ(table.substr(0, table.find('\n') + 1),
            "  a title longer than the usual thirty columns ... " + std::string(11, ' ') + "7\n");
  // A wider column asked for (to align with another table) is kept.
  EXPECT_EQ(format_counter_rows(rows, 60).find('\n'), 2 + 60 + 1 + 1 + 12u);
  EXPECT_EQ(counter_title_column(rows), 44u + 3u);
}

TEST(Counters, PathsTitlesAndUnits) {
  std::vector<std::string> paths;
  std::vector<CounterUnit> units;
  for_each_counter(ByteRingStats{}, [&](const CounterInfo& info, uint64_t) {
    paths.push_back(info.path());
    units.push_back(info.unit);
  });
  ASSERT_EQ(paths.size(), 40u);
  EXPECT_EQ(paths[0], "reservations");
  EXPECT_EQ(units[0], CounterUnit::Count);
  EXPECT_EQ(paths[1], "bytes_reserved");
  EXPECT_EQ(units[1], CounterUnit::Bytes);
  EXPECT_EQ(paths[7], "would_blocks_by_cause.InFlight");
  EXPECT_EQ(paths[14], "wait_total_ns");
  EXPECT_EQ(units[14], CounterUnit::Nanoseconds);
  const CounterInfo grouped{"slots", "slot ring", "polls", "polls", "", CounterUnit::Count};
  EXPECT_EQ(grouped.path(), "slots.polls");
  EXPECT_EQ(grouped.title(), "slot ring: polls");
}

TEST(Counters, DifferencesNameEveryCounterThatDiffers) {
  StagingStats a, b;
  EXPECT_TRUE(counter_differences(a, b).empty());
  b.slots_grown = 3;
  b.peak_bytes_allocated = 7;
  const std::vector<CounterDifference> d = counter_differences(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].path, "slots_grown");
  EXPECT_EQ(d[0].a, 0u);
  EXPECT_EQ(d[0].b, 3u);
  EXPECT_EQ(d[1].path, "peak_bytes_allocated");
  EXPECT_EQ(d[1].b, 7u);
}

TEST(Counters, NegativeDurationsReadAsZero) {
  ByteRingStats s;
  s.wait_total = Duration{-5};
  EXPECT_EQ(counter_value(s, "wait_total_ns"), 0u);
}

// A struct of another layer: a group, a per-enum array, a Duration and a field that is not a
// counter, as a backend's stats would have.
enum class Lane : uint8_t { Left, Right };
constexpr auto enum_names(std::type_identity<Lane>) noexcept {
  return std::to_array<std::string_view>({"Left", "Right"});
}
struct Outer {
  uint64_t copies = 0;
  uint32_t lanes_used[2] = {};
  Duration busy{0};
  StagingStats slots;
  bool strategy_is_slots = false;
};
constexpr auto counters_of(std::type_identity<Outer>) noexcept {
  return std::tuple{counter("copies", "copies", &Outer::copies),
                    counter<Lane>("lanes_used", "lanes used", &Outer::lanes_used),
                    counter("busy_ns", "busy (ns)", &Outer::busy),
                    counter_group("slots", "slot ring", &Outer::slots),
                    not_a_counter(&Outer::strategy_is_slots)};
}
static_assert(counters_complete<Outer>());

TEST(Counters, GroupsNestAndFieldsThatAreNotCountersAreSkipped) {
  Outer o;
  o.copies = 5;
  o.lanes_used[1] = 9;
  o.busy = Duration{12};
  o.slots.slots_grown = 44;
  std::vector<std::string> paths;
  for_each_counter(o, [&](const CounterInfo& info, uint64_t) { paths.push_back(info.path()); });
  ASSERT_EQ(paths.size(), 4u + 15u);
  EXPECT_EQ(paths[1], "lanes_used.Left");
  EXPECT_EQ(paths[2], "lanes_used.Right");
  EXPECT_EQ(paths[4], "slots.frames_begun");
  EXPECT_EQ(counter_value(o, "lanes_used.Right"), 9u);
  EXPECT_EQ(counter_value(o, "busy_ns"), 12u);
  EXPECT_EQ(counter_value(o, "slots.slots_grown"), 44u);
  const std::map<std::string, uint64_t> rows = rows_of(format_counters(o));
  EXPECT_EQ(rows.at("slot ring: slots grown"), 44u);
  EXPECT_EQ(rows.at("lanes used (Right)"), 9u);
}

// The completeness check refuses stale lists.
struct MissingOne {
  uint64_t a = 0, b = 0, c = 0;
};
constexpr auto counters_of(std::type_identity<MissingOne>) noexcept {
  return std::tuple{counter("a", "a", &MissingOne::a), counter("b", "b", &MissingOne::b)};
}
struct Twice {
  uint64_t a = 0, b = 0;
};
constexpr auto counters_of(std::type_identity<Twice>) noexcept {
  return std::tuple{counter("a", "a", &Twice::a), counter("b", "b", &Twice::a)};
}
struct SameKey {
  uint64_t a = 0, b = 0;
};
constexpr auto counters_of(std::type_identity<SameKey>) noexcept {
  return std::tuple{counter("a", "a", &SameKey::a), counter("a", "b", &SameKey::b)};
}
struct NoLabel {
  uint64_t a = 0;
};
constexpr auto counters_of(std::type_identity<NoLabel>) noexcept {
  return std::tuple{counter("a", "", &NoLabel::a)};
}
static_assert(!counters_complete<MissingOne>());
static_assert(!counters_complete<Twice>());
static_assert(!counters_complete<SameKey>());
static_assert(!counters_complete<NoLabel>());
static_assert(counters_complete<testing::FakeRegionLog>());

}  // namespace
}  // namespace staging
