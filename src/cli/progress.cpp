#include "progress.hpp"

#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

namespace zerosearch::cli {

namespace {

constexpr auto kDelay = std::chrono::milliseconds(1000);

/// How long a search runs before the bar shows: one second, or ZEROSEARCH_PROGRESS_DELAY_MS
/// (a whole number of milliseconds; the tests set it to 0 so they need no long search).
std::chrono::milliseconds show_delay() {
  if (const char* env = std::getenv("ZEROSEARCH_PROGRESS_DELAY_MS")) {
    char* end = nullptr;
    const long ms = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && ms >= 0) {
      return std::chrono::milliseconds(ms);
    }
  }
  return kDelay;
}
constexpr auto kRedraw = std::chrono::milliseconds(100);
constexpr auto kLogInterval = std::chrono::milliseconds(10'000);

std::size_t terminal_width() noexcept {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) {
    return ws.ws_col;
  }
  return 80;
}

std::string clock_text(double s) {
  const auto total = static_cast<long long>(std::ceil(std::max(s, 0.0)));
  if (total >= 3600) {
    return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
  }
  return fmt::format("{}:{:02}", total / 60, total % 60);
}

} // namespace

bool stderr_is_terminal() noexcept { return ::isatty(STDERR_FILENO) == 1; }

std::chrono::milliseconds log_interval() {
  if (const char* env = std::getenv("ZEROSEARCH_PROGRESS_INTERVAL_MS")) {
    char* end = nullptr;
    const long ms = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && ms >= 0) {
      return std::chrono::milliseconds(ms);
    }
  }
  return kLogInterval;
}

std::string format_progress(std::size_t done, std::size_t total, double elapsed_s,
                            std::size_t width) {
  const double fraction =
      total == 0 ? 1.0 : static_cast<double>(std::min(done, total)) / static_cast<double>(total);
  const double rate = elapsed_s > 0.0 ? static_cast<double>(done) / elapsed_s : 0.0;
  const std::string left =
      rate > 0.0 ? clock_text(static_cast<double>(total - std::min(done, total)) / rate) + " left"
                 : "--:-- left";
  const std::string tail = fmt::format(" {:3.0f}%  {}/{} estimates  {:.0f}/s  {}",
                                       std::floor(fraction * 100.0), done, total, rate, left);
  // The bar takes what the numbers leave, between 10 and 40 cells.
  const std::size_t room = width > tail.size() + 2 ? width - tail.size() - 2 : 0;
  const std::size_t cells = std::min<std::size_t>(40, room);
  if (cells < 10) {
    return tail.substr(tail.find_first_not_of(' ')).substr(0, width);
  }
  const auto filled = static_cast<std::size_t>(fraction * static_cast<double>(cells));
  std::string bar;
  bar.reserve(cells + 2 + tail.size());
  bar.push_back('[');
  bar.append(filled, '#');
  bar.append(cells - filled, '.');
  bar.push_back(']');
  bar.append(tail);
  return bar;
}

ProgressBar::ProgressBar(std::ostream& err, bool enabled, bool terminal)
    : err_(err), enabled_(enabled), terminal_(terminal), interval_(log_interval()),
      delay_(show_delay()), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(const SearchProgress& progress) {
  if (!enabled_) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!terminal_) {
    // A log: a whole line every interval, nothing to erase.
    if (now - last_draw_ < interval_) {
      return;
    }
    last_draw_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    err_ << "zerosearch: progress: " << format_progress(progress.done, progress.total, elapsed, 60)
         << '\n' << std::flush;
    return;
  }
  if (now - start_ < delay_ || (drawn_ && now - last_draw_ < kRedraw)) {
    return;
  }
  last_draw_ = now;
  drawn_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  err_ << '\r' << format_progress(progress.done, progress.total, elapsed, terminal_width() - 1)
       << "\x1b[K" << std::flush;
}

void ProgressBar::finish() {
  if (drawn_) {
    err_ << "\r\x1b[K" << std::flush;
    drawn_ = false;
  }
}

} // namespace zerosearch::cli
