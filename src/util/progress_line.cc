#include "util/progress_line.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

namespace uscope {

ProgressLine::ProgressLine(std::chrono::milliseconds interval)
    : shown_(isatty(STDERR_FILENO) == 1), interval_(interval) {}

void ProgressLine::show(std::string_view text) {
  if (!shown_) return;
  next_ = std::chrono::steady_clock::now() + interval_;
  fmt::print(stderr, "\ruscope: {}\033[K", text);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  if (!drawn_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace uscope
