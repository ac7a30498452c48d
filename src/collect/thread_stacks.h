#pragma once
// The user stacks of one process's threads that are off their CPUs, walked in user space from the
// registers each entered the kernel with (collect/thread_regs.h) through the process's memory
// (collect/user_walk.h), with its runtimes' frames: Python's from the interpreter's own thread
// states, Java's from the JVM's code cache. Read once, nothing attached, nothing written: for
// `uscope dump`, and for the waits already begun as an off-CPU profile starts.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collect/thread_regs.h"
#include "collect/user_walk.h"
#include "discover/hotspot_runtime.h"
#include "discover/process.h"
#include "discover/python_runtime.h"
#include "discover/unwind_cache.h"
#include "util/result.h"

namespace uscope {

class ThreadStacks {
 public:
  // Finds the process's runtimes and their threads (`threads`: the process's, as read now).
  static ThreadStacks open(Process process, std::span<const ThreadRegs> threads);
  ThreadStacks(ThreadStacks&&) noexcept = default;
  ~ThreadStacks();

  // A thread's user stack, innermost first, as the BPF walker records one (bpf/unwind.h frames,
  // PY_FRAMEs, Java frames): its native frames read only when `native` and the thread is off its
  // CPU (one on a CPU has moved on from its registers), its Python frames always.
  UserWalk walk(const ThreadRegs& thread, bool native);

  // What each runtime found is ("Python 3.11.2 (/usr/bin/python3.11)"), or why its frames are
  // not read; empty for a process that runs neither.
  const std::string& python_line() const { return python_line_; }
  const std::string& java_line() const { return java_line_; }
  const PythonRuntime* python() const { return python_ ? &*python_ : nullptr; }
  const HotspotRuntime* java() const { return java_ ? &*java_ : nullptr; }
  // The thread's Python thread state, or its JVM thread: null when it has none.
  const PythonThread* python_thread(pid_t tid) const;
  const HotspotThread* java_thread(pid_t tid) const;
  uint64_t gil_holder() const { return gil_; }  // its thread state; 0: none, or unknown
  const TargetMemory& memory() const { return mem_; }

 private:
  ThreadStacks() = default;

  std::optional<Process> process_;
  TargetMemory mem_;
  std::optional<PythonRuntime> python_;
  std::map<pid_t, PythonThread> python_threads_;  // by native thread id
  uint64_t gil_ = 0;
  std::string python_line_, java_line_;
  std::optional<HotspotRuntime> java_;
  std::map<pid_t, HotspotThread> java_threads_;
  std::unique_ptr<UnwindCache> cache_;  // the walker's, at a stable address
  std::unique_ptr<UserWalker> walker_;
};

}  // namespace uscope
