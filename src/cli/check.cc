// `uscope check`: what this machine lets uscope do, proven by a real attach: a uprobe on a
// function of uscope itself, hit a known number of times, counted in the kernel.
#include <fmt/core.h>
#include <unistd.h>

#include <climits>

#include "attach/bpf_features.h"
#include "cli/command.h"
#include "collect/hit_counts.h"
#include "discover/elf_file.h"
#include "discover/symbol_table.h"

// Not static and not inlined, so it has a symbol and a real call per iteration to probe.
extern "C" __attribute__((noinline, used)) int uscope_check_probe_target(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}

namespace uscope::cli {

namespace {

int run_check() {
  auto caps = current_capabilities();
  auto f = probe_bpf_features();
  auto yes = [](bool b) { return b ? "yes" : "NO"; };
  fmt::print("capabilities    CAP_BPF {}  CAP_PERFMON {}  CAP_SYS_PTRACE {}\n", yes(caps.bpf),
             yes(caps.perfmon), yes(caps.sys_ptrace));
  fmt::print("kernel BTF      {}\n", yes(f.btf));
  fmt::print("uprobe programs {}\n", yes(f.kprobe_prog));
  fmt::print("ring buffer     {}\n", yes(f.ringbuf));
  fmt::print("bpf cookies     {}\n", yes(f.attach_cookie));
  fmt::print("uprobe_multi    {}\n", yes(f.uprobe_multi));
  fmt::print("bpf_loop        {}{}\n", yes(f.loop),
             f.loop ? "" : "  (Linux 5.17+ needed: trace and latency cannot run, count can)");
  bool sleepable = has_sleepable_uprobes();
  fmt::print("sleepable       {}{}\n", yes(sleepable),
             sleepable ? ""
                       : "  (strings on pages the process has not touched yet are read "
                         "after the event, and are unreadable in keys and predicates)");
  if (auto r = require_tracing_capabilities(); !r) return report_error(r.error().message);

  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return report_error("cannot read /proc/self/exe");
  exe[n] = 0;
  auto elf = ElfFile::open(exe);
  if (!elf) return report_error(elf.error().message);
  auto syms = SymbolTable::load(*elf);
  if (!syms) return report_error(syms.error().message);
  auto target = syms->find("uscope_check_probe_target");
  if (target.empty()) return report_error("uscope's own probe target has no symbol (stripped?)");

  constexpr int kCalls = 1000;
  int failures = 0;
  for (bool multi : {false, true}) {
    if (multi && !f.uprobe_multi) continue;
    std::vector<AttachSite> sites{{exe, target[0]->offset, 0, 0, false}};
    auto hc = HitCounts::attach(sites, {getpid()}, multi);
    if (!hc) {
      fmt::print("attach ({})    FAILED: {}\n", multi ? "multi " : "single", hc.error().message);
      ++failures;
      continue;
    }
    volatile int sink = 0;
    for (int i = 0; i < kCalls; ++i) sink = uscope_check_probe_target(sink);
    auto counts = hc->read();
    if (!counts) {
      fmt::print("attach ({})    FAILED: {}\n", multi ? "multi " : "single",
                 counts.error().message);
      ++failures;
      continue;
    }
    uint64_t got = (*counts)[0];
    bool ok = got == kCalls;
    failures += !ok;
    fmt::print("attach ({})    {}: uprobe on uscope_check_probe_target counted {}/{} calls\n",
               multi ? "multi " : "single", ok ? "ok" : "FAILED", got, kCalls);
  }
  return failures ? kExitFailure : kExitOk;
}

}  // namespace

// What `uscope check --help` ends with; man uscope-check is made from that help, and
// docs/check.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kCheckExamples = R"(Examples:
  uscope check
      what this machine and user may do (capabilities, kernel features), proved by a real attach

Reference: docs/check.md)";

void add_check_command(CLI::App& app, Run& run) {
  auto* cmd = app.add_subcommand("check",
                                 "Show what this machine lets uscope do and prove it "
                                 "with a real uprobe attach");
  add_examples(cmd, kCheckExamples);
  cmd->callback([&run] { run = run_check; });
}

}  // namespace uscope::cli
