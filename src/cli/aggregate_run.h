#pragma once
// count --by, hist and latency --by once their aggregation is planned: the aggregation job
// (aggregate_job.h) run on the session, its tables rendered in the output's format.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>

#include "cli/aggregate_job.h"
#include "cli/session.h"

namespace uscope::cli {

// --by (unless `with_by` is false), --top, --all, --max-keys.
void add_aggregate_options(CLI::App* cmd, MapOptions& o, bool with_by = true);

// How a table is written (sink/map_output.h's print_map by default).
using MapPrinter = std::function<void(MapTable, OutputFormat, std::FILE*)>;

// Tables go to `output` in its format.
int run_aggregation(Session& session, const SessionOptions& so, const MapOptions& ao,
                    const AggregationPlan& plan, const AggregateView& view, CommandOutput& output,
                    const MapPrinter& print = {});

}  // namespace uscope::cli
