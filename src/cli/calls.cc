// `uscope calls`: a managed runtime's method calls by name, counted (and with -L timed) in the
// kernel (bcc's ucalls): HotSpot's method__entry/return, Ruby's method and cmethod probes, PHP's
// function probes, Python's function__return. Each return is paired with the call its thread
// entered last (TRACE_F_DEPTH), since entry and return are two probes at two places of the
// interpreter. These probes fire at every call: what that costs is said at start.
#include "cli/aggregate_run.h"
#include "cli/command.h"
#include "cli/runtime_tool.h"

namespace uscope::cli {

namespace {

struct CallsOptions {
  SessionOptions session;
  MapOptions aggregate;
  std::string runtime;   // -l
  bool latency = false;  // -L
  std::string sort = "count";
};

int run_calls(const CallsOptions& o) {
  if (o.sort == "time" && !o.latency)
    return report_error("--sort time needs -L: calls are timed only with -L", kExitUsage);
  TallyView view;
  view.kind = "calls";
  view.heading = "METHOD";
  view.counted = "CALLS";
  view.timed = o.latency;
  view.by_time = o.sort == "time";
  return run_runtime_tally(o.session, o.aggregate, o.runtime,
                           o.latency ? RuntimeTally::TimedCalls : RuntimeTally::Calls, "calls",
                           view);
}

}  // namespace

constexpr const char* kCallsExamples = R"(Examples:
  uscope calls -p PID
      the 10 most called methods of a Java, Ruby, PHP or Python process, until Ctrl-C
  uscope calls -L --sort time -d 10 -p PID
      10 seconds of calls with their total and average time, the most time last
  uscope calls -i 1 --top 20 -p PID
      the 20 most called each second
  uscope calls -L -c 'java -XX:+ExtendedDTraceProbes -jar app.jar'
      a JVM's calls from its start (its method probes fire only with that flag)

Reference: docs/calls.md)";

void add_calls_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<CallsOptions>();
  auto* cmd = app.add_subcommand(
      "calls", "A Java, Ruby, PHP or Python program's method calls by name: counts and time");
  add_session_options(cmd, opts->session, true, false);
  add_aggregate_options(cmd, opts->aggregate, false);
  cmd->add_option(
      "-l,--language", opts->runtime,
      "The runtime: java, python, ruby, php (detected from the process when not given)");
  cmd->add_flag("-L,--latency", opts->latency,
                "Time each call too: its total and average (pairs every return with its entry)");
  cmd->add_option("--sort", opts->sort, "Order rows by count or by time (-L)")
      ->check(CLI::IsMember({"count", "time"}));
  cmd->footer(
      "Probes (they fire at every call and slow each; what they cost is said at start): Java "
      "hotspot:method__entry/return (the JVM needs -XX:+ExtendedDTraceProbes), Ruby "
      "ruby:method__entry/return and cmethod__*, PHP php:function__entry/return (PHP needs "
      "USE_ZEND_DTRACE=1 in its environment), Python python:function__return (3.11's "
      "function__entry fires only for calls from C: Python calls are counted, not timed).");
  add_examples(cmd, kCallsExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_calls(*opts); }; });
}

}  // namespace uscope::cli
