// Counters of a stats struct, listed once next to the struct, and everything built on that one
// list: visiting every counter (for_each_counter), a table for logs (format_counters), a
// comparison of two snapshots (counter_differences) and a lookup by name (counter_value).
//
// A stats struct opts in with one constexpr function in its own namespace (found by
// argument-dependent lookup) that lists every member, in declaration order, and a static_assert
// that keeps the list complete:
//
//   struct CopyStats {
//     uint64_t copies = 0;                ///< copies recorded
//     uint64_t bytes = 0;                 ///< their bytes
//     Duration busy{0};                   ///< time spent recording
//     uint64_t refused_by_cause[3] = {};  ///< indexed by BlockCause
//     StagingStats slots;                 ///< the slot ring's own counters
//     Route route{};                      ///< which route (not a counter)
//   };
//   /// CopyStats' counters, in declaration order.
//   constexpr auto counters_of(std::type_identity<CopyStats>) noexcept {
//     using S = CopyStats;
//     return std::tuple{
//         staging::counter("copies", "copies", &S::copies),
//         staging::counter("bytes", "bytes copied", &S::bytes, staging::CounterUnit::Bytes),
//         staging::counter("busy_ns", "busy (ns)", &S::busy),  // a Duration: nanoseconds
//         staging::counter<BlockCause>("refused_by_cause", "refused", &S::refused_by_cause),
//         staging::counter_group("slots", "slot ring", &S::slots),
//         staging::not_a_counter(&S::route)};
//   }
//   static_assert(staging::counters_complete<CopyStats>(), "CopyStats: counters_of is stale");
//
// What an entry can be: an unsigned integer member (a count or, with CounterUnit::Bytes, bytes);
// a Duration member (visited as nanoseconds, a negative one as 0); an array of unsigned integers
// indexed by a NamedEnum (one value per enum value, named by it; the array's extent must equal
// the enum's count); a nested stats struct that has its own counters_of (one level deep); or a
// member that is not a counter (listed so that the completeness check sees it).
//
// counters_complete() checks at compile time that the list names every member exactly once: the
// listed members, laid out in list order, take exactly sizeof(the struct) (so a member missing
// from the list, or listed out of declaration order where alignments differ, fails); no member
// is listed twice; keys are non-empty and unique; labels are non-empty. A member small enough to
// hide in padding (a bool after the last uint64_t) cannot be seen by the size check: list it.
//
// Keys are identifiers for machine-readable output (JSON, CSV); labels are short phrases for
// people. A counter's path joins the group key, its key and the enum value's name with '.'
// ("slots.frames_begun", "would_blocks_by_cause.InFlight"); its title joins the labels
// ("slot ring: frames begun", "would-block answers (InFlight)").
//
// Threading: everything here is a pure function of its arguments; safe from any thread (read a
// ring's stats on the ring's thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "staging/core/timeline.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging {

/// What a counter's value measures.
enum class CounterUnit : uint8_t {
  /// A number of events or things.
  Count,
  /// A number of bytes.
  Bytes,
  /// A time, in nanoseconds (a Duration member).
  Nanoseconds,
};

/// Names of CounterUnit's values, in order.
constexpr auto enum_names(std::type_identity<CounterUnit>) noexcept {
  return std::to_array<std::string_view>({"Count", "Bytes", "Nanoseconds"});
}
static_assert(enum_names_complete<CounterUnit>(), "CounterUnit: a value has no name");

/// What a visitor of for_each_counter() learns about one counter value. The views point into
/// the counter list (static storage): valid for the program's life.
struct CounterInfo {
  /// The enclosing group's key ("" for a counter of the visited struct itself).
  std::string_view group;
  /// The enclosing group's label ("" at top level).
  std::string_view group_label;
  /// The counter's key (an identifier: "bytes_reserved").
  std::string_view key;
  /// The counter's label (a phrase: "bytes reserved").
  std::string_view label;
  /// For an element of an enum-indexed counter: the enum value's name ("InFlight"); else "".
  std::string_view index;
  /// What the value measures.
  CounterUnit unit = CounterUnit::Count;

  /// group, key and index joined with '.', empty parts left out: "slots.frames_begun",
  /// "would_blocks_by_cause.InFlight". Allocates.
  [[nodiscard]] std::string path() const;
  /// "group label: label (index)", empty parts left out: "would-block answers (InFlight)".
  /// Allocates.
  [[nodiscard]] std::string title() const;
};

