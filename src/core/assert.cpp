#include "staging/detail/core/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace staging::detail {

void assert_fail(const char* condition, const char* message, const char* file, int line) noexcept {
  std::fprintf(stderr, "staging: internal invariant violated: %s\n  condition: %s\n  at %s:%d\n",
               message, condition, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace staging::detail
