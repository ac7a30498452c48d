#pragma once
// What count --by, hist and latency --by share once their aggregation is planned: load and attach
// the recipes, read the keyed map at each -i and at the end (deltas per interval), turn rows into
// the table the sink prints (keys decoded, user stacks symbolized), and account for every loss.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/session.h"
#include "plan/keyed_plan.h"
#include "sink/map_output.h"

namespace uscope::cli {

struct MapOptions {
  std::string by;         // --by
  size_t top = 10;        // --top
  bool all = false;       // --all
  uint32_t max_keys = 0;  // --max-keys (0: TraceProgram's default)
};

// --by (unless `with_by` is false), --top, --all, --max-keys.
void add_aggregate_options(CLI::App* cmd, MapOptions& o, bool with_by = true);

// How the rows are shown.
struct AggregateView {
  std::string kind;  // "count", "hist", "latency"
  std::vector<AggregateKey> keys;
  MapScale scale;
  std::string unit;
  std::string verb;  // for the stderr line: "counting", "histogramming", "timing"
};

// Tables go to `output` in its format.
int run_aggregation(Session& session, const SessionOptions& so, const MapOptions& ao,
                    const AggregationPlan& plan, const AggregateView& view, CommandOutput& output);

}  // namespace uscope::cli
