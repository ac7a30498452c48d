// `uscope threads`: a managed runtime's threads as they start and end (bcc's uthreads). Java's
// from HotSpot's own USDT probes (thread__start/thread__stop: the Java name, Java id and daemon
// flag); CPython, Ruby and PHP have no thread probe, so theirs come from the kernel's process
// events (the netlink connector: each thread's start and exit, at no cost to the program), named
// as the kernel names them.
#include <fmt/core.h>

#include <poll.h>

#include <chrono>
#include <fstream>

#include "cli/command.h"
#include "cli/runtime_tool.h"
#include "discover/process_events.h"
#include "sink/overhead_output.h"
#include "sink/runtime_threads_output.h"

namespace uscope::cli {

namespace {

struct ThreadsOptions {
  SessionOptions session;
  std::string runtime;  // -l
};

constexpr auto kExitGrace = std::chrono::milliseconds(100);
constexpr RuntimeEvent kThreadEvents[] = {RuntimeEvent::ThreadStart, RuntimeEvent::ThreadEnd};

// The kernel's name of thread `tid` of `pid` ("" once it is gone).
std::string kernel_name(pid_t pid, pid_t tid) {
  std::ifstream in(fmt::format("/proc/{}/task/{}/comm", pid, tid));
  std::string name;
  std::getline(in, name);
  return name;
}

// The threads of a runtime without thread probes, from the kernel's process events.
int run_kernel_threads(Session& session, const CommandOutput& output, const Runtime& runtime) {
  auto events = ProcessEvents::open(true);
  if (!events) return report_error(events.error().message);
  OutputBuffer out(output.fd());
  ThreadsOutput sink(runtime, nullptr, output.format, out);
  sink.header();
  if (auto r = session.start(); !r) return report_error(r.error().message);
  fmt::print(stderr,
             "uscope: the threads of {} as the kernel announces them ({} has no thread probe); "
             "Ctrl-C to stop\n",
             runtime.title, runtime.name);
  const pid_t pid = session.watch_pid();
  uint64_t overflows = 0;
  EventLoop::Callbacks cb;
  cb.data_fd = (*events)->fd();
  cb.output = &out;
  cb.drain = [&] {
    for (const ProcessEvent& e : (*events)->read()) {
      if (e.pid != pid) continue;
      if (e.kind != ProcessEvent::ThreadStart && e.kind != ProcessEvent::ThreadExit) continue;
      RuntimeThread t;
      t.native = static_cast<uint32_t>(e.tid);
      t.name = kernel_name(pid, e.tid);
      const auto ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(e.at.time_since_epoch()).count();
      sink.thread(e.kind == ProcessEvent::ThreadStart, static_cast<uint32_t>(pid), t,
                  static_cast<uint64_t>(ns));
    }
    overflows += (*events)->take_overflows();
    return false;
  };
  StopReason why = session.run(cb);
  // What the kernel sent up to the stop, and for a moment after: a process's threads end with
  // it, and their exits may come just after the stop is seen.
  for (const auto until = std::chrono::steady_clock::now() + kExitGrace;;) {
    cb.drain();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{(*events)->fd(), POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
  }
  TraceTotals totals;
  totals.lost = overflows;
  const std::string summary = sink.summary(totals, describe(why));
  write_summary(out, output, summary);
  if (overflows)
    fmt::print(stderr,
               "uscope: the kernel dropped process events {} time(s) (its socket buffer was "
               "full): threads are missing\n",
               overflows);
  return kExitOk;
}

int run_threads(const ThreadsOptions& o) {
  if (!o.session.pid && o.session.command.empty())
    return report_error("uscope threads needs a program: -p PID or -c 'COMMAND'", kExitUsage);
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  auto found = find_runtime((*session)->context(), o.runtime, "threads");
  if (!found) return report_error(found.error().message);
  if (!runtime_marks(*found->runtime, RuntimeEvent::ThreadStart))
    return run_kernel_threads(**session, *output, *found->runtime);
  return run_runtime_session(
      **session, *output, o.session, o.runtime, kThreadEvents, "threads", "the threads",
      [](const RuntimePlan& plan, OutputFormat format, OutputBuffer& out) {
        return std::make_unique<ThreadsOutput>(*plan.runtime, &plan, format, out);
      });
}

}  // namespace

constexpr const char* kThreadsExamples = R"(Examples:
  uscope threads -p PID
      each thread a Java, Python, Ruby or PHP process starts and ends, until Ctrl-C
  uscope threads -d 30 --format json -p PID
      30 seconds of them as JSON Lines, then the totals and the threads not seen ending

Reference: docs/threads.md)";

void add_threads_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<ThreadsOptions>();
  auto* cmd = app.add_subcommand(
      "threads",
      "A Java, Python, Ruby or PHP program's threads as they start and end, with their names");
  add_session_options(cmd, opts->session, false, false);
  cmd->add_option("-l,--language", opts->runtime,
                  "The runtime (detected from the process when not given)");
  cmd->footer(
      "Java: HotSpot's USDT probes thread__start and thread__stop (the Java name, id and daemon "
      "flag; no flag needed). CPython, Ruby and PHP have no thread probe: their threads come "
      "from the kernel's process events (netlink connector, no cost to the program), named as "
      "the kernel names them.");
  add_examples(cmd, kThreadsExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_threads(*opts); }; });
}

}  // namespace uscope::cli
