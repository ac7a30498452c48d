#pragma once
// The terminal while a live table (`uscope top`) is drawn on it: the alternate screen (what was on
// the screen comes back afterwards, as with less or top), the cursor hidden, and keys read as they
// are typed, without echo. Ctrl-C still sends SIGINT. All restored by the destructor, so also
// when an exception unwinds.
#include <termios.h>

#include <cstddef>
#include <optional>

namespace uscope {

class TerminalScreen {
 public:
  // Draws on `out_fd`; reads keys from `in_fd` when it is a terminal too (-1: no keys).
  TerminalScreen(int out_fd, int in_fd);
  ~TerminalScreen();
  TerminalScreen(const TerminalScreen&) = delete;
  TerminalScreen& operator=(const TerminalScreen&) = delete;

  // The fd keys come from; -1 when there are none.
  int keys_fd() const { return saved_ ? in_fd_ : -1; }
  // Reads the keys typed so far (when keys_fd() is readable): true when one was q or Q, or the
  // terminal went away.
  bool quit_typed() const;

  struct Size {
    size_t columns = 0, lines = 0;  // 0: unknown
  };
  static Size size(int fd);

 private:
  int out_fd_;
  int in_fd_;
  std::optional<termios> saved_;  // the keyboard's settings before
};

}  // namespace uscope
