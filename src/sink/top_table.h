#pragma once
// The live table of `uscope top`: handed the cumulative profile at every refresh, it shows each
// function's share of the samples taken since the previous refresh and since the start
// (sink/function_shares.h), sorted by the refresh's shares. On a terminal each table is drawn over
// the last one with ANSI escapes, cut to the screen; elsewhere (a pipe, a file) each is printed
// after the last, plain.
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "model/profile.h"
#include "util/result.h"

namespace uscope {

enum class TopSort { Self, Total };

struct TopTableOptions {
  TopSort sort = TopSort::Self;
  size_t rows = 25;       // at most; fewer when the screen is shorter
  std::string title;      // what is sampled: "PID 1234", "'./bench'"
  std::string keys;       // what the keys do, after the title ("q quits"); "" off a terminal
  bool terminal = false;  // draw over the previous table, cut to `columns` x `lines`
  size_t columns = 0;     // the screen's size; 0: unknown
  size_t lines = 0;
};

class TopTable {
 public:
  explicit TopTable(TopTableOptions options) : options_(std::move(options)) {}

  // The screen's size changed (read at each refresh: no SIGWINCH handler needed).
  void resize(size_t columns, size_t lines) {
    options_.columns = columns;
    options_.lines = lines;
  }
  // From now on plain tables: the live screen is gone.
  void leave_screen() {
    options_.terminal = false;
    options_.keys.clear();
  }
  // From now on rows are sorted by their shares since the start: the last table, at the end of
  // the session, whose last refresh may hold a handful of samples.
  void sort_by_session() { by_session_ = true; }
  // Writes the table of `profile` (everything counted since the start), `interval_s` seconds of
  // sampling after the previous call, which becomes the previous one. Throws OutputClosed when
  // the reader went away (util/output_closed.h).
  Result<void> write(const Profile& profile, double interval_s, std::FILE* out);

 private:
  struct Counts {
    uint64_t self = 0, total = 0;
  };
  TopTableOptions options_;
  std::unordered_map<std::string, Counts> previous_;  // by function '\0' module
  uint64_t previous_samples_ = 0;
  bool by_session_ = false;
};

}  // namespace uscope
