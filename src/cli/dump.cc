// `uscope dump`: every thread's stack of a process now, Python or Java and native together (py-spy
// dump, jstack without a safepoint): read once by the dump job (cli/dump_job.h), with nothing
// attached to the process and nothing left behind, and printed whole (sink/dump_output.h).
#include <fmt/core.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/dump_job.h"
#include "sink/dump_output.h"

namespace uscope::cli {

namespace {

struct DumpOptions {
  pid_t pid = 0;
  bool native = true;
};

int run_dump(const DumpOptions& o) {
  if (o.pid <= 0) return report_error("uscope dump needs a process: -p PID", kExitUsage);
  auto dump = dump_threads(o.pid, o.native);
  if (!dump) return report_error(dump.error().message);
  // Written at once: a dump is read whole.
  fmt::print(stdout, "{}", dump_text(*dump));
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
