// `uscope hist`: a histogram of any expression's values at a probe, counted in the kernel: log2
// buckets as bpftrace's hist() (negative values in a bucket of their own), or linear ones with
// --linear MIN,MAX,STEP as lhist(); one histogram per key with --by.
#include <fmt/core.h>

#include <memory>

#include "cli/aggregate_run.h"
#include "cli/command.h"
#include "cli/session.h"

namespace uscope::cli {

namespace {

struct HistOptions {
  SessionOptions session;
  MapOptions aggregate;
  std::string spec;
  std::string value;
  std::string linear;
  bool no_move = false;
};

int run_hist(const HistOptions& o) {
  auto spec = parse_probe_spec(o.spec);
  if (!spec) return report_error(caret_message(o.spec, 0, spec.error().message), kExitUsage);
  if (!spec->args.empty())
    return report_error(fmt::format("'{}': hist takes a probe and an expression, not a format; "
                                    "e.g. uscope hist 'p:c:malloc' arg1",
                                    o.spec),
                        kExitUsage);
  AggregateSpec agg;
  auto value = parse_probe_expression(o.value, spec->kind);
  if (!value) return report_error(caret_message(o.value, 0, value.error().message), kExitUsage);
  agg.value = std::move(*value);
  if (!o.aggregate.by.empty()) {
    auto keys = parse_aggregate_keys(o.aggregate.by, spec->kind);
    if (!keys) return report_error(keys.error().message, kExitUsage);
    agg.keys = std::move(*keys);
  }
  agg.scale.mode = TRACE_AGG_LOG2;
  if (!o.linear.empty()) {
    auto scale = parse_linear_scale(o.linear);
    if (!scale) return report_error(scale.error().message, kExitUsage);
    agg.scale = *scale;
  }
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto plan = plan_aggregation(cache, std::span(&*spec, 1), agg, !o.no_move);
  if (!plan) return report_error(caret_message(o.spec, 0, plan.error().message));
  announce_plan(**session, cache, plan->sites);
  AggregateView view;
  view.kind = "hist";
  view.keys = agg.keys;
  view.scale = {agg.scale.mode, agg.scale.min, agg.scale.max, agg.scale.step,
                agg.scale.linear_buckets};
  view.verb = fmt::format("histogramming {} at", o.value);
  return run_aggregation(**session, o.session, o.aggregate, *plan, view, *output);
}

}  // namespace

// What `uscope hist --help` ends with; man uscope-hist is made from that help, and
// docs/hist.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kHistExamples = R"(Examples:
  uscope hist -p PID 'p:c:malloc' arg1
      log2 histogram of the sizes asked of malloc()
  uscope hist -p PID 'r:c:read' retval --linear 0,4096,512 --by comm
      linear histogram of what read() returned, per thread name
  uscope hist -p PID 'p:c:write (arg1 == 1)' arg3
      sizes written to stdout only
  uscope hist -c ./app 'p::send' 'arg3 & 0xffff'
      any probe expression

Reference: docs/hist.md)";

void add_hist_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<HistOptions>();
  auto* cmd = app.add_subcommand(
      "hist", "Histogram of an expression's values at a probe (log2, or --linear), per --by key");
  cmd->add_option("spec", opts->spec, "Probe: [p|r|u]:target:function [(predicate)]")->required();
  cmd->add_option("expr", opts->value, "Expression whose values are counted: arg2, retval, ...")
      ->required();
  cmd->add_option("--linear", opts->linear, "Linear buckets MIN,MAX,STEP instead of log2");
  add_aggregate_options(cmd, opts->aggregate);
  add_session_options(cmd, opts->session, true, false);
  cmd->add_flag("--no-move", opts->no_move, "Always probe each function's first instruction");
  add_examples(cmd, kHistExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_hist(*opts); }; });
}

}  // namespace uscope::cli
