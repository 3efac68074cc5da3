#pragma once
// The progress bar of a long search: on stderr, only when stderr is a terminal, and only once
// the search has run for about a second.
#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

#include "zerosearch/search/search.hpp"

namespace zerosearch::cli {

/// True when file descriptor 2 is a terminal.
[[nodiscard]] bool stderr_is_terminal() noexcept;

/// One line of the bar, `width` characters at most, without a line ending:
/// "[#######.............]  35%  12000/34000 estimates  5400/s  0:04 left".
[[nodiscard]] std::string format_progress(std::size_t done, std::size_t total, double elapsed_s,
                                          std::size_t width);

class ProgressBar {
public:
  /// Draws on `err` when `enabled`; otherwise every call does nothing.
  ProgressBar(std::ostream& err, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Redraws at most ten times a second, starting one second after construction.
  void update(const SearchProgress& progress);
  /// Erases the bar (if drawn), so that what follows starts on a clean line.
  void finish();

private:
  std::ostream& err_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

} // namespace zerosearch::cli
