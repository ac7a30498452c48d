#pragma once
// Every thread of one process as `uscope dump` and the off-CPU profile's start read it once: its
// id, name, whether it runs or sleeps, the user registers it last entered the kernel with (where a
// sleeping thread's stack starts), and its kernel stack. Read through a BPF task iterator
// (bpf/task_regs.bpf.c): nothing is attached to the process, nothing is left behind, and the
// process is never stopped.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace uscope {

struct ThreadRegs {
  pid_t tid = 0;
  std::string comm;
  uint32_t state = 0;   // the kernel's task state: 0 runnable
  bool on_cpu = false;  // running now: the registers are of its last kernel entry, not now
  bool have_regs = false;
  uint64_t ip = 0, sp = 0, bp = 0;
  uint64_t r13 = 0;  // HotSpot's interpreter's bytecode pointer, where it is interpreted
  // Where its fs points: its TCB, which pthread_self() returns on x86-64 (glibc, musl), and so
  // what Python 3.8-3.10's PyThreadState.thread_id holds.
  uint64_t fsbase = 0;
  int64_t syscall = -1;   // the system call it is in (orig_ax, x86-64 numbers); -1 none
  uint64_t switches = 0;  // times it left a CPU (nvcsw + nivcsw): unchanged while it has not run
  std::vector<uint64_t> kernel;  // its kernel stack, innermost first: where it sleeps
};

// The threads of `pid`, by tid. Fails naming what the kernel refused (no BTF, no iterators).
Result<std::vector<ThreadRegs>> read_thread_regs(pid_t pid);

}  // namespace uscope
