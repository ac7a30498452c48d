#include "collect/begun_waits.h"

#include <fmt/core.h>

#include <charconv>
#include <fstream>
#include <optional>
#include <string>

#include "bpf/profile.h"
#include "collect/thread_regs.h"
#include "collect/thread_stacks.h"
#include "discover/process.h"

namespace uscope {

namespace {
constexpr uint32_t kTaskDead = 0x80;  // TASK_DEAD
}  // namespace

Result<BegunWaits> read_begun_waits(pid_t pid, bool user_stacks, const ParkedGoroutineLayout* go) {
  auto threads = read_thread_regs(pid);
  if (!threads) return tl::unexpected(threads.error());
  BegunWaits out;
  std::vector<const ThreadRegs*> waiting;
  for (const ThreadRegs& t : *threads) {
    if (t.tid == pid) out.comm = t.comm;
    // Runnable ones wait for a CPU, briefly: their next switch is seen. One without an mm, or
    // dead, has exited.
    if (t.have_regs && t.state != 0 && !(t.state & kTaskDead) && !t.on_cpu)
      waiting.push_back(&t);
  }
  if (out.comm.empty() && !threads->empty()) out.comm = threads->front().comm;
  if (go) {
    if (auto parked = parked_goroutines(pid, *go))
      for (const ParkedGoroutine& g : *parked) out.goroutines.push_back({g, {}});
    else
      out.no_goroutines = parked.error().message;
  }
  std::optional<ThreadStacks> stacks;
  if (user_stacks && (!waiting.empty() || !out.goroutines.empty())) {
    auto process = Process::open(pid);
    if (!process) return tl::unexpected(process.error());
    stacks.emplace(ThreadStacks::open(std::move(*process), *threads));
  }
  for (const ThreadRegs* t : waiting) {
    BegunWait& w = out.waits.emplace_back();
    w.tid = t->tid;
    w.comm = t->comm;
    w.reason = offcpu_reason_of(t->state, t->syscall);
    w.switches = t->switches;
    w.kernel = t->kernel;
    if (stacks) w.user = stacks->walk(*t, true);
  }
  if (stacks)
    for (BegunGoroutine& g : out.goroutines) {
      // Its stack as a sleeping thread's: from the registers gopark's mcall saved.
      ThreadRegs regs;
      regs.have_regs = true;
      regs.ip = g.parked.pc;
      regs.sp = g.parked.sp;
      regs.bp = g.parked.bp;
      g.user = stacks->walk(regs, true);
    }
  return out;
}

bool still_waiting(pid_t pid, pid_t tid, uint64_t switches) {
  std::ifstream in(fmt::format("/proc/{}/task/{}/status", pid, tid));
  if (!in) return false;  // gone
  bool waits = false;
  uint64_t seen = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("State:")) {
      // "State:\tS (sleeping)": R is running or runnable, which a wait read before is not.
      const size_t at = line.find_first_not_of(" \t", 6);
      waits = at != std::string::npos && line[at] != 'R';
    } else if (line.starts_with("voluntary_ctxt_switches:") ||
               line.starts_with("nonvoluntary_ctxt_switches:")) {
      const size_t at = line.find_first_of("0123456789");
      uint64_t n = 0;
      if (at != std::string::npos) std::from_chars(line.data() + at, line.data() + line.size(), n);
      seen += n;
    }
  }
  return waits && seen == switches;
}

}  // namespace uscope
