// What a tool's main() does with an exception nothing else caught: one line on stderr and a
// failure exit status, instead of std::terminate's abort. Used as main's function-try-block:
//
//   int main(int argc, char** argv) try {
//     ...
//   } catch (...) {
//     return staging::tools::exception_exit("staging-sim");
//   }
#pragma once

namespace staging::tools {

/// Exit status of a run that ended in an exception nobody caught.
inline constexpr int kExitException = 1;

/// Prints "<tool>: stopped by an unexpected error: <what()>" on stderr and returns `status`.
/// Call it only inside a catch block (it reads std::current_exception()).
int exception_exit(const char* tool, int status = kExitException) noexcept;

}  // namespace staging::tools
