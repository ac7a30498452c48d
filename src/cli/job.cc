#include "cli/job.h"

#include <fmt/core.h>

#include "cli/command.h"
#include "sink/overhead_output.h"

namespace uscope::cli {

std::vector<OverheadSite> costed_sites(std::span<const PlannedSite> sites,
                                       const std::function<uint64_t(uint64_t cookie)>& hits) {
  std::vector<OverheadSite> costed;
  for (const auto& s : sites)
    costed.push_back(
        overhead_site(s.attach, s.label, s.placement.cost.cost, hits(s.attach.cookie)));
  return costed;
}

EventLoop::Callbacks table_job_callbacks(std::function<void()> emit_table, OverheadMeter& meter,
                                         const std::optional<Error>& read_error) {
  EventLoop::Callbacks cb;
  cb.interval = std::move(emit_table);
  cb.done = [&meter, &read_error] {
    meter.sample();
    return read_error.has_value();
  };
  return cb;
}

std::optional<Overhead> trace_program_overhead(TraceProgram& program,
                                               std::span<const PlannedSite> sites,
                                               OverheadMeter& meter, const Session& session) {
  auto counters = program.counters();
  if (!counters) return std::nullopt;
  auto costed = costed_sites(sites, [&](uint64_t c) { return (*counters)[c].hits; });
  return meter.finish(std::move(costed), program.program_fds(),
                      measured_hit_costs().trace_program_ns, session.reaped_target_cpu_time());
}

void TableOutput::append(const std::function<void(std::FILE*)>& print) {
  if (!append_printed(out_, print)) ++not_written_;
}

int run_job(Session& session, Job& job, TableOutput& out, bool verbose) {
  if (auto r = job.start(); !r) return report_error(r.error().message);
  EventLoop::Callbacks cb = job.callbacks();
  cb.output = &out.out_;
  StopReason why = session.run(cb);
  auto stopped = job.stop(why);
  finish_output(out.out_, out.not_written_);
  if (!stopped) return report_error(stopped.error().message);
  if (!out.output_.json()) fmt::print(stderr, "uscope: {}\n", describe(why));
  if (auto cost = job.overhead()) print_overhead(*cost, out.format(), verbose, stderr);
  return kExitOk;
}

}  // namespace uscope::cli
