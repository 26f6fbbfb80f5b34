#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace staging::sim {

ProgressBar::ProgressBar(bool enabled) : active_(enabled && isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() {
  clear();
}

void ProgressBar::update(uint64_t done, uint64_t total, const std::string& label) {
  if (!active_ || total == 0) return;
  const int percent = static_cast<int>(done * 100 / total);
  if (percent == shown_ && label == label_) return;
  shown_ = percent;
  label_ = label;
  constexpr int kWidth = 30;
  const int filled = percent * kWidth / 100;
  std::fprintf(stderr, "\r[%.*s%.*s] %3d%% %-40.40s", filled, "##############################",
               kWidth - filled, "..............................", percent, label.c_str());
  std::fflush(stderr);
}

void ProgressBar::clear() {
  if (!active_ || shown_ < 0) return;
  std::fprintf(stderr, "\r%80s\r", "");
  std::fflush(stderr);
  shown_ = -1;
}

}  // namespace staging::sim
