#include "cli/dump_job.h"

#include <fmt/core.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collect/thread_regs.h"
#include "collect/user_walk.h"
#include "discover/hotspot_runtime.h"
#include "discover/object_store.h"
#include "discover/process.h"
#include "discover/python_runtime.h"
#include "discover/unwind_cache.h"
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

  // Read once a page: the walks and the Python frames of 50 threads were ~7,000 reads of a few
  // bytes each (strace -c), now one read a page they touch.
  const TargetMemory mem = page_cached(process_target_memory(pid));
  std::optional<PythonRuntime> python;
  std::map<pid_t, PythonThread> tstates;  // by native thread id
  std::map<uint64_t, std::string> names;  // threading's names, by thread ident
  uint64_t gil = 0;
  std::string python_line;
  ThreadsByFsBase fs_bases;  // 3.8-3.10 name a thread state's thread only by pthread_self()
  for (const ThreadRegs& t : *threads)
    if (t.fsbase) fs_bases.emplace(t.fsbase, t.tid);
  if (auto rt = find_python_runtime(*process); !rt) {
    python_line = fmt::format("{}: native frames only", rt.error().message);
  } else if (*rt) {
    if (auto ok = validate_python_runtime(**rt, mem, &fs_bases); !ok) {
      python_line = fmt::format("{}: native frames only", ok.error().message);
    } else {
      python = std::move(**rt);
      const auto& v = python->object.version;
      python_line =
          fmt::format("Python {}.{}.{} ({})", v.major, v.minor, v.micro, python->object_path);
      if (python->layout.bpf.tstate_native_thread_id == PY_NO_OFFSET)
        python_line += "; threads told apart by their fs base";
      if (auto list = python_threads(*python, mem, &fs_bases))
        for (const PythonThread& t : *list)
          if (t.native_id) tstates[t.native_id] = t;
      if (auto holder = python_gil_holder(*python, mem); holder && *holder) gil = **holder;
      // A process whose threading cannot be read keeps the kernel's names, and says why.
      if (auto n = python_thread_names(*python, mem))
        names = std::move(*n);
      else
        python_line += fmt::format("; threading's thread names not read: {}", n.error().message);
    }
  }

  // A JVM: its code cache's frames are Java frames, its threads named by their Java names.
  std::optional<HotspotRuntime> java;
  std::map<pid_t, HotspotThread> java_threads;
  std::string java_line;
  if (auto rt = find_hotspot_runtime(*process); !rt) {
    java_line = fmt::format("{}: native frames only", rt.error().message);
  } else if (*rt) {
    if (auto ok = validate_hotspot_runtime(**rt, mem); !ok) {
      java_line = fmt::format("{}: native frames only", ok.error().message);
    } else {
      java = std::move(**rt);
      java_line = fmt::format("Java: HotSpot {} ({})", java->version, java->object_path);
      if (auto list = hotspot_threads(*java, mem))
        for (HotspotThread& t : *list) java_threads[t.tid] = std::move(t);
    }
  }

  ThreadDump dump;
  dump.pid = pid;
  dump.command_line = process_command_line(pid).value_or("?");
  if (!python_line.empty()) dump.runtimes.push_back(python_line);
  if (!java_line.empty()) dump.runtimes.push_back(java_line);
  Symbolizer symbolizer;
  UnwindCache cache = UnwindCache::open_default();
  UserWalker walker(ObjectStore::shared(), &cache);
  for (const ThreadRegs& t : *threads) {
    DumpedThread& d = dump.threads.emplace_back();
    d.tid = t.tid;
    d.comm = t.comm;
    d.state = state_text(t);
    std::vector<PythonRawFrame> py;
    auto ts = tstates.find(t.tid);
    const PythonThread* pt = ts != tstates.end() ? &ts->second : nullptr;
    if (python && pt)
      if (auto frames = python_thread_frames(*python, mem, pt->tstate)) py = std::move(*frames);
    // The thread's name in its runtime, before the kernel's: Python's (threading.Thread(name=...)),
    // or a JVM's Java name with what kind of thread it is (a JavaThread of the application, a
    // compiler thread, or one of the VM's own: GC, VM Thread).
    if (auto name = pt ? names.find(pt->thread_id) : names.end(); name != names.end())
      d.name = name->second;
    if (java) {
      auto jt = java_threads.find(t.tid);
      if (jt == java_threads.end()) {
        d.kind = "not a Java thread (the VM's own: GC, VM Thread; the launcher)";
      } else {
        if (!jt->second.name.empty()) d.name = jt->second.name;
        if (jt->second.kind == HotspotThreadKind::Compiler) d.kind = "JIT compiler thread";
      }
    }
    d.holds_gil = pt && pt->tstate == gil && gil != 0;
    std::vector<uint64_t> frames;
    // A thread on a CPU now has moved on from the registers of its last kernel entry: its
    // native stack cannot be read without stopping it; its Python frames can.
    const bool native = native_frames && t.have_regs && !t.on_cpu;
    if (native) {
      UserWalk w = walker.walk(*process, mem, t.ip, t.sp, t.bp, python ? &*python : nullptr, py,
                               java ? &java->proc : nullptr, t.r13);
      frames = std::move(w.frames);
    } else {
      for (const PythonRawFrame& f : py) frames.push_back(PY_FRAME(f.code, f.instr));
      d.native_not_read = native_frames && t.on_cpu;
    }
    for (const Frame& f : symbolizer.symbolize(pid, frames, true))
      d.frames.push_back(symbol_text(f));
  }
  return dump;
}

}  // namespace uscope::cli
