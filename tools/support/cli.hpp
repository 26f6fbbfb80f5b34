// Command-line parsing shared by the project's tools (CLI11). Every binary answers --help (exit
// status 0), and refuses an unknown argument or a bad value with one line on stderr and exit
// status 2 — before it touches a device. An unknown option's line names the closest known one
// ("did you mean --policy?"); options naming files check them at parse time (io_paths.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

#include "did_you_mean.hpp"

namespace staging::tools {

/// Exit status of a usage error: a bad argument, or an input or output path that cannot be used.
inline constexpr int kExitUsage = 2;

/// Prints a usage error as one line, "<app name>: <what> (--help lists the options)", on stderr
/// (line breaks in `what` become spaces) and returns kExitUsage.
inline int usage_error(const CLI::App& app, std::string what) {
  for (char& c : what) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "%s: %s (--help lists the options)\n", app.get_name().c_str(), what.c_str());
  return kExitUsage;
}

/// Parses `argv` into `app`. Nullopt: go on. Otherwise the process's exit status, to return at
/// once: 0 after --help (the help is printed on stdout), kExitUsage after a usage error (printed
/// by usage_error on stderr). `app` is set to collect unknown arguments (allow_extras) so that
/// they can be named with a suggestion; it must have no positional catch-all of its own.
inline std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  app.allow_extras();
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e.what());
  }
  if (const std::vector<std::string> unknown = app.remaining(); !unknown.empty()) {
    return usage_error(app, unknown_argument_message(app, unknown));
  }
  return std::nullopt;
}

}  // namespace staging::tools
