// Names of an enum's values, written once next to the enum, and the one to_string() built on them.
//
// An enum opts in with one constexpr function in its own namespace (found by argument-dependent
// lookup, so it works for enums of any namespace and for enums nested in a class), returning the
// names of its values in order of value, and a static_assert that keeps the table complete:
//
//   enum class Color : uint8_t { Red, Green, Blue };
//   /// Names of Color's values, in order (to_string, enum_from_string).
//   constexpr auto enum_names(std::type_identity<Color>) noexcept {
//     return std::to_array<std::string_view>({"Red", "Green", "Blue"});
//   }
//   static_assert(staging::enum_names_complete<Color>(), "Color: a value has no name");
//
// Then staging::to_string(Color::Green) == "Green" and
// staging::enum_from_string<Color>("Blue") == Color::Blue. The values must be 0, 1, 2, ... (the
// table is indexed by value). enum_names_complete() checks, at compile time, that every name is
// non-empty and unique and — with GCC and Clang — that the enum has exactly as many values as
// the table has names, so adding a value without a name (or the reverse) does not compile.
//
// Everything here is constexpr, noexcept, allocation-free and safe from any thread.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace staging {

/// An enum that has a name table: `enum_names(std::type_identity<E>{})` is found by ADL and
/// returns a std::array of std::string_view, one per value, in order of value.
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires {
  { enum_names(std::type_identity<E>{})[0] } -> std::convertible_to<std::string_view>;
  { enum_names(std::type_identity<E>{}).size() } -> std::convertible_to<std::size_t>;
};

/// The name table of `E` (a std::array of std::string_view indexed by value).
template <NamedEnum E>
inline constexpr auto enum_name_table = enum_names(std::type_identity<E>{});

/// The number of named values of `E`.
template <NamedEnum E>
inline constexpr std::size_t enum_count = enum_name_table<E>.size();

/// The name of `value`, e.g. to_string(SlotState::InFlight) == "InFlight". Never null; "?" for a
/// value outside the enum (a cast from an out-of-range integer).
template <NamedEnum E>
[[nodiscard]] constexpr std::string_view to_string(E value) noexcept {
  using U = std::underlying_type_t<E>;
  const auto index = static_cast<U>(value);
  if constexpr (std::is_signed_v<U>) {
    if (index < 0) return "?";
  }
  if (static_cast<std::size_t>(index) >= enum_count<E>) return "?";
  return enum_name_table<E>[static_cast<std::size_t>(index)];
}

/// The value named `name` (exact, case-sensitive match), or none.
template <NamedEnum E>
[[nodiscard]] constexpr std::optional<E> enum_from_string(std::string_view name) noexcept {
  for (std::size_t i = 0; i < enum_count<E>; ++i) {
    if (enum_name_table<E>[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

namespace detail {

/// True when `Value` is one of its enum's declared enumerators (GCC and Clang spell a named
/// value's template argument as its name, any other value as a cast, "(E)7"); true where that
/// cannot be told (other compilers).
template <auto StagingEnumValue>
constexpr bool is_enumerator() noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && !defined(__EDG__)
  constexpr std::string_view signature = __PRETTY_FUNCTION__;
  constexpr std::string_view marker = "StagingEnumValue = ";
  constexpr std::size_t at = signature.find(marker);
  if constexpr (at == std::string_view::npos) {
    return true;
  } else {
    return signature[at + marker.size()] != '(';
  }
#else
  return true;
#endif
}

/// is_enumerator() for the values first, first + 1, ..., first + count - 1 of `E` (as many as
/// the underlying type holds): `expected` for each of them.
template <class E, std::size_t First, bool Expected, std::size_t... I>
constexpr bool enumerators_are(std::index_sequence<I...>) noexcept {
  using U = std::underlying_type_t<E>;
  constexpr auto max = static_cast<std::size_t>(std::numeric_limits<U>::max());
  return (... && (First + I > max ||
                  is_enumerator<static_cast<E>(static_cast<U>(First + I))>() == Expected));
}

}  // namespace detail

/// True when E's name table is complete: names non-empty and unique, and (GCC, Clang) values
/// 0 .. enum_count - 1 all declared while the next 16 values are not. For a static_assert next to
/// the table (see the file comment).
template <NamedEnum E>
[[nodiscard]] consteval bool enum_names_complete() noexcept {
  constexpr auto& names = enum_name_table<E>;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) return false;
    for (std::size_t j = 0; j < i; ++j) {
      if (names[i] == names[j]) return false;
    }
  }
  return detail::enumerators_are<E, 0, true>(std::make_index_sequence<enum_count<E>>{}) &&
         detail::enumerators_are<E, enum_count<E>, false>(std::make_index_sequence<16>{});
}

}  // namespace staging
