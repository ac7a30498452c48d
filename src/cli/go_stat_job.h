#pragma once
// A Go program's runtime as `uscope stat` and the agent read it: entry uprobes on the runtime
// (plan/go_stat_plan.h) counting goroutines created and exited and GC cycles in the kernel, the
// world's stops and starts as timed events, and the live goroutines from a census of the
// target's memory, each interval. `stat` prints the intervals; the agent exports the totals.
#include <memory>
#include <optional>

#include "cli/session.h"
#include "collect/hit_counts.h"
#include "collect/trace_program.h"
#include "model/go_stat.h"
#include "model/metrics.h"
#include "plan/go_stat_plan.h"

namespace uscope::cli {

class GoStatJob {
 public:
  // Plans for the session's target and attaches (counters and the stop/start program); the
  // events are read by the session's loop (events() with read_events_in_loop) or the agent.
  static Result<std::unique_ptr<GoStatJob>> attach(Session& session, ObjectCache& cache,
                                                   bool move_sites, bool use_multi);
  GoStatJob(const GoStatJob&) = delete;
  GoStatJob& operator=(const GoStatJob&) = delete;

  const GoStatPlan& plan() const { return plan_; }
  TraceProgram& events() { return *program_; }
  const GoRuntimeStats& stats() const { return stats_; }

  // The target runs (the session started it): the first interval begins now.
  void begin() { interval_start_ = std::chrono::steady_clock::now(); }
  // Ends an interval now: the kernel's counts read and the census taken (none once the target
  // is gone); nullopt when the counts cannot be read (read_error() says why).
  std::optional<GoStatInterval> end_interval(bool target_gone);
  const std::optional<Error>& read_error() const { return read_error_; }
  // Takes the probes out; the counts are final and the events left are read by the caller.
  void detach();
  // After detach and the last read: every loss by cause; an error when the counters are gone.
  Result<GoStatLosses> losses() const;

  size_t links() const { return counts_->link_count() + program_->link_count(); }
  std::vector<int> program_fds() const;
  // The agent's view: the totals since the probes went in, each point with `resource` first.
  void snapshot(MetricsSnapshot& out, const MetricAttributes& resource) const;

 private:
  GoStatJob(Session& session, ObjectCache& cache, GoStatPlan plan)
      : session_(session), cache_(cache), plan_(std::move(plan)) {}
  std::optional<GoroutineCount> census(bool target_gone);
  std::optional<GoRuntimeCounts> totals();

  Session& session_;
  ObjectCache& cache_;
  GoStatPlan plan_;
  std::optional<HitCounts> counts_;
  std::optional<TraceProgram> program_;
  GoRuntimeStats stats_;
  uint64_t read_events_ = 0, malformed_ = 0, census_failures_ = 0;
  std::optional<uint64_t> bias_;
  std::optional<Error> read_error_;
  std::chrono::steady_clock::time_point interval_start_ = std::chrono::steady_clock::now();
};

}  // namespace uscope::cli
