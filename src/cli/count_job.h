#pragma once
// The job of count without --by: a counter per site in the kernel (hit_counter.bpf.c), attached
// through uprobe_multi links in one go, read as one CountRow per site at each -i and at the end.
#include <functional>
#include <optional>
#include <vector>

#include "cli/job.h"
#include "collect/hit_counts.h"
#include "collect/overhead_meter.h"
#include "model/function_tables.h"
#include "plan/aggregate_plan.h"

namespace uscope::cli {

class CountJob : public Job {
 public:
  CountJob(Session& session, const SessionOptions& so, const CountPlan& plan,
           std::function<void(std::vector<CountRow>)> table);
  Result<void> start() override;
  EventLoop::Callbacks callbacks() override;
  Result<void> stop(StopReason why) override;
  std::optional<Overhead> overhead() override;

 private:
  void emit_table();

  Session& session_;
  const SessionOptions& so_;
  const CountPlan& plan_;
  std::function<void(std::vector<CountRow>)> table_;
  std::vector<AttachSite> sites_;
  OverheadMeter meter_;
  std::optional<HitCounts> counts_;
  // A counter map that cannot be read is an error, never a row of zeros.
  std::optional<Error> read_error_;
};

}  // namespace uscope::cli
