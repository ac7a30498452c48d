// `uscope dump`: every thread's stack of a process now, Python or Java and native together (py-spy
// dump, jstack without a safepoint): read once, with nothing attached to the process and nothing
// left behind. Threads come from a BPF task iterator with the registers each last entered the
// kernel with (collect/thread_regs.h); stacks are walked in user space through the process's memory
// by the unwinder's rules (collect/user_walk.h), Python frames from the interpreter's own thread
// states.
#include <fmt/core.h>
#include <fmt/format.h>

#include <iterator>

#include <map>
#include <optional>

#include "cli/command.h"
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

struct DumpOptions {
  pid_t pid = 0;
  bool native = true;
};

// What the kernel's task state says, as ps does ("S" sleeping, "D" waiting on I/O).
std::string state_text(const ThreadRegs& t) {
  if (t.on_cpu) return "running";
  if (t.state == 0) return "runnable";
  if (t.state & 0x2) return "idle (waiting, D)";
  if (t.state & 0x1) return "idle (sleeping, S)";
  if (t.state & 0x4 || t.state & 0x8) return "stopped";
  return fmt::format("idle (state {:#x})", t.state);
}

int run_dump(const DumpOptions& o) {
  if (o.pid <= 0) return report_error("uscope dump needs a process: -p PID", kExitUsage);
  auto process = Process::open(o.pid);
  if (!process) return report_error(process.error().message);
  auto threads = read_thread_regs(o.pid);
  if (!threads) return report_error(threads.error().message);
  if (threads->empty()) return report_error(fmt::format("process {} has exited", o.pid));

  // Read once a page: the walks and the Python frames of 50 threads were ~7,000 reads of a few
  // bytes each (strace -c), now one read a page they touch.
  const TargetMemory mem = page_cached(process_target_memory(o.pid));
  std::optional<PythonRuntime> python;
  std::map<pid_t, PythonThread> tstates;  // by native thread id
  std::map<uint64_t, std::string> names;  // threading's names, by thread ident
  uint64_t gil = 0;
  std::string python_line;
  if (auto rt = find_python_runtime(*process); !rt) {
    python_line = fmt::format("{}: native frames only", rt.error().message);
  } else if (*rt) {
    if (auto ok = validate_python_runtime(**rt, mem); !ok) {
      python_line = fmt::format("{}: native frames only", ok.error().message);
    } else {
      python = std::move(**rt);
      const auto& v = python->object.version;
      python_line =
          fmt::format("Python {}.{}.{} ({})", v.major, v.minor, v.micro, python->object_path);
      if (auto list = python_threads(*python, mem))
        for (const PythonThread& t : *list) tstates[t.native_id] = t;
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

  std::string text;  // written at once: a dump is read whole
  auto out = std::back_inserter(text);
  fmt::format_to(out, "Process {}: {}\n", o.pid, process_command_line(o.pid).value_or("?"));
  if (!python_line.empty()) fmt::format_to(out, "{}\n", python_line);
  if (!java_line.empty()) fmt::format_to(out, "{}\n", java_line);
  Symbolizer symbolizer;
  UnwindCache cache = UnwindCache::open_default();
  UserWalker walker(ObjectStore::shared(), &cache);
  for (const ThreadRegs& t : *threads) {
    std::vector<PythonRawFrame> py;
    auto ts = tstates.find(t.tid);
    const PythonThread* pt = ts != tstates.end() ? &ts->second : nullptr;
    if (python && pt)
      if (auto frames = python_thread_frames(*python, mem, pt->tstate)) py = std::move(*frames);
    // The thread's name in its runtime, before the kernel's: Python's (threading.Thread(name=...)),
    // or a JVM's Java name with what kind of thread it is (a JavaThread of the application, a
    // compiler thread, or one of the VM's own: GC, VM Thread).
    auto name = pt ? names.find(pt->thread_id) : names.end();
    std::string named = name != names.end() ? fmt::format(" \"{}\"", name->second) : "", kind;
    if (java) {
      auto jt = java_threads.find(t.tid);
      if (jt == java_threads.end()) {
        kind = ", not a Java thread (the VM's own: GC, VM Thread; the launcher)";
      } else {
        if (!jt->second.name.empty()) named = fmt::format(" \"{}\"", jt->second.name);
        if (jt->second.kind == HotspotThreadKind::Compiler) kind = ", JIT compiler thread";
      }
    }
    fmt::format_to(out, "\nThread {}{} ({}): {}{}{}\n", t.tid, named, t.comm, state_text(t),
                   pt && pt->tstate == gil && gil != 0 ? ", holds the GIL" : "", kind);
    std::vector<uint64_t> frames;
    // A thread on a CPU now has moved on from the registers of its last kernel entry: its
    // native stack cannot be read without stopping it; its Python frames can.
    const bool native = o.native && t.have_regs && !t.on_cpu;
    if (native) {
      UserWalk w = walker.walk(*process, mem, t.ip, t.sp, t.bp, python ? &*python : nullptr, py,
                               java ? &java->proc : nullptr, t.r13);
      frames = std::move(w.frames);
    } else {
      for (const PythonRawFrame& f : py) frames.push_back(PY_FRAME(f.code, f.instr));
      if (o.native && t.on_cpu)
        fmt::format_to(out, "    [native frames not read: the thread is running]\n");
    }
    for (const Frame& f : symbolizer.symbolize(o.pid, frames, true))
      fmt::format_to(out, "    {}\n", symbol_text(f));
  }
  fmt::print(stdout, "{}", text);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

// What `uscope dump --help` ends with; man uscope-dump is made from that help, and docs/dump.md
// shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kDumpExamples = R"(Examples:
  uscope dump -p 1234
      every thread of 1234 now: its state, Python frames (file:line) among the native ones
  uscope dump -p 1234 --no-native
      Python frames only, as py-spy dump prints them

Reference: docs/dump.md)";

void add_dump_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<DumpOptions>();
  auto* cmd = app.add_subcommand(
      "dump",
      "Print every thread's stack now, Python or Java and native (like py-spy dump, jstack)");
  cmd->add_option("-p,--pid", opts->pid, "The process")->required();
  cmd->add_flag("!--no-native", opts->native, "Python frames only, no native frames");
  add_examples(cmd, kDumpExamples);
  cmd->callback([opts, &run] { run = [opts] { return run_dump(*opts); }; });
}

}  // namespace uscope::cli
