#include "did_you_mean.hpp"

#include <algorithm>
#include <numeric>

namespace staging::tools {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance, three rows of the dynamic programme.
  std::vector<std::size_t> before(b.size() + 1), last(b.size() + 1), row(b.size() + 1);
  std::iota(last.begin(), last.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = last[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({last[j] + 1, row[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    before.swap(last);
    last.swap(row);
  }
  return last[b.size()];
}

std::optional<std::string> closest(std::string_view typed,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    const std::size_t d = edit_distance(typed, candidate);
    const std::size_t allowed =
        std::max<std::size_t>(2, std::max(typed.size(), candidate.size()) / 3);
    if (d <= allowed && (!best || d < best_distance)) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames())
      names.push_back("--" + name);
    for (const std::string& name : option->get_snames())
      names.push_back("-" + name);
  }
  for (const CLI::App* group : app.get_subcommands({})) {
    if (!group->get_name().empty()) continue;  // a subcommand, not an option group
    const std::vector<std::string> more = option_names(*group);
    names.insert(names.end(), more.begin(), more.end());
  }
  return names;
}

std::string unknown_argument_message(const CLI::App& app, const std::vector<std::string>& unknown) {
  const auto option = std::find_if(unknown.begin(), unknown.end(), [](const std::string& a) {
    return a.size() > 1 && a[0] == '-' && a != "--";
  });
  if (option == unknown.end()) return "unexpected argument '" + unknown.front() + "'";
  const std::string name = option->substr(0, option->find('='));
  std::string message = "unknown option " + name;
  if (const auto guess = closest(name, option_names(app)))
    message += " (did you mean " + *guess + "?)";
  return message;
}

}  // namespace staging::tools
