#include "cli/go_stat_job.h"

#include "collect/go_goroutines.h"
#include "discover/process.h"

namespace uscope::cli {

Result<std::unique_ptr<GoStatJob>> GoStatJob::attach(Session& session, ObjectCache& cache,
                                                     bool move_sites, bool use_multi) {
  auto plan = plan_go_stat(cache, {.target = "", .move_sites = move_sites});
  if (!plan) return tl::unexpected(plan.error());
  std::unique_ptr<GoStatJob> job(new GoStatJob(session, cache, std::move(*plan)));
  const GoStatPlan& p = job->plan_;
  std::vector<AttachSite> counted;
  for (const auto& s : p.counts.sites) counted.push_back(s.attach);
  auto counts = HitCounts::attach(counted, session.target_filter(), use_multi, false);
  if (!counts) return tl::unexpected(session.explain_attach_failure(counts.error(), counted));
  job->counts_.emplace(std::move(*counts));
  auto program = TraceProgram::load(p.stw.recipes, session.target_filter(), use_multi);
  if (!program) return tl::unexpected(program.error());
  std::vector<AttachSite> stw_sites;
  for (const auto& s : p.stw.sites) stw_sites.push_back(s.attach);
  if (auto r = program->attach(stw_sites); !r)
    return tl::unexpected(session.explain_attach_failure(r.error(), stw_sites));
  job->program_.emplace(std::move(*program));
  GoStatJob* self = job.get();
  auto on_event = [self](const uscope_event& ev, std::span<const uint8_t>) {
    ++self->read_events_;
    if (ev.probe_id >= self->plan_.stw_event.size()) {
      ++self->malformed_;
      return;
    }
    if (self->plan_.stw_event[ev.probe_id] == GoRuntimeEvent::StopTheWorld)
      self->stats_.world_stopped(ev.tgid, ev.ts);
    else
      self->stats_.world_started(ev.tgid, ev.ts);
  };
  if (auto r = job->program_->open_events(on_event); !r) return tl::unexpected(r.error());
  return job;
}

// The live goroutines, read once the target runs its own binary (-c: after the exec).
std::optional<GoroutineCount> GoStatJob::census(bool target_gone) {
  if (!plan_.goroutines || target_gone) return std::nullopt;
  const pid_t pid = session_.watch_pid();
  if (!bias_) {
    auto obj = cache_.get("");
    auto process = Process::open(pid);
    if (obj && process && process->main_object())
      bias_ = load_bias(*process->main_object(), (*obj)->elf);
  }
  if (bias_)
    if (auto n = count_goroutines(pid, *plan_.goroutines, *bias_)) return *n;
  // The target ending under the read, before the session sees it gone: no census, no loss.
  if (process_exiting(pid)) return std::nullopt;
  ++census_failures_;
  return std::nullopt;
}

std::optional<GoRuntimeCounts> GoStatJob::totals() {
  auto values = counts_->read();
  if (!values) {
    read_error_ = values.error();
    return std::nullopt;
  }
  GoRuntimeCounts t;
  for (size_t i = 0; i < plan_.counts.sites.size(); ++i) {
    uint64_t n = (*values)[plan_.counts.sites[i].attach.cookie];
    switch (plan_.counted_event[i]) {
      case GoRuntimeEvent::Created:
        t.created += n;
        break;
      case GoRuntimeEvent::Exited:
        t.exited += n;
        break;
      case GoRuntimeEvent::GcCycle:
        t.gc_cycles += n;
        break;
      default:
        break;
    }
  }
  return t;
}

std::optional<GoStatInterval> GoStatJob::end_interval(bool target_gone) {
  auto t = totals();
  if (!t) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - interval_start_).count();
  interval_start_ = now;
  return stats_.end_interval(*t, census(target_gone), seconds);
}

void GoStatJob::detach() {
  counts_->detach();
  program_->detach();
}

Result<GoStatLosses> GoStatJob::losses() const {
  auto counters = program_->counters();
  if (!counters) return fail("cannot read the event counters: {}", counters.error().message);
  GoStatLosses l;
  uint64_t emitted = 0;
  for (const auto& c : *counters) {
    l.ring_lost += c.lost;
    emitted += c.emitted;
  }
  l.malformed = malformed_ + program_->short_records();
  if (emitted > read_events_) l.unread = emitted - read_events_;
  l.unmatched_starts = stats_.unmatched_starts();
  l.open_pauses = stats_.open_pauses();
  l.census_failures = census_failures_;
  return l;
}

std::vector<int> GoStatJob::program_fds() const {
  std::vector<int> fds = counts_->program_fds();
  for (int fd : program_->program_fds()) fds.push_back(fd);
  return fds;
}

void GoStatJob::snapshot(MetricsSnapshot& out, const MetricAttributes& resource) const {
  const GoRuntimeCounts& t = stats_.totals();
  if (const auto& live = stats_.last_live())
    out.add_value("go.goroutine.count", MetricKind::Gauge, "{goroutine}",
                  "Count of live goroutines (runtime.NumGoroutine).",
                  static_cast<double>(live->user), resource);
  out.add_value("uscope.go.goroutine.created", MetricKind::Counter, "{goroutine}",
                "Goroutines created since uscope attached.", static_cast<double>(t.created),
                resource);
  out.add_value("uscope.go.gc.cycles", MetricKind::Counter, "{cycle}",
                "GC cycles completed since uscope attached.", static_cast<double>(t.gc_cycles),
                resource);
  // Stop-the-world pauses over the advised duration bounds' finer end: a pause is micro- to
  // milliseconds, so the bounds run from 10 us to 1 s.
  static const std::vector<double> kPauseBounds = {1e-5,   2.5e-5, 5e-5, 1e-4,   2.5e-4, 5e-4, 1e-3,
                                                   2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2,   0.1,  1};
  MetricPoint pauses;
  pauses.attributes = resource;
  pauses.bounds = kPauseBounds;
  pauses.counts = stats_.pauses().counts_within(kPauseBounds);
  pauses.sum = static_cast<double>(stats_.pauses().sum()) / 1e9;
  out.metric("uscope.go.stw.duration", MetricKind::Histogram, "s",
             "Go stop-the-world pauses (stopTheWorldWithSema to startTheWorldWithSema).")
      .points.push_back(std::move(pauses));
}

}  // namespace uscope::cli
