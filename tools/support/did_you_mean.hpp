// "Did you mean --policy?": the known option closest to a mistyped one, for the tools' usage
// errors. Pure functions; safe from any thread.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace staging::tools {

/// The edit distance between `a` and `b`: the fewest single-character insertions, deletions,
/// substitutions and swaps of two neighbours that turn one into the other.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `typed` by edit_distance, if it is close enough to be a typo (at most
/// 2 edits, or a third of the longer name); the first of equally close ones. Nullopt otherwise.
[[nodiscard]] std::optional<std::string> closest(std::string_view typed,
                                                 const std::vector<std::string>& candidates);

/// Every long ("--name") and short ("-n") option `app` knows, its option groups' included.
[[nodiscard]] std::vector<std::string> option_names(const CLI::App& app);

/// The usage error for the arguments `app` did not recognise (its remaining(), in order): the
/// first unknown option (its "=value" dropped) with " (did you mean --policy?)" when one is close,
/// else the first stray argument. Precondition: `unknown` is not empty.
[[nodiscard]] std::string unknown_argument_message(const CLI::App& app,
                                                   const std::vector<std::string>& unknown);

}  // namespace staging::tools
