// Expected<T, E>: a value or an error, the library's way of reporting anything a caller can cause.
//
// C++20 has no std::expected (it arrives in C++23), so the library carries this small subset of
// it. The names follow std::expected so that a later switch is mechanical: has_value(),
// operator bool, value(), error(), operator*, operator->, value_or(), and Unexpected<E>.
//
// Threading: a plain value type; no internal synchronisation.
// Misuse: value() on an error (or error() on a value) is a bug in the caller's code and aborts
// through STAGING_ASSERT; it never throws, as no exception crosses this library's API.
#pragma once

#include <type_traits>
#include <utility>
#include <variant>

#include "staging/detail/core/assert.hpp"

namespace staging {

/// Wraps an error so that it can be returned where an Expected<T, E> is expected.
template <class E>
struct Unexpected {
  E error;  ///< the error an Expected<T, E> constructed from this will hold
};

/// Makes an Unexpected<E> from an error value: `return unexpected(PlaceError::DoesNotFit);`.
template <class E>
[[nodiscard]] constexpr Unexpected<std::decay_t<E>> unexpected(E&& error) {
  return Unexpected<std::decay_t<E>>{std::forward<E>(error)};
}

/// Either a T (success) or an E (why not). Cheap to move when T and E are.
template <class T, class E>
class [[nodiscard]] Expected {
 public:
  using value_type = T;  ///< T, as std::expected names it
  using error_type = E;  ///< E, as std::expected names it

  /// Success holding `value`.
  constexpr Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  /// Failure holding `u.error`.
  template <class G>
  constexpr Expected(Unexpected<G> u) : storage_(std::in_place_index<1>, E(std::move(u.error))) {}

  /// True when a value is held.
  [[nodiscard]] constexpr bool has_value() const noexcept { return storage_.index() == 0; }
  /// has_value().
  constexpr explicit operator bool() const noexcept { return has_value(); }

  ///@{
  /// The value (the && overload moves it out). Precondition: has_value(); aborts otherwise.
  constexpr T& value() & {
    STAGING_ASSERT(has_value(), "Expected::value() called on an error");
    return *std::get_if<0>(&storage_);
  }
  constexpr const T& value() const& {
    STAGING_ASSERT(has_value(), "Expected::value() called on an error");
    return *std::get_if<0>(&storage_);
  }
  constexpr T&& value() && {
    STAGING_ASSERT(has_value(), "Expected::value() called on an error");
    return std::move(*std::get_if<0>(&storage_));
  }
  ///@}
  /// The error. Precondition: !has_value(); aborts otherwise.
  constexpr const E& error() const& {
    STAGING_ASSERT(!has_value(), "Expected::error() called on a value");
    return *std::get_if<1>(&storage_);
  }

  ///@{
  /// value(), with the same precondition (aborts on an error; unlike std::expected, never UB).
  constexpr T& operator*() & { return value(); }
  constexpr const T& operator*() const& { return value(); }
  constexpr T&& operator*() && { return std::move(*this).value(); }
  ///@}
  ///@{
  /// &value(), with the same precondition.
  constexpr T* operator->() { return &value(); }
  constexpr const T* operator->() const { return &value(); }
  ///@}

  /// A copy of the value, or `fallback` converted to T when an error is held.
  template <class U>
  constexpr T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

  /// True when a value equal to `v` is held (as std::expected's comparison with a value).
  template <class U>
  requires(!std::is_same_v<std::decay_t<U>, Expected>) friend constexpr bool operator==(
      const Expected& x, const U& v) {
    return x.has_value() && *std::get_if<0>(&x.storage_) == v;
  }
  /// True when an error equal to `u.error` is held.
  template <class G>
  friend constexpr bool operator==(const Expected& x, const Unexpected<G>& u) {
    return !x.has_value() && *std::get_if<1>(&x.storage_) == u.error;
  }

 private:
  std::variant<T, E> storage_;
};

/// Success carrying no value, or an E. E must be default-constructible (it is stored either way).
template <class E>
class [[nodiscard]] Expected<void, E> {
 public:
  using value_type = void;  ///< void: success carries nothing
  using error_type = E;     ///< E, as std::expected names it

  /// Success.
  constexpr Expected() noexcept = default;
  /// Failure holding `u.error`.
  template <class G>
  constexpr Expected(Unexpected<G> u) : error_(E(std::move(u.error))), ok_(false) {}

  /// True on success.
  [[nodiscard]] constexpr bool has_value() const noexcept { return ok_; }
  /// has_value().
  constexpr explicit operator bool() const noexcept { return ok_; }
  /// Checks success. Precondition: has_value(); aborts otherwise.
  constexpr void value() const { STAGING_ASSERT(ok_, "Expected::value() called on an error"); }
  /// The error. Precondition: !has_value(); aborts otherwise.
  constexpr const E& error() const& {
    STAGING_ASSERT(!ok_, "Expected::error() called on a value");
    return error_;
  }

 private:
  E error_{};
  bool ok_ = true;
};

}  // namespace staging
