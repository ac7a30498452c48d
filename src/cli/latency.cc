// `uscope latency`: log2 histograms of how long functions take, per function, measured in the
// kernel between an entry probe and a return probe matched by (thread, entry stack pointer), so
// recursion and tail calls pair correctly; unmatched entries are reported, not hidden.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "cli/aggregate_run.h"
#include "cli/command.h"
#include "cli/session.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
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
  std::vector<AttachSite> sites;
  for (const auto& s : plan->sites) sites.push_back(s.attach);
  OverheadMeter meter((*session)->watch_pid(), o.session.verbose);
  auto program =
      TraceProgram::load(plan->recipes, (*session)->target_filter(), !o.session.no_multi);
  if (!program) return report_error(program.error().message);
  if (auto r = program->attach(sites, true); !r)
    return report_error((*session)->explain_attach_failure(r.error(), sites).message);
  // A function with either half refused cannot be timed: leave it out and say so.
  std::vector<bool> refused(plan->functions.size());
  for (const auto& r : program->refused()) {
    const PlannedSite& s = plan->sites[r.site.cookie];
    refused[s.probe] = true;
    fmt::print(stderr, "uscope: {} not timed: {}\n", s.label, r.error.message);
  }
  fmt::print(stderr, "uscope: timing {} functions; Ctrl-C to stop\n",
             std::count(refused.begin(), refused.end(), false));

  if (auto r = (*session)->start(); !r) return report_error(r.error().message);
  meter.start();

  // A counter or histogram that cannot be read is an error, never zeros.
  std::optional<Error> read_error;
  OutputBuffer out(output->fd());
  uint64_t tables_not_written = 0;
  auto print = [&] {
    auto counters = program->counters();
    if (!counters) {
      read_error = counters.error();
      return;
    }
    std::vector<LatencyRow> rows;
    for (uint32_t k = 0; k < plan->functions.size(); ++k) {
      const auto& f = plan->functions[k];
      const auto& entry = (*counters)[f.entry_cookie];
      // Go functions return through several RET sites: their counters and histograms add up.
      uint64_t ret_hits = 0, matched = 0, no_entry = 0;
      std::vector<uint64_t> hist;
      for (uint64_t cookie : f.return_cookies) {
        const auto& ret = (*counters)[cookie];
        ret_hits += ret.hits;
        matched += ret.matched;
        no_entry += ret.no_entry;
        auto h = program->histogram(static_cast<uint32_t>(cookie));
        if (!h) {
          read_error = h.error();
          return;
        }
        if (hist.size() < h->size()) hist.resize(h->size());
        for (size_t i = 0; i < h->size(); ++i) hist[i] += (*h)[i];
      }
      if (refused[k] || (entry.hits == 0 && ret_hits == 0)) continue;
      rows.push_back({f.label, f.object, std::move(hist), entry.hits, matched, no_entry,
                      entry.entry_repeated, entry.entry_save_failed});
    }
    if (!append_printed(out, [&](std::FILE* f) {
          for (const auto& row : rows) print_latency(row, output->format, f);
        }))
      ++tables_not_written;
  };
  EventLoop::Callbacks cb;
  cb.interval = print;
  cb.output = &out;
  cb.done = [&] {
    meter.sample();
    return read_error.has_value();
  };
  StopReason why = (*session)->run(cb);
  program->detach();
  if (!read_error) print();
  finish_output(out, tables_not_written);
  if (read_error) return report_error("cannot read the latency counters: " + read_error->message);
  if (!output->json()) fmt::print(stderr, "uscope: {}\n", describe(why));
  if (auto counters = program->counters()) {
    std::vector<OverheadSite> costed;
    for (const auto& s : plan->sites)
      costed.push_back(overhead_site(s.attach, s.label, s.placement.cost.cost,
                                     (*counters)[s.attach.cookie].hits));
    print_overhead(
        meter.finish(std::move(costed), program->program_fds(),
                     measured_hit_costs().trace_program_ns, (*session)->reaped_target_cpu_time()),
        output->format, o.session.verbose, stderr);
  }
  return kExitOk;
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
