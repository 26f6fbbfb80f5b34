// The tools' checks of the files they will read and write, made before any work starts, so that
// a run that would end in "cannot write" is refused at once. Each check names the path and the
// system's reason (strerror). Safe from any thread; they touch the file system as described.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace staging::tools {

/// Why `path` cannot be written as an output file, or nullopt when it can. An existing file is
/// opened for writing and left as it was; a missing one is created and removed again (so its
/// folder must exist and be writable). "'out/x.json': cannot create the file: No such file or
/// directory".
[[nodiscard]] std::optional<std::string> output_file_error(const std::string& path);

/// Why `path` cannot be used as an output folder, or nullopt when it can: an existing folder
/// must take a new file (one is created and removed); a missing one must be creatable (its
/// nearest existing parent must be a folder that takes a new folder; one is created and removed).
/// Nothing is left behind.
[[nodiscard]] std::optional<std::string> output_folder_error(const std::string& path);

/// Why `path` cannot be read as an input file, or nullopt when it can (it is opened and closed).
[[nodiscard]] std::optional<std::string> input_file_error(const std::string& path);

/// CLI11 validators for options naming such paths: a path that fails is a usage error at parse
/// time ("--plot: '/missing/p.svg': cannot create the file: No such file or directory").
[[nodiscard]] CLI::Validator writable_file();
[[nodiscard]] CLI::Validator writable_folder();
[[nodiscard]] CLI::Validator readable_file();

}  // namespace staging::tools
