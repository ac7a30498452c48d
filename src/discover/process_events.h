#pragma once
// Processes starting (exec) and ending (exit) anywhere on the host, as the kernel announces them
// through the netlink process connector (CONFIG_PROC_EVENTS): the agent instruments a matching
// process at its exec and drops it at its exit, without polling /proc. Written here because no
// Debian library wraps the connector (libnl does not); the messages are the kernel's
// <linux/cn_proc.h> structures. Needs CAP_NET_ADMIN. When the socket's buffer overflows, events
// are lost: overflowed() says so, and the caller rescans /proc.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "util/result.h"
#include "util/unique_fd.h"

namespace uscope {

struct ProcessEvent {
  // ThreadStart and ThreadExit only from open(true): a thread other than the main one.
  enum Kind { Exec, Exit, ThreadStart, ThreadExit } kind = Exec;
  pid_t pid = 0;  // the process (thread group) id
  // When the kernel sent it (its CLOCK_MONOTONIC, which steady_clock reads): an exec older than
  // what /proc showed of the process since is already seen.
  std::chrono::steady_clock::time_point at{};
  pid_t tid = 0;  // ThreadStart, ThreadExit: the thread
};

class ProcessEvents {
 public:
  // `threads`: also every thread's start and exit (a process's main thread aside).
  static Result<std::unique_ptr<ProcessEvents>> open(bool threads = false);
  ~ProcessEvents();
  // Readable when events are waiting.
  int fd() const { return fd_.get(); }
  // The events waiting now (never blocks).
  std::vector<ProcessEvent> read();
  // Times the kernel dropped events since the last call (ENOBUFS): rescan /proc.
  uint64_t take_overflows();

 private:
  ProcessEvents() = default;
  UniqueFd fd_;
  bool threads_ = false;
  uint64_t overflows_ = 0;
};

}  // namespace uscope
