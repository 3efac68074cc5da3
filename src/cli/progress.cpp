#include "progress.hpp"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace zerosearch::cli {

ProgressBar::ProgressBar(bool enabled)
    : enabled_(enabled && ::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(std::size_t done, std::size_t total) {
  if (!enabled_ || total == 0) {
    return;
  }
  if (!drawn_ && std::chrono::steady_clock::now() - start_ < std::chrono::milliseconds(500)) {
    return;
  }
  const int percent = static_cast<int>(done * 100 / total);
  if (percent == last_percent_) {
    return;
  }
  last_percent_ = percent;
  constexpr int kWidth = 30;
  const int filled = percent * kWidth / 100;
  const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                          std::string(static_cast<std::size_t>(kWidth - filled), ' ');
  std::fprintf(stderr, "\r[%s] %3d%%  %zu/%zu estimates", bar.c_str(), percent, done, total);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

} // namespace zerosearch::cli
