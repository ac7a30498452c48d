#include "util/terminal_screen.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <string_view>

namespace uscope {

namespace {

// Alternate screen on, cursor hidden; and back.
constexpr std::string_view kEnter = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
constexpr std::string_view kLeave = "\x1b[?25h\x1b[?1049l";

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n <= 0) return;  // a terminal gone: nothing to restore on it
    s.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

TerminalScreen::TerminalScreen(int out_fd, int in_fd) : out_fd_(out_fd), in_fd_(in_fd) {
  termios t{};
  if (in_fd >= 0 && isatty(in_fd) && tcgetattr(in_fd, &t) == 0) {
    saved_ = t;
    // Each key as it is typed (one byte wakes a read), not echoed; signals (ISIG) kept.
    t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(in_fd, TCSANOW, &t) != 0) saved_.reset();
  }
  write_all(out_fd_, kEnter);
}

TerminalScreen::~TerminalScreen() {
  write_all(out_fd_, kLeave);
  if (saved_) tcsetattr(in_fd_, TCSANOW, &*saved_);
}

TerminalScreen::Size TerminalScreen::size(int fd) {
  winsize w{};
  if (ioctl(fd, TIOCGWINSZ, &w) != 0) return {};
  return {w.ws_col, w.ws_row};
}

bool TerminalScreen::quit_typed() const {
  char keys[64];
  ssize_t n = read(keys_fd(), keys, sizeof keys);
  if (n <= 0) return true;  // the terminal went away
  for (ssize_t i = 0; i < n; ++i)
    if (keys[i] == 'q' || keys[i] == 'Q') return true;
  return false;
}

}  // namespace uscope
