// `uscope flow`: a managed runtime's calls as they happen (bcc's uflow), each entry and return
// indented by its depth on the thread, the return with the call's time, from the runtime's
// per-call probes paired in the kernel (TRACE_F_DEPTH). A glob keeps the methods shown; every
// call still crosses the ring buffer (the name is matched in uscope), which the start says.
#include "cli/command.h"
#include "cli/runtime_tool.h"
#include "sink/runtime_flow_output.h"

namespace uscope::cli {

namespace {

struct FlowOptions {
  SessionOptions session;
  std::string runtime;  // -l
  std::string glob;     // the methods shown
};

constexpr RuntimeEvent kCallEvents[] = {RuntimeEvent::MethodEntry, RuntimeEvent::MethodReturn};

int run_flow(const FlowOptions& o) {
  return run_runtime_tool(
      o.session, o.runtime, kCallEvents, "flow", "the calls",
      [&](const RuntimePlan& plan, OutputFormat format, OutputBuffer& out) {
        return std::make_unique<FlowOutput>(plan, format, out, o.glob);
      },
      true);
}

}  // namespace

constexpr const char* kFlowExamples = R"(Examples:
  uscope flow -p PID 'Widget.*'
      every call of a JVM's Widget methods as it enters and returns, until Ctrl-C
  uscope flow -d 5 -p PID 'Cart#*'
      5 seconds of a Ruby class's calls
  uscope flow --format json -c 'ruby app.rb' '*'
      a Ruby command's every call, as JSON Lines

Reference: docs/flow.md)";

void add_flow_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<FlowOptions>();
  auto* cmd = app.add_subcommand(
      "flow", "A Java, Ruby or PHP program's calls as they happen, indented by depth, timed");
  cmd->add_option("methods", opts->glob,
                  "A glob over the names shown (Java Class.method, Ruby Class#method, PHP "
                  "Class::function); all when not given");
  add_session_options(cmd, opts->session, false, false);
  cmd->add_option("-l,--language", opts->runtime,
                  "The runtime: java, ruby, php (detected from the process when not given)");
  cmd->footer(
      "Probes (they fire at every call and slow each; what they cost is said at start): Java "
      "hotspot:method__entry/return (the JVM needs -XX:+ExtendedDTraceProbes), Ruby "
      "ruby:method__entry/return and cmethod__*, PHP php:function__entry/return (PHP needs "
      "USE_ZEND_DTRACE=1). Every call crosses the ring buffer; the glob is matched in uscope.");
  add_examples(cmd, kFlowExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_flow(*opts); }; });
}

}  // namespace uscope::cli
