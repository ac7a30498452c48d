#include "cli/runtime_tool.h"

#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <optional>

#include "cli/aggregate_run.h"
#include "cli/trace_job.h"
#include "sink/overhead_output.h"

namespace uscope::cli {

namespace {
constexpr auto kRuntimeSummaryFlush = std::chrono::milliseconds(10);
}  // namespace

void write_summary(OutputBuffer& out, const CommandOutput& output, const std::string& summary) {
  if (output.json()) out.append(summary);
  if (!out.flush_until(std::chrono::steady_clock::now() + kRuntimeSummaryFlush))
    fmt::print(stderr, "uscope: the last lines could not be written to the output in time\n");
  if (!output.json()) fmt::print(stderr, "{}", summary);
}

namespace {

// The output and the session of a runtime tool, or its exit code.
struct Opened {
  std::optional<CommandOutput> output;
  std::unique_ptr<Session> session;
  int exit_code = kExitOk;
};
Opened open_runtime_tool(const SessionOptions& so, std::string_view tool) {
  Opened o;
  if (!so.pid && so.command.empty()) {
    o.exit_code = report_error(
        fmt::format("uscope {} needs a program: -p PID or -c 'COMMAND'", tool), kExitUsage);
    return o;
  }
  auto output = open_output(so.output);
  if (!output) {
    o.exit_code = output.error();
    return o;
  }
  auto session = Session::open(so);
  if (!session) {
    o.exit_code = report_error(session.error().message);
    return o;
  }
  o.output.emplace(std::move(*output));
  o.session = std::move(*session);
  return o;
}

}  // namespace

int run_runtime_tool(const SessionOptions& so, const std::string& runtime,
                     std::span<const RuntimeEvent> events, std::string_view tool,
                     std::string_view watching, const RuntimeSinkMaker& make_sink, bool calls) {
  Opened o = open_runtime_tool(so, tool);
  if (!o.session) return o.exit_code;
  return run_runtime_session(*o.session, *o.output, so, runtime, events, tool, watching, make_sink,
                             calls);
}

int run_runtime_session(Session& session, const CommandOutput& output, const SessionOptions& so,
                        const std::string& runtime, std::span<const RuntimeEvent> events,
                        std::string_view tool, std::string_view watching,
                        const RuntimeSinkMaker& make_sink, bool calls) {
  ObjectCache cache(session.context());
  auto plan = plan_runtime(cache, session.context(), runtime, events, tool, {}, calls);
  if (!plan) return report_error(plan.error().message);
  if (calls) {
    std::vector<std::string_view> per_call;
    for (const RuntimeProbe* p : plan->probe_of)
      if (p->per_call) per_call.push_back(p->name);
    pair_calls_by_depth(*plan);
    fmt::print(stderr, "uscope: {}\n", per_call_notice(*plan->runtime, per_call));
  }
  announce_plan(session, cache, plan->trace.sites);
  if (so.verbose) print_sites(plan->trace.sites, plan->trace.skipped);

  OutputBuffer out(output.fd());
  std::unique_ptr<SummarizingSink> sink = make_sink(*plan, output.format, out);
  TraceJob job(session, so, plan->trace, {}, *sink, out);
  if (auto r = job.start(); !r) return report_error(r.error().message);
  fmt::print(stderr, "uscope: {} of {} ({}); Ctrl-C to stop\n", watching, plan->runtime->title,
             plan->object);
  EventLoop::Callbacks cb = job.callbacks();
  if (so.interval_s > 0)
    cb.interval = [&] {
      while (cb.drain()) {
      }
      sink->interval();
    };
  StopReason why = session.run(cb);
  if (auto r = job.stop(why); !r) return report_error(r.error().message);
  if (so.interval_s > 0) sink->interval();  // the last, partial one
  const Overhead overhead = *job.overhead();
  const std::string summary = sink->summary(job.totals(), describe(why));
  write_summary(out, output, summary);
  fmt::print(stderr, "uscope: {}\n", overhead_summary(overhead));
  return kExitOk;
}

int run_runtime_tally(const SessionOptions& so, const MapOptions& ao, const std::string& runtime,
                      RuntimeTally what, std::string_view tool, TallyView view) {
  Opened o = open_runtime_tool(so, tool);
  if (!o.session) return o.exit_code;
  Session& session = *o.session;
  ObjectCache cache(session.context());
  auto tally = plan_runtime_tally(cache, session.context(), runtime, what, tool);
  if (!tally) return report_error(tally.error().message);
  announce_plan(session, cache, tally->plan.sites);
  fmt::print(stderr, "uscope: {}\n", per_call_notice(*tally->runtime, tally->probes));
  view.runtime = tally->runtime;
  AggregateView agg;
  agg.kind = std::string(view.kind);
  agg.keys = tally->keys;
  agg.verb = fmt::format("{} {} ({}) at", what == RuntimeTally::TimedCalls ? "timing" : "counting",
                         view.kind, tally->object);
  if (view.timed) {
    agg.scale.mode = TRACE_AGG_LOG2;
    agg.unit = "ns";
  }
  return run_aggregation(session, so, ao, tally->plan, agg, *o.output,
                         [&](MapTable t, OutputFormat format, std::FILE* f) {
                           print_tally(std::move(t), view, format, f);
                         });
}

}  // namespace uscope::cli
