// A progress bar on stderr, drawn only when stderr is a terminal (never into logs or pipes).
#pragma once

#include <cstdint>
#include <string>

namespace staging::sim {

class ProgressBar {
 public:
  /// Draws only when `enabled` and stderr is a terminal.
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Shows `done` of `total` with a label; redraws only when the shown percentage changes.
  void update(uint64_t done, uint64_t total, const std::string& label);
  /// Clears the bar's line.
  void clear();

 private:
  bool active_;
  int shown_ = -1;
  std::string label_;
};

}  // namespace staging::sim
