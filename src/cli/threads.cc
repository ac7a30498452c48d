// `uscope threads`: a managed runtime's threads as they start and end (bcc's uthreads), with the
// runtime's name and ids for each, from its own USDT probes (plan/runtime.h): HotSpot's
// thread__start/thread__stop. CPython, Ruby and PHP have no thread probe: uscope says so.
#include "cli/command.h"
#include "cli/runtime_tool.h"
#include "sink/runtime_threads_output.h"

namespace uscope::cli {

namespace {

struct ThreadsOptions {
  SessionOptions session;
  std::string runtime;  // -l
};

constexpr RuntimeEvent kThreadEvents[] = {RuntimeEvent::ThreadStart, RuntimeEvent::ThreadEnd};

int run_threads(const ThreadsOptions& o) {
  return run_runtime_tool(o.session, o.runtime, kThreadEvents, "threads", "the threads",
                          [](const RuntimePlan& plan, OutputFormat format, OutputBuffer& out) {
                            return std::make_unique<ThreadsOutput>(plan, format, out);
                          });
}

}  // namespace

constexpr const char* kThreadsExamples = R"(Examples:
  uscope threads -p PID
      each thread a Java process starts and ends, with its name and ids, until Ctrl-C
  uscope threads -d 30 --format json -p PID
      30 seconds of them as JSON Lines, then the totals and the threads not seen ending

Reference: docs/threads.md)";

void add_threads_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<ThreadsOptions>();
  auto* cmd = app.add_subcommand(
      "threads", "A Java program's threads as they start and end: name, Java id, native id");
  add_session_options(cmd, opts->session, false, false);
  cmd->add_option("-l,--language", opts->runtime,
                  "The runtime (detected from the process when not given)");
  cmd->footer(
      "Probes (the runtime's own USDT, no flag needed): Java hotspot:thread__start and "
      "thread__stop. CPython's, Ruby's and PHP's probes mark no thread.");
  add_examples(cmd, kThreadsExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_threads(*opts); }; });
}

}  // namespace uscope::cli
