#include "cli/dump_job.h"

#include <fmt/core.h>

#include <map>
#include <string>

#include "collect/thread_regs.h"
#include "collect/thread_stacks.h"
#include "discover/process.h"
#include "symbolize/python_thread_names.h"
#include "symbolize/symbol_text.h"
#include "symbolize/symbolizer.h"

namespace uscope::cli {

namespace {

// What the kernel's task state says, as ps does ("S" sleeping, "D" waiting on I/O).
std::string state_text(const ThreadRegs& t) {
  if (t.on_cpu) return "running";
  if (t.state == 0) return "runnable";
  if (t.state & 0x2) return "idle (waiting, D)";
  if (t.state & 0x1) return "idle (sleeping, S)";
  if (t.state & 0x4 || t.state & 0x8) return "stopped";
  return fmt::format("idle (state {:#x})", t.state);
}

}  // namespace

Result<ThreadDump> dump_threads(pid_t pid, bool native_frames) {
  auto process = Process::open(pid);
  if (!process) return tl::unexpected(process.error());
  auto threads = read_thread_regs(pid);
  if (!threads) return tl::unexpected(threads.error());
  if (threads->empty()) return fail("process {} has exited", pid);
  auto stacks = ThreadStacks::open(std::move(*process), *threads);

  ThreadDump dump;
  dump.pid = pid;
  dump.command_line = process_command_line(pid).value_or("?");
  std::map<uint64_t, std::string> names;  // threading's names, by thread ident
  if (std::string line = stacks.python_line(); !line.empty()) {
    // A process whose threading cannot be read keeps the kernel's names, and says why.
    if (const PythonRuntime* python = stacks.python()) {
      if (auto n = python_thread_names(*python, stacks.memory()))
        names = std::move(*n);
      else
        line += fmt::format("; threading's thread names not read: {}", n.error().message);
    }
    dump.runtimes.push_back(std::move(line));
  }
  if (!stacks.java_line().empty()) dump.runtimes.push_back(stacks.java_line());
  Symbolizer symbolizer;
  for (const ThreadRegs& t : *threads) {
    DumpedThread& d = dump.threads.emplace_back();
    d.tid = t.tid;
    d.comm = t.comm;
    d.state = state_text(t);
    const PythonThread* pt = stacks.python_thread(t.tid);
    // The thread's name in its runtime, before the kernel's: Python's (threading.Thread(name=...)),
    // or a JVM's Java name with what kind of thread it is (a JavaThread of the application, a
    // compiler thread, or one of the VM's own: GC, VM Thread).
    if (auto name = pt ? names.find(pt->thread_id) : names.end(); name != names.end())
      d.name = name->second;
    if (stacks.java()) {
      if (const HotspotThread* jt = stacks.java_thread(t.tid); !jt) {
        d.kind = "not a Java thread (the VM's own: GC, VM Thread; the launcher)";
      } else {
        if (!jt->name.empty()) d.name = jt->name;
        if (jt->kind == HotspotThreadKind::Compiler) d.kind = "JIT compiler thread";
      }
    }
    d.holds_gil = pt && pt->tstate == stacks.gil_holder() && stacks.gil_holder() != 0;
    // A thread on a CPU now has moved on from the registers of its last kernel entry: its
    // native stack cannot be read without stopping it; its Python frames can.
    d.native_not_read = native_frames && t.on_cpu;
    const UserWalk w = stacks.walk(t, native_frames);
    for (const Frame& f : symbolizer.symbolize(pid, w.frames, true))
      d.frames.push_back(symbol_text(f));
  }
  return dump;
}

}  // namespace uscope::cli
