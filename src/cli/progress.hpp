#pragma once
// A progress bar on standard error for long searches.
#include <chrono>
#include <cstddef>

namespace zerosearch::cli {

/// Draws "[#####     ]  48%  1234/2560 estimates" on standard error, redrawn in place. It
/// stays silent when standard error is not a terminal, when `enabled` is false, and during the
/// first half second (short searches never show it). Call update() from one thread only.
class ProgressBar {
public:
  explicit ProgressBar(bool enabled);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  /// Clears the bar's line if it was drawn.
  ~ProgressBar();

  void update(std::size_t done, std::size_t total);
  /// Clears the bar's line (before printing results).
  void finish();

private:
  bool enabled_;
  bool drawn_ = false;
  int last_percent_ = -1;
  std::chrono::steady_clock::time_point start_;
};

} // namespace zerosearch::cli
