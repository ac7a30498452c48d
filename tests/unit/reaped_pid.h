#pragma once
// A PID that certainly names no process: a child already reaped. The kernel hands PIDs out in
// increasing order, so it is not reused within a test.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace uscope::test {

inline pid_t reaped_pid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

}  // namespace uscope::test
