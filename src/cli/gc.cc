// `uscope gc`: a managed runtime's garbage collections as they end (bcc's ugc), from the
// runtime's own USDT probes (plan/runtime.h): HotSpot's gc__begin/gc__end, CPython's
// gc__start/gc__done, Ruby's mark and sweep phases. Each begin is paired with its end on the
// same thread in user space: a collection is rare, an event each is cheap.
#include "cli/command.h"
#include "cli/runtime_tool.h"
#include "sink/runtime_gc_output.h"

namespace uscope::cli {

namespace {

struct GcOptions {
  SessionOptions session;
  std::string runtime;  // -l
  double min_ms = 0;    // -m
};

constexpr RuntimeEvent kGcEvents[] = {RuntimeEvent::GcBegin, RuntimeEvent::GcEnd};

int run_gc(const GcOptions& o) {
  if (o.min_ms < 0) return report_error("-m: a minimum duration is not negative", kExitUsage);
  const auto min_ns = static_cast<uint64_t>(o.min_ms * 1e6);
  return run_runtime_tool(o.session, o.runtime, kGcEvents, "gc", "the collections",
                          [&](const RuntimePlan& plan, OutputFormat format, OutputBuffer& out) {
                            return std::make_unique<GcOutput>(plan, format, out, min_ns);
                          });
}

}  // namespace

constexpr const char* kGcExamples = R"(Examples:
  uscope gc -p PID
      each collection of a Java, Python or Ruby process as it ends, until Ctrl-C
  uscope gc -m 5 -p PID
      only collections of 5 ms or more (the others are counted)
  uscope gc -d 60 --format json -p PID
      a minute of collections as JSON Lines, then their totals
  uscope gc -c 'python3.11 app.py'
      a command's, from its start

Reference: docs/gc.md)";

void add_gc_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<GcOptions>();
  auto* cmd = app.add_subcommand(
      "gc",
      "A Java, Python or Ruby program's garbage collections: kind, duration, what they freed");
  add_session_options(cmd, opts->session, false, false);
  cmd->add_option("-l,--language", opts->runtime,
                  "The runtime: java, python, ruby (detected from the process when not given)");
  cmd->add_option("-m,--minimum", opts->min_ms,
                  "Show only collections lasting at least this many milliseconds");
  cmd->footer(
      "Probes (the runtime's own USDT, no flag needed): Java hotspot:gc__begin/gc__end, Python "
      "python:gc__start/gc__done, Ruby ruby:gc__mark__begin/end and gc__sweep__begin/end (each "
      "phase a line of its own). PHP's probes have none.");
  add_examples(cmd, kGcExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_gc(*opts); }; });
}

}  // namespace uscope::cli
