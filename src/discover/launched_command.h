#pragma once
// `-c 'CMD ARGS'`: uscope starts the command itself, held just before its exec until the probes
// are attached, so that even the first instruction of main (and every USDT semaphore the kernel
// raises at mmap time) is covered. The command starts as it would from a shell: uscope's
// environment, cwd and fds 0-2, default signal dispositions and the signal mask uscope started
// with; nothing of what uscope set up for itself (SIGPIPE ignored, stop signals blocked, BPF fds).
#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "util/result.h"

namespace uscope {

class LaunchedCommand {
 public:
  // Records the signal mask uscope was started with. Call first thing in main, before anything
  // blocks a signal; without it the mask at prepare() time is used.
  static void remember_start_state();

  // Splits `command_line` like a shell would (quotes, no expansion of $(...)), finds the program
  // on PATH, and forks a child that waits for release() before exec'ing it.
  static Result<LaunchedCommand> prepare(const std::string& command_line);
  LaunchedCommand(LaunchedCommand&&) noexcept;
  LaunchedCommand& operator=(LaunchedCommand&&) noexcept;
  ~LaunchedCommand();  // kills and reaps a child still running

  pid_t pid() const { return pid_; }
  const std::string& executable() const { return executable_; }  // absolute path
  // The program as the command line names it, absolute, symlinks not resolved.
  const std::string& started_as() const { return started_as_; }
  // Lets the child exec. Fails if the exec failed (the error names the program).
  Result<void> release();
  // Ends a child that is still running (SIGTERM, then SIGKILL after a grace period) and reaps it.
  void terminate();
  void mark_reaped() { reaped_ = true; }

 private:
  LaunchedCommand() = default;
  pid_t pid_ = -1;
  int go_fd_ = -1;    // write end: one byte releases the child
  int exec_fd_ = -1;  // read end, CLOEXEC in the child: EOF = exec succeeded, data = errno
  bool reaped_ = false;
  std::string executable_;
  std::string started_as_;
};

}  // namespace uscope