/// One counter in a list: an unsigned integer or Duration member `T` of `S`. Made by counter().
template <class S, class T>
struct CounterEntry {
  std::string_view key;    ///< identifier (see CounterInfo::key)
  std::string_view label;  ///< phrase (see CounterInfo::label)
  T S::*member;            ///< the member
  CounterUnit unit;        ///< what it measures
};

/// One counter per value of enum `E`: an array member of `N` unsigned integers of `S`, indexed by
/// E's values. Made by counter<E>().
template <class S, class E, class T, std::size_t N>
struct EnumCounterEntry {
  std::string_view key;    ///< identifier of the array (each element adds E's value name)
  std::string_view label;  ///< phrase for the array (each element adds E's value name)
  T (S::*member)[N];       ///< the member
  CounterUnit unit;        ///< what each element measures
};

/// A nested stats struct `G` (with its own counters_of) as a member of `S`. Made by
/// counter_group().
template <class S, class G>
struct CounterGroupEntry {
  std::string_view key;    ///< the group's key, prefixed to its counters' paths
  std::string_view label;  ///< the group's label, prefixed to its counters' titles
  G S::*member;            ///< the member
};

/// A member of `S` that is not a counter, listed so that counters_complete() sees every member.
/// Made by not_a_counter().
template <class S, class T>
struct NotACounterEntry {
  T S::*member;  ///< the member
};

/// An unsigned integer counter (a count by default; pass CounterUnit::Bytes for bytes).
template <class S, class T>
requires(std::is_integral_v<T>&& std::is_unsigned_v<T> && !std::is_same_v<T, bool>)
    [[nodiscard]] constexpr CounterEntry<S, T> counter(
        std::string_view key, std::string_view label, T S::*member,
        CounterUnit unit = CounterUnit::Count) noexcept {
  return {key, label, member, unit};
}

/// A Duration counter, visited as nanoseconds (a negative duration as 0).
template <class S>
[[nodiscard]] constexpr CounterEntry<S, Duration> counter(std::string_view key,
                                                          std::string_view label,
                                                          Duration S::*member) noexcept {
  return {key, label, member, CounterUnit::Nanoseconds};
}

/// An array counter indexed by enum `E`: one value per value of E, in order. The array's extent
/// must be enum_count<E>.
template <NamedEnum E, class S, class T, std::size_t N>
requires(std::is_integral_v<T>&& std::is_unsigned_v<T> && !std::is_same_v<T, bool>)
    [[nodiscard]] constexpr EnumCounterEntry<S, E, T, N> counter(
        std::string_view key, std::string_view label, T (S::*member)[N],
        CounterUnit unit = CounterUnit::Count) noexcept {
  static_assert(N == enum_count<E>, "an enum-indexed counter needs one element per enum value");
  return {key, label, member, unit};
}

/// A nested stats struct with its own counters_of, visited as a group (one level deep).
template <class S, class G>
[[nodiscard]] constexpr CounterGroupEntry<S, G> counter_group(std::string_view key,
                                                              std::string_view label,
                                                              G S::*member) noexcept {
  return {key, label, member};
}

/// A member that is not a counter (an enum saying which strategy, a vector of sizes).
template <class S, class T>
[[nodiscard]] constexpr NotACounterEntry<S, T> not_a_counter(T S::*member) noexcept {
  return {member};
}

/// A struct with a counter list: `counters_of(std::type_identity<S>{})` is found by ADL.
template <class S>
concept HasCounters = std::is_class_v<S> && requires {
  counters_of(std::type_identity<S>{});
};

/// The counter list of `S` (a std::tuple of entries).
template <HasCounters S>
inline constexpr auto counter_list = counters_of(std::type_identity<S>{});

