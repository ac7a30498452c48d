#pragma once
// The waits already begun as an off-CPU profile of given processes starts: each thread off its
// CPU then (not runnable: blocked, sleeping, stopped), with why (its state and system call), its
// kernel stack and its user stack, read once through a task iterator and the process's memory
// (collect/thread_stacks.h). The profile counts their time from its start under these stacks:
// without them a thread blocked all along (an idle pool's worker, a main thread in join()) would
// be missing from the profile, and a --wall profile's threads would not add up to their time.
// A Go program's goroutines parked then likewise (collect/go_goroutines.h), on their own stacks.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collect/go_goroutines.h"
#include "collect/user_walk.h"
#include "util/result.h"

namespace uscope {

struct BegunWait {
  pid_t tid = 0;
  std::string comm;       // the thread's
  uint32_t reason = 0;    // enum offcpu_reason
  uint64_t switches = 0;  // times it had left a CPU when read (see still_waiting)
  UserWalk user;          // empty without user stacks
  std::vector<uint64_t> kernel;
};

struct BegunGoroutine {
  ParkedGoroutine parked;
  UserWalk user;  // from the registers it parked with; empty without user stacks
};

struct BegunWaits {
  std::string comm;  // the process's: its main thread's
  std::vector<BegunWait> waits;
  std::vector<BegunGoroutine> goroutines;
  std::string no_goroutines;  // why its parked goroutines could not be read
};

// `pid`'s threads waiting now, and with `go` its goroutines parked now; `user_stacks`: walk their
// user stacks too.
Result<BegunWaits> read_begun_waits(pid_t pid, bool user_stacks,
                                    const ParkedGoroutineLayout* go = nullptr);

// Whether thread `tid` of `pid` still waits in the wait it was read in: not running and not left
// its CPU since (its count of switches still `switches`), from /proc/PID/task/TID/status.
bool still_waiting(pid_t pid, pid_t tid, uint64_t switches);

}  // namespace uscope
