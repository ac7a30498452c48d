#pragma once
// The job of `uscope dump`: every thread of a process read once, with nothing attached to it and
// nothing left behind. Threads come from a BPF task iterator with the registers each last entered
// the kernel with (collect/thread_regs.h); stacks are walked in user space through the process's
// memory by the unwinder's rules (collect/user_walk.h), Python frames from the interpreter's own
// thread states, Java's from the JVM's code cache.
#include <sys/types.h>

#include "model/thread_dump.h"
#include "util/result.h"

namespace uscope::cli {

// `native`: native frames too (false: --no-native, Python frames only).
Result<ThreadDump> dump_threads(pid_t pid, bool native);

}  // namespace uscope::cli