namespace detail {

/// What an entry of a counter list is.
enum class EntryKind : uint8_t {
  Scalar,       ///< CounterEntry
  PerEnum,      ///< EnumCounterEntry
  Group,        ///< CounterGroupEntry
  NotACounter,  ///< NotACounterEntry
};

/// An entry type's kind and member type (and index enum, for PerEnum).
template <class Entry>
struct EntryTraits;
/// A scalar counter entry.
template <class S, class T>
struct EntryTraits<CounterEntry<S, T>> {
  static constexpr EntryKind kind = EntryKind::Scalar;  ///< its kind
  using Member = T;                                     ///< the member's type
};
/// An enum-indexed counter entry.
template <class S, class E, class T, std::size_t N>
struct EntryTraits<EnumCounterEntry<S, E, T, N>> {
  static constexpr EntryKind kind = EntryKind::PerEnum;  ///< its kind
  using Member = T[N];                                   ///< the member's type
  using Index = E;                                       ///< the enum indexing it
};
/// A group entry.
template <class S, class G>
struct EntryTraits<CounterGroupEntry<S, G>> {
  static constexpr EntryKind kind = EntryKind::Group;  ///< its kind
  using Member = G;                                    ///< the member's type
};
/// A member that is not a counter.
template <class S, class T>
struct EntryTraits<NotACounterEntry<S, T>> {
  static constexpr EntryKind kind = EntryKind::NotACounter;  ///< its kind
  using Member = T;                                          ///< the member's type
};

/// A counter's value as uint64_t.
template <class T>
constexpr uint64_t counter_value_of(const T& value) noexcept {
  if constexpr (std::is_same_v<T, Duration>) {
    return value.count() < 0 ? 0 : static_cast<uint64_t>(value.count());
  } else {
    return static_cast<uint64_t>(value);
  }
}

/// Visits entry `e` of a and b (the same struct type), calling fn(info, value_a, value_b).
template <int Depth, class S, class Entry, class Fn>
constexpr void visit_entry(const Entry& e, const S& a, const S& b, std::string_view group,
                           std::string_view group_label, Fn& fn) {
  using Traits = EntryTraits<Entry>;
  if constexpr (Traits::kind == EntryKind::Scalar) {
    const CounterInfo info{group, group_label, e.key, e.label, {}, e.unit};
    fn(info, counter_value_of(a.*e.member), counter_value_of(b.*e.member));
  } else if constexpr (Traits::kind == EntryKind::PerEnum) {
    using E = typename Traits::Index;
    for (std::size_t i = 0; i < std::extent_v<typename Traits::Member>; ++i) {
      const CounterInfo info{group, group_label, e.key, e.label, enum_name_table<E>[i], e.unit};
      fn(info, counter_value_of((a.*e.member)[i]), counter_value_of((b.*e.member)[i]));
    }
  } else if constexpr (Traits::kind == EntryKind::Group) {
    static_assert(Depth == 0, "counter groups nest one level deep");
    std::apply(
        [&](const auto&... entries) {
          (visit_entry<Depth + 1>(entries, a.*e.member, b.*e.member, e.key, e.label, fn), ...);
        },
        counter_list<typename Traits::Member>);
  }
}

/// The C layout of the listed members, in order: their size with padding, rounded to the largest
/// alignment.
template <class... Entry>
constexpr std::size_t listed_size(const std::tuple<Entry...>&) noexcept {
  std::size_t size = 0, align = 1;
  const auto add = [&](std::size_t s, std::size_t a) {
    size = (size + a - 1) / a * a + s;
    if (a > align) align = a;
  };
  (add(sizeof(typename EntryTraits<Entry>::Member), alignof(typename EntryTraits<Entry>::Member)),
   ...);
  return (size + align - 1) / align * align;
}

/// True when entries i and j of the list name the same member.
template <class A, class B>
constexpr bool same_member(const A& a, const B& b) noexcept {
  if constexpr (std::is_same_v<decltype(a.member), decltype(b.member)>) {
    return a.member == b.member;
  } else {
    return false;
  }
}

/// Key and label of an entry ("" for a member that is not a counter).
template <class Entry>
constexpr std::pair<std::string_view, std::string_view> names_of(const Entry& e) noexcept {
  if constexpr (EntryTraits<Entry>::kind != EntryKind::NotACounter) {
    return {e.key, e.label};
  } else {
    return {};
  }
}

/// Entry J of `list` has a key and label (unless not a counter) and shares neither its member
/// nor its key with any entry before it (I < J).
template <std::size_t J, class List, std::size_t... I>
constexpr bool entry_distinct(const List& list, std::index_sequence<I...>) noexcept {
  const auto& entry = std::get<J>(list);
  constexpr bool named =
      EntryTraits<std::remove_cvref_t<decltype(entry)>>::kind != EntryKind::NotACounter;
  const std::string_view key = names_of(entry).first;
  if (named && (key.empty() || names_of(entry).second.empty())) return false;
  return (true && ... &&
          (!same_member(std::get<I>(list), entry) &&
           !(named && names_of(std::get<I>(list)).first == key)));
}

/// entry_distinct() for every entry of `list`.
template <class List, std::size_t... J>
constexpr bool entries_distinct(const List& list, std::index_sequence<J...>) noexcept {
  return (true && ... && entry_distinct<J>(list, std::make_index_sequence<J>{}));
}

}  // namespace detail

