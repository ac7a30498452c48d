// `uscope latency`: log2 histograms of how long functions take, per function, measured in the
// kernel between an entry probe and a return probe matched by (thread, entry stack pointer), so
// recursion and tail calls pair correctly; unmatched entries are reported, not hidden.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/session.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "sink/aggregate_output.h"
#include "sink/overhead_output.h"

namespace uscope::cli {

namespace {

struct LatencyOptions {
  SessionOptions session;
  std::vector<std::string> patterns;
  bool no_move = false;
};

int run_latency(const LatencyOptions& o) {
  auto patterns = parse_patterns(o.patterns);
  if (!patterns) return report_error(patterns.error().message, kExitUsage);
  for (auto& p : *patterns) {
    if (p.kind == ProbeKind::Usdt)
      return report_error("latency measures functions; '" + p.text + "' is a USDT probe",
                          kExitUsage);
    p.kind = ProbeKind::Return;  // return probes need what entry+return tracing needs
  }
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto matched = match_patterns(cache, *patterns);
  if (!matched) return report_error(matched.error().message);

  // Per function: recipe 2k is the entry half, 2k+1 the return half.
  std::vector<uscope_recipe> recipes;
  std::vector<AttachSite> sites;
  std::vector<PlannedSite> shown;
  std::vector<SiteCost> cost_of;  // by site
  for (uint32_t k = 0; k < matched->size(); ++k) {
    const auto& m = (*matched)[k];
    // Entry and return halves on one site: the kernel runs both on one trap.
    auto place = place_site(m, ProbeKind::Return, {}, false, !o.no_move);
    const std::string& path = m.object->ref.open_path;
    recipes.push_back(latency_entry_recipe(k, place.sp_delta));
    const std::string& display = m.object->ref.display_path;
    sites.push_back({path, place.offset, 0, recipes.size() - 1, false, display});
    recipes.push_back(latency_return_recipe(k));
    sites.push_back({path, place.offset, 0, recipes.size() - 1, true, display});
    cost_of.insert(cost_of.end(), 2, place.cost.cost);
    if (o.session.verbose) {
      shown.push_back({sites[sites.size() - 2], k, m.object->ref.display_path, m.label, place});
      shown.push_back({sites.back(), k, m.object->ref.display_path, m.label, place});
    }
  }
  if (o.session.verbose) print_sites(shown);
  OverheadMeter meter((*session)->watch_pid());
  auto program = TraceProgram::load(recipes, (*session)->watch_pid(), !o.session.no_multi, 0,
                                    (*session)->launched());
  if (!program) return report_error(program.error().message);
  if (auto r = program->attach(sites, true); !r)
    return report_error((*session)->explain_attach_failure(r.error(), sites).message);
  // A function with either half refused cannot be timed: leave it out and say so.
  std::vector<bool> refused(matched->size());
  for (const auto& r : program->refused()) {
    refused[r.site.cookie / 2] = true;
    fmt::print(stderr, "uscope: {} not timed: {}\n", (*matched)[r.site.cookie / 2].label,
               r.error.message);
  }
  fmt::print(stderr, "uscope: timing {} functions; Ctrl-C to stop\n",
             std::count(refused.begin(), refused.end(), false));

  if (auto r = (*session)->start(); !r) return report_error(r.error().message);
  meter.start();

  // A counter or histogram that cannot be read is an error, never zeros.
  std::optional<Error> read_error;
  OutputBuffer out(STDOUT_FILENO);
  uint64_t tables_not_written = 0;
  auto print = [&] {
    auto counters = program->counters();
    if (!counters) {
      read_error = counters.error();
      return;
    }
    std::vector<LatencyRow> rows;
    for (uint32_t k = 0; k < matched->size(); ++k) {
      const auto& m = (*matched)[k];
      const auto& entry = (*counters)[2 * k];
      const auto& ret = (*counters)[2 * k + 1];
      if (refused[k] || (entry.hits == 0 && ret.hits == 0)) continue;
      auto hist = program->histogram(2 * k + 1);
      if (!hist) {
        read_error = hist.error();
        return;
      }
      LatencyRow row{m.label,          m.object->ref.display_path,
                     std::move(*hist), entry.hits,
                     ret.matched,      ret.no_entry};
      rows.push_back(std::move(row));
    }
    if (!append_printed(out, [&](std::FILE* f) {
          for (const auto& row : rows) print_latency(row, o.session.json, f);
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
  if (!o.session.json) fmt::print(stderr, "uscope: {}\n", describe(why));
  if (auto counters = program->counters()) {
    std::vector<OverheadSite> costed;
    for (size_t i = 0; i < sites.size(); ++i)
      costed.push_back(overhead_site(sites[i], (*matched)[i / 2].label, cost_of[i],
                                     (*counters)[sites[i].cookie].hits));
    print_overhead(
        meter.finish(std::move(costed), program->program_fds(),
                     measured_hit_costs().trace_program_ns, (*session)->reaped_target_cpu_time()),
        o.session.json, o.session.verbose, stderr);
  }
  return kExitOk;
}

}  // namespace

void add_latency_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<LatencyOptions>();
  auto* cmd = app.add_subcommand("latency", "Log2 latency histograms of functions matching globs");
  cmd->add_option("pattern", opts->patterns, "'[target:]glob' over function names")->required();
  add_session_options(cmd, opts->session, true, false);
  cmd->add_flag("--no-move", opts->no_move, "Always probe each function's first instruction");
  cmd->footer(kOverheadHelp);
  cmd->callback([&run, opts] { run = [opts] { return run_latency(*opts); }; });
}

}  // namespace uscope::cli
