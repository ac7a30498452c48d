// `uscope gc`: a managed runtime's garbage collections as they end (bcc's ugc), from the
// runtime's own USDT probes (plan/runtime.h): HotSpot's gc__begin/gc__end, CPython's
// gc__start/gc__done, Ruby's mark and sweep phases. Each begin is paired with its end on the
// same thread in user space: a collection is rare, an event each is cheap.
#include <fmt/core.h>

#include <chrono>

#include "cli/command.h"
#include "cli/session.h"
#include "cli/trace_job.h"
#include "plan/runtime.h"
#include "sink/overhead_output.h"
#include "sink/runtime_gc_output.h"
#include "util/output_buffer.h"

namespace uscope::cli {

namespace {

struct GcOptions {
  SessionOptions session;
  std::string runtime;     // -l
  double min_ms = 0;       // -m
};

constexpr RuntimeEvent kGcEvents[] = {RuntimeEvent::GcBegin, RuntimeEvent::GcEnd};
constexpr auto kSummaryFlush = std::chrono::milliseconds(10);

int run_gc(const GcOptions& o) {
  if (!o.session.pid && o.session.command.empty())
    return report_error("uscope gc needs a program: -p PID or -c 'COMMAND'", kExitUsage);
  if (o.min_ms < 0) return report_error("-m: a minimum duration is not negative", kExitUsage);
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto plan = plan_runtime(cache, (*session)->context(), o.runtime, kGcEvents, "gc");
  if (!plan) return report_error(plan.error().message);
  if (o.session.verbose) print_sites(plan->trace.sites, plan->trace.skipped);

  OutputBuffer out(output->fd());
  GcOutput sink(*plan, output->format, out, static_cast<uint64_t>(o.min_ms * 1e6));
  TraceJob job(**session, o.session, plan->trace, {}, sink, out);
  if (auto r = job.start(); !r) return report_error(r.error().message);
  fmt::print(stderr, "uscope: the collections of {} ({}); Ctrl-C to stop\n", plan->runtime->title,
             plan->object);
  StopReason why = (*session)->run(job.callbacks());
  if (auto r = job.stop(why); !r) return report_error(r.error().message);
  const Overhead overhead = *job.overhead();
  const std::string summary = sink.summary(job.totals(), describe(why));
  if (output->json()) {
    out.append(summary);
    if (!out.flush_until(std::chrono::steady_clock::now() + kSummaryFlush))
      fmt::print(stderr, "uscope: the JSON summary could not be written to the output in time\n");
  } else {
    fmt::print(stderr, "{}", summary);
  }
  fmt::print(stderr, "uscope: {}\n", overhead_summary(overhead));
  return kExitOk;
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
      "gc", "A Java, Python or Ruby program's garbage collections: kind, duration, what they freed");
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