/// True when S's counter list names every member exactly once (see the file comment). For a
/// static_assert next to the list.
template <HasCounters S>
[[nodiscard]] consteval bool counters_complete() noexcept {
  constexpr auto& list = counter_list<S>;
  constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<decltype(list)>>;
  return detail::listed_size(list) == sizeof(S) &&
         detail::entries_distinct(list, std::make_index_sequence<n>{});
}

/// Calls fn(const CounterInfo&, uint64_t value) for every counter of `stats`, in list order
/// (a group's counters in place of the group; an enum-indexed counter once per enum value).
template <HasCounters S, class Fn>
constexpr void for_each_counter(const S& stats, Fn&& fn) {
  auto both = [&](const CounterInfo& info, uint64_t value, uint64_t) { fn(info, value); };
  std::apply(
      [&](const auto&... e) { (detail::visit_entry<0>(e, stats, stats, {}, {}, both), ...); },
      counter_list<S>);
}

/// Calls fn(const CounterInfo&, uint64_t a_value, uint64_t b_value) for every counter of two
/// snapshots of the same struct, in list order.
template <HasCounters S, class Fn>
constexpr void for_each_counter(const S& a, const S& b, Fn&& fn) {
  std::apply([&](const auto&... e) { (detail::visit_entry<0>(e, a, b, {}, {}, fn), ...); },
             counter_list<S>);
}

/// One row of a counter table: a counter's title (CounterInfo::title()) and its value.
struct CounterRow {
  std::string title;   ///< what the row shows left of the dots
  uint64_t value = 0;  ///< what it shows right of them
};

/// Every counter of `stats` as a table row, in list order. Allocates.
template <HasCounters S>
[[nodiscard]] std::vector<CounterRow> counter_rows(const S& stats) {
  std::vector<CounterRow> rows;
  for_each_counter(stats, [&](const CounterInfo& info, uint64_t value) {
    rows.push_back(CounterRow{info.title(), value});
  });
  return rows;
}

/// The width format_counter_rows pads the titles of `rows` to: the longest title plus three
/// dot leaders, and never less than 30 (so short tables keep one familiar column).
[[nodiscard]] std::size_t counter_title_column(std::span<const CounterRow> rows) noexcept;

/// `rows` as a table, one "  title ....... value\n" line each: every title followed by a space
/// and dot leaders up to one column, max(`column`, counter_title_column(rows)), so that every
/// title has at least three dots and the values, right-aligned in 12 characters, line up. Pass
/// the largest counter_title_column of several tables as `column` to align them with each other.
/// Allocates; not for a hot path.
[[nodiscard]] std::string format_counter_rows(std::span<const CounterRow> rows,
                                              std::size_t column = 0);

/// A readable multi-line table of every counter, one "  title ........ value" line each, in list
/// order (format_counter_rows of counter_rows). Allocates; not for a hot path.
template <HasCounters S>
[[nodiscard]] std::string format_counters(const S& stats) {
  return format_counter_rows(counter_rows(stats));
}

/// A counter whose value differs between two snapshots.
struct CounterDifference {
  std::string path;  ///< CounterInfo::path() of the counter
  uint64_t a = 0;    ///< its value in the first snapshot
  uint64_t b = 0;    ///< its value in the second
};

/// Every counter whose value differs between `a` and `b`, in list order (empty when equal).
/// Allocates.
template <HasCounters S>
[[nodiscard]] std::vector<CounterDifference> counter_differences(const S& a, const S& b) {
  std::vector<CounterDifference> out;
  for_each_counter(a, b, [&](const CounterInfo& info, uint64_t va, uint64_t vb) {
    if (va != vb) out.push_back(CounterDifference{info.path(), va, vb});
  });
  return out;
}

/// The value of the counter whose CounterInfo::path() is `path`, or none. Allocates.
template <HasCounters S>
[[nodiscard]] std::optional<uint64_t> counter_value(const S& stats, std::string_view path) {
  std::optional<uint64_t> found;
  for_each_counter(stats, [&](const CounterInfo& info, uint64_t value) {
    if (!found && info.path() == path) found = value;
  });
  return found;
}

}  // namespace staging
