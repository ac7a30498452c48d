// `uscope count`: call counts for every function (or USDT probe) matching globs, counted in the
// kernel per site (hit_counter.bpf.c), attached through uprobe_multi links in one go.
#include <fmt/core.h>
#include <unistd.h>

#include <memory>

#include "cli/aggregate_run.h"
#include "cli/command.h"
#include "cli/count_job.h"
#include "cli/session.h"
#include "plan/aggregate_plan.h"
#include "sink/aggregate_output.h"
#include "sink/overhead_output.h"

namespace uscope::cli {

namespace {

struct CountOptions {
  SessionOptions session;
  MapOptions aggregate;
  std::vector<std::string> patterns;
  bool no_move = false;
};

// count --by: counts per distinct key, in the kernel. Each argument is a pattern (globs) or a
// probe spec with a predicate ('r:c:read (retval < 0)').
int run_count_by(const CountOptions& o, CommandOutput& output) {
  std::vector<ProbeSpec> specs;
  for (const auto& text : o.patterns) {
    auto p = parse_probe_pattern(text);
    if (!p) p = parse_probe_spec(text);
    if (!p) return report_error(caret_message(text, 0, p.error().message), kExitUsage);
    if (!p->args.empty())
      return report_error(fmt::format("'{}': count takes no format; the keys go in --by", text),
                          kExitUsage);
    specs.push_back(std::move(*p));
  }
  for (const auto& s : specs)
    if (s.kind != specs[0].kind)
      return report_error(
          "count --by: give probes of one kind (all p:, all r: or all u:), since "
          "the keys read the same way at each",
          kExitUsage);
  AggregateSpec agg;
  auto keys = parse_aggregate_keys(o.aggregate.by, specs[0].kind);
  if (!keys) return report_error(keys.error().message, kExitUsage);
  agg.keys = std::move(*keys);
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto plan = plan_aggregation(cache, specs, agg, !o.no_move);
  if (!plan) return report_error(plan.error().message);
  announce_plan(**session, cache, plan->sites);
  AggregateView view;
  view.kind = "count";
  view.keys = agg.keys;
  view.verb = "counting at";
  return run_aggregation(**session, o.session, o.aggregate, *plan, view, output);
}

int run_count(const CountOptions& o) {
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  if (!o.aggregate.by.empty()) return run_count_by(o, *output);
  auto patterns = parse_patterns(o.patterns);
  if (!patterns) return report_error(patterns.error().message, kExitUsage);
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto plan = plan_count(cache, *patterns, {.move_sites = !o.no_move});
  if (!plan) return report_error(plan.error().message);
  announce_plan(**session, cache, plan->sites);
  if (o.session.verbose) {
    print_sites(plan->sites);
    for (const auto& s : plan->skipped)
      fmt::print(stderr, "uscope: {} not counted: {}\n", s.label, s.why);
  }
  if (plan->sites.empty()) return report_error("no probeable site among the matches");
  TableOutput out(*output);
  CountJob job(**session, o.session, *plan, [&](std::vector<CountRow> rows) {
    out.append([&](std::FILE* f) { print_counts(std::move(rows), out.format(), f); });
  });
  return run_job(**session, job, out, o.session.verbose);
}

}  // namespace

// What `uscope count --help` ends with; man uscope-count is made from that help, and
// docs/count.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kCountExamples = R"(Examples:
  uscope count -p PID 'c:str*'
      calls of every libc function starting with str, until Ctrl-C
  uscope count -d 10 -p PID 'c:malloc' 'c:free'
      calls of two functions for 10 seconds
  uscope count -i 1 -p PID 'c:malloc' --by comm
      calls per thread name, printed every second
  uscope count -p PID 'c:malloc' --by arg1
      calls per size asked for (bpftrace's @[arg0] = count())
  uscope count -c ./app 'r:c:read (retval < 0)' --by retval,ustack
      failed read()s per error and user stack
  uscope count --json -p PID './app:orchard::*'
      C++ functions by their demangled names, as JSON Lines

Reference: docs/count.md)";

void add_count_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<CountOptions>();
  auto* cmd = app.add_subcommand("count", "Count calls of every function matching globs");
  cmd->add_option("pattern", opts->patterns,
                  "'[target:]glob' over function names, or 'u:target:provider:glob' for USDT")
      ->required();
  add_session_options(cmd, opts->session, true, false);
  add_aggregate_options(cmd, opts->aggregate);
  cmd->add_flag("--no-move", opts->no_move, "Always probe each function's first instruction");
  cmd->footer(kOverheadHelp);
  add_examples(cmd, kCountExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_count(*opts); }; });
}

}  // namespace uscope::cli
