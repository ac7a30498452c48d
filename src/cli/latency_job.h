#pragma once
// The job of latency without --by: an entry and a return half per function on one site, the
// return's log2 histogram and counters summed over its RET sites (Go), read as one LatencyRow per
// function at each -i and at the end.
#include <functional>
#include <optional>
#include <vector>

#include "cli/job.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "model/function_tables.h"
#include "plan/aggregate_plan.h"

namespace uscope::cli {

class LatencyJob : public Job {
 public:
  LatencyJob(Session& session, const SessionOptions& so, const LatencyPlan& plan,
             std::function<void(std::vector<LatencyRow>)> table);
  Result<void> start() override;
  EventLoop::Callbacks callbacks() override;
  Result<void> stop(StopReason why) override;
  std::optional<Overhead> overhead() override;

 private:
  void emit_table();

  Session& session_;
  const SessionOptions& so_;
  const LatencyPlan& plan_;
  std::function<void(std::vector<LatencyRow>)> table_;
  std::vector<AttachSite> sites_;
  OverheadMeter meter_;
  std::optional<TraceProgram> program_;
  std::vector<bool> refused_;  // per function: a half refused, so it cannot be timed
  // A counter or histogram that cannot be read is an error, never zeros.
  std::optional<Error> read_error_;
};

}  // namespace uscope::cli
