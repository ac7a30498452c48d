#include "cli/aggregate_run.h"

#include <fmt/core.h>

#include "cli/command.h"
#include "sink/map_output.h"

namespace uscope::cli {

void add_aggregate_options(CLI::App* cmd, MapOptions& o, bool with_by) {
  if (with_by)
    cmd->add_option("--by", o.by,
                    "Keys to aggregate by, comma-separated: comm, pid, tid, argN, retval, "
                    "str(EXPR[,len]), ustack, or any probe expression");
  cmd->add_option("--top", o.top, "Show the N largest keys (default 10)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_flag("--all", o.all, "Show every key");
  cmd->add_option("--max-keys", o.max_keys,
                  fmt::format("Distinct keys the kernel keeps (default {}); hits of new keys "
                              "beyond it are counted as not_counted_map_full",
                              TraceProgram::kDefaultAggregateKeys))
      ->check(CLI::Range(1, 1 << 24));
}

int run_aggregation(Session& session, const SessionOptions& so, const MapOptions& ao,
                    const AggregationPlan& plan, const AggregateView& view, CommandOutput& output,
                    const MapPrinter& print) {
  bool ustack = false;
  for (const auto& k : view.keys) ustack |= k.kind == AggregateKey::Kind::UserStack;
  if (ustack && session.watch_pid() <= 0)
    return report_error("--by ustack needs -p PID or -c CMD: a stack is symbolized in its process",
                        kExitUsage);
  if (so.verbose) print_sites(plan.sites, plan.skipped);
  if (plan.sites.empty()) return report_error("no probeable site among the matches");
  TableOutput out(output);
  AggregateJob job(session, so, ao, plan, view, [&](MapTable t) {
    out.append([&](std::FILE* f) {
      if (print)
        print(std::move(t), out.format(), f);
      else
        print_map(std::move(t), out.format(), f);
    });
  });
  return run_job(session, job, out, so.verbose);
}

}  // namespace uscope::cli
