#pragma once
// A Symbolizer that keeps naming a process after it exits: the process's maps as it exits
// (collect/exit_maps.h) are handed to the symbolizer, which asks for them (catch_up) before it
// gives up on a process /proc no longer shows. The one home of that wiring for the commands that
// name user addresses after the fact: trace's %U and -U (EventSymbols) and the --by ustack keys of
// count, latency and hist (aggregate_run.h). `profile` keeps the snapshots in its own program
// (collect/profile_program.h) and hands them to its symbolizer itself.
#include <sys/types.h>

#include <memory>
#include <string>

#include "collect/exit_maps.h"
#include "symbolize/symbolizer.h"

namespace uscope::cli {

class ExitSymbolizer {
 public:
  ExitSymbolizer();
  ExitSymbolizer(const ExitSymbolizer&) = delete;  // the symbolizer calls back into this object
  ExitSymbolizer& operator=(const ExitSymbolizer&) = delete;

  Symbolizer& symbolizer() { return symbolizer_; }
  // Keeps the maps of `pid` (0: of every process) as it exits, from now on. `started_as`: a -c
  // command's program as its command line names it (Session::started_as), so that a symlink's
  // name survives the process. `what` says what stays unnamed on a kernel that cannot keep them
  // (before 6.16 or without bpf_iter_task_vma, 6.7): the session runs, with a note on stderr.
  void follow_exits(pid_t pid, const std::string& started_as, const char* what);
  // Takes in the exits seen so far: call it as the session's loop drains (a full ring would lose
  // the exits that matter).
  void catch_up();

 private:
  std::unique_ptr<ExitMaps> exits_;
  Symbolizer symbolizer_;
};

}  // namespace uscope::cli
