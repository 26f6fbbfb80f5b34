// Command-line parsing shared by the project's tools (CLI11). Every binary answers --help (exit
// status 0), and refuses an unknown argument or a bad value with one line on stderr and exit
// status 2 — before it touches a device.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

namespace staging::tools {

/// Parses `argv` into `app`. Nullopt: go on. Otherwise the process's exit status, to return at
/// once: 0 after --help (the help is printed on stdout), 2 after a usage error (printed as one
/// line, "<name>: <what> (--help lists the options)", on stderr).
inline std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& c : what) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "%s: %s (--help lists the options)\n", app.get_name().c_str(),
                 what.c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace staging::tools
