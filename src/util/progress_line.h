#pragma once
// A line of progress on stderr ("uscope: reading X: 31,000 of 63,170 functions"), rewritten in
// place with \r and cleared at the end; drawn only when stderr is a terminal, so pipes, files and
// tests see nothing of it.
#include <chrono>
#include <string_view>

namespace uscope {

class ProgressLine {
 public:
  // Shown when stderr is a terminal; a new line at most every `interval`.
  explicit ProgressLine(std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }

  // Whether a line is due now: the first at once, then one per interval (never off a terminal).
  // Cheap enough to ask once per item of a loop.
  bool due() const { return shown_ && std::chrono::steady_clock::now() >= next_; }
  // Draws `text` after "uscope: " over the previous line.
  void show(std::string_view text);
  // Erases the line, if one is drawn.
  void clear();

 private:
  bool shown_;
  bool drawn_ = false;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace uscope
