#pragma once
// The progress of a long search on stderr: on a terminal a bar, once the search has run for
// about a second; otherwise (a log, a CI job) a start line when the search is expected to take
// a while and a line of progress every 10 seconds.
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

/// How often a search that is not on a terminal says how far it is: every 10 s, or
/// ZEROSEARCH_PROGRESS_INTERVAL_MS (0: at every update, for the tests).
[[nodiscard]] std::chrono::milliseconds log_interval();

class ProgressBar {
public:
  /// Draws on `err` when `enabled`: a bar when `terminal`, else a line "zerosearch: progress:
  /// ..." every log_interval(). When not enabled every call does nothing.
  ProgressBar(std::ostream& err, bool enabled, bool terminal = true);
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
  bool terminal_ = true;
  bool drawn_ = false;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

} // namespace zerosearch::cli
