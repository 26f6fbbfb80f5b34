#include "exception_exit.hpp"

#include <cstdio>
#include <exception>

namespace staging::tools {

int exception_exit(const char* tool, int status) noexcept {
  try {
    std::rethrow_exception(std::current_exception());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: stopped by an unexpected error: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: stopped by an unexpected error (not a std::exception)\n", tool);
  }
  return status;
}

}  // namespace staging::tools
