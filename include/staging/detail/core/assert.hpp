// STAGING_ASSERT: checks of the library's *own* invariants.
//
// Anything a caller can cause is reported as a value (Expected, error enums); an assert firing
// means a bug in this library or a broken precondition documented as such (e.g. value() on an
// error). A failed assert prints the condition, message, file and line to stderr and aborts.
// Asserts stay on in every build type: they guard memory safety and cost a predictable branch.
//
// Threading: safe from any thread.
#pragma once

namespace staging::detail {

/// Prints the failure and aborts. Never returns.
[[noreturn]] void assert_fail(const char* condition, const char* message, const char* file,
                              int line) noexcept;

}  // namespace staging::detail

/// Aborts with a diagnostic when `cond` is false. `msg` is a string literal.
#define STAGING_ASSERT(cond, msg)                                       \
  do {                                                                  \
    if (!(cond)) [[unlikely]]                                           \
      ::staging::detail::assert_fail(#cond, (msg), __FILE__, __LINE__); \
  } while (false)
