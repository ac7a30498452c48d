#pragma once
// The job of count --by, hist and latency --by once their aggregation is planned: loads and
// attaches the recipes, reads the keyed map at each -i and at the end (deltas per interval), turns
// rows into the MapTable model (keys decoded, user stacks symbolized while their process runs)
// with every loss counted, and estimates what the probes cost.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attach/unwind_maps.h"
#include "cli/exit_symbolizer.h"
#include "cli/job.h"
#include "cli/session.h"
#include "collect/aggregates.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "collect/unwind_follower.h"
#include "model/map_table.h"
#include "model/overhead.h"
#include "plan/keyed_plan.h"

namespace uscope::cli {

struct MapOptions {
  std::string by;         // --by
  size_t top = 10;        // --top
  bool all = false;       // --all
  uint32_t max_keys = 0;  // --max-keys (0: TraceProgram's default)
};

// How the rows are shown.
struct AggregateView {
  std::string kind;  // "count", "hist", "latency"
  std::vector<AggregateKey> keys;
  MapScale scale;
  std::string unit;
  std::string verb;  // for the stderr line: "counting", "histogramming", "timing"
};

class AggregateJob : public Job {
 public:
  // `table`: the sink, handed each interval's table and the last one.
  AggregateJob(Session& session, const SessionOptions& so, const MapOptions& ao,
               const AggregationPlan& plan, const AggregateView& view,
               std::function<void(MapTable)> table);
  Result<void> start() override;
  EventLoop::Callbacks callbacks() override;
  Result<void> stop(StopReason why) override;
  std::optional<Overhead> overhead() override;

 private:
  // Sums of the counters that say what the table does not hold.
  struct Losses {
    uint64_t agg_full = 0, stack_failed = 0, stack_table_full = 0, read_errors = 0, filtered = 0,
             no_entry = 0, malformed = 0, entry_save_failed = 0;
    void add(const RecipeCounters& c);
  };
  // The rows now (deltas with -i) as the model, to the sink.
  void emit_table();
  // A stack is symbolized when first seen, while its process still runs.
  const std::vector<std::string>* symbolize(const AggregateRow& row);
  bool symbolize_new();

  Session& session_;
  const SessionOptions& so_;
  const MapOptions& ao_;
  const AggregationPlan& plan_;
  const AggregateView& view_;
  std::function<void(MapTable)> table_;
  bool ustack_ = false;
  std::vector<AttachSite> sites_;
  OverheadMeter meter_;
  std::unique_ptr<UnwindMaps> unwind_;
  std::optional<UnwindFollower> follower_;
  ExitSymbolizer symbols_;
  std::optional<TraceProgram> program_;
  MapTable proto_;
  std::optional<Error> read_error_;
  AggregateDeltas deltas_;
  Losses last_losses_;
  uint64_t interval_ = 0;
  // By (stack id, stack hash), which name one stack.
  std::map<std::pair<int32_t, uint64_t>, std::vector<std::string>> stacks_;
};

}  // namespace uscope::cli
