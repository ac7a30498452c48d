// `uscope latency`: log2 histograms of how long functions take, per function, measured in the
// kernel between an entry probe and a return probe matched by (thread, entry stack pointer), so
// recursion and tail calls pair correctly; unmatched entries are reported, not hidden.
#include <fmt/core.h>
#include <unistd.h>

#include <memory>

#include "cli/aggregate_run.h"
#include "cli/command.h"
#include "cli/latency_job.h"
#include "cli/session.h"
#include "plan/aggregate_plan.h"
#include "sink/aggregate_output.h"
#include "sink/overhead_output.h"

namespace uscope::cli {

namespace {

struct LatencyOptions {
  SessionOptions session;
  MapOptions aggregate;
  std::vector<std::string> patterns;
  bool no_move = false;
};

// latency --by: one histogram per key, keys read at the return (argN: its value at entry).
int run_latency_by(const LatencyOptions& o, std::vector<ProbeSpec> patterns,
                   CommandOutput& output) {
  AggregateSpec agg;
  agg.latency = true;
  auto keys = parse_aggregate_keys(o.aggregate.by, ProbeKind::Return, true);
  if (!keys) return report_error(keys.error().message, kExitUsage);
  agg.keys = std::move(*keys);
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto plan = plan_aggregation(cache, patterns, agg, !o.no_move);
  if (!plan) return report_error(plan.error().message);
  announce_plan(**session, cache, plan->sites);
  AggregateView view;
  view.kind = "latency";
  view.keys = agg.keys;
  view.scale.mode = TRACE_AGG_LOG2;
  view.unit = "ns";
  view.verb = "timing calls at";
  return run_aggregation(**session, o.session, o.aggregate, *plan, view, output);
}

int run_latency(const LatencyOptions& o) {
  auto patterns = parse_patterns(o.patterns);
  if (!patterns) return report_error(patterns.error().message, kExitUsage);
  if (auto r = check_latency_patterns(*patterns); !r)
    return report_error(r.error().message, kExitUsage);
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  if (!o.aggregate.by.empty()) {
    for (auto& p : *patterns) p.kind = ProbeKind::Return;  // keys are read at the return
    return run_latency_by(o, std::move(*patterns), *output);
  }
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto plan = plan_latency(cache, *patterns, {.move_sites = !o.no_move});
  if (!plan) return report_error(plan.error().message);
  announce_plan(**session, cache, plan->sites);
  if (o.session.verbose) print_sites(plan->sites);
  TableOutput out(*output);
  LatencyJob job(**session, o.session, *plan, [&](std::vector<LatencyRow> rows) {
    out.append([&](std::FILE* f) {
      for (const auto& row : rows) print_latency(row, out.format(), f);
    });
  });
  return run_job(**session, job, out, o.session.verbose);
}

}  // namespace

// What `uscope latency --help` ends with; man uscope-latency is made from that help, and
// docs/latency.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kLatencyExamples = R"(Examples:
  uscope latency -p PID 'c:malloc' 'c:free'
      a log2 latency histogram per function, until Ctrl-C
  uscope latency -d 10 -p PID 'c:read' --by arg1
      one histogram per file descriptor, for 10 seconds
  uscope latency -i 5 -p PID 'process_*'
      every function of the program starting with process_, printed every 5 seconds
  uscope latency -c ./goapp 'main.handle'
      a Go function (return probes as uprobes on each RET, never a uretprobe)

Reference: docs/latency.md)";

void add_latency_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<LatencyOptions>();
  auto* cmd = app.add_subcommand("latency", "Log2 latency histograms of functions matching globs");
  cmd->add_option("pattern", opts->patterns, "'[target:]glob' over function names")->required();
  add_session_options(cmd, opts->session, true, false);
  add_aggregate_options(cmd, opts->aggregate);
  cmd->add_flag("--no-move", opts->no_move, "Always probe each function's first instruction");
  cmd->footer(kOverheadHelp);
  add_examples(cmd, kLatencyExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_latency(*opts); }; });
}

}  // namespace uscope::cli
