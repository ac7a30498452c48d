// `uscope objnew`: the objects a managed runtime creates, by class, counted in the kernel (bcc's
// uobjnew): HotSpot's object__alloc and Ruby's object__create. No bytes: Ruby's probe says no
// size, and OpenJDK 17's says 0 or junk for most objects (plan/runtimes/java.cc). These probes
// fire at every allocation: what that costs is said at start.
#include "cli/aggregate_run.h"
#include "cli/command.h"
#include "cli/runtime_tool.h"

namespace uscope::cli {

namespace {

struct ObjnewOptions {
  SessionOptions session;
  MapOptions aggregate;
  std::string runtime;  // -l
};

int run_objnew(const ObjnewOptions& o) {
  TallyView view;
  view.kind = "objects";
  view.heading = "CLASS";
  view.counted = "OBJECTS";
  return run_runtime_tally(o.session, o.aggregate, o.runtime, RuntimeTally::Objects, "objnew",
                           view);
}

}  // namespace

constexpr const char* kObjnewExamples = R"(Examples:
  uscope objnew -p PID
      the 10 classes a Java or Ruby process creates most objects of, until Ctrl-C
  uscope objnew -d 10 --top 30 -p PID
      10 seconds of a JVM's allocations, the 30 classes most created
  uscope objnew -i 1 -c 'ruby app.rb'
      a Ruby command's objects by class, each second

Reference: docs/objnew.md)";

void add_objnew_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<ObjnewOptions>();
  auto* cmd =
      app.add_subcommand("objnew", "A Java or Ruby program's new objects, counted by class");
  add_session_options(cmd, opts->session, true, false);
  add_aggregate_options(cmd, opts->aggregate, false);
  cmd->add_option("-l,--language", opts->runtime,
                  "The runtime: java, ruby (detected from the process when not given)");
  cmd->footer(
      "Probes (they fire at every allocation and slow each; what they cost is said at start): "
      "Java hotspot:object__alloc (the JVM needs -XX:+ExtendedDTraceProbes or "
      "-XX:+DTraceAllocProbes; its sizes are not reliable and not shown), Ruby "
      "ruby:object__create. "
      "Python and PHP have no allocation probe.");
  add_examples(cmd, kObjnewExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_objnew(*opts); }; });
}

}  // namespace uscope::cli
