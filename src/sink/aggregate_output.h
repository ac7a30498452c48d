#pragma once
// Rendering of in-kernel aggregations: call counts (`count`) and log2 latency histograms
// (`latency`), as aligned text or JSON Lines.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "model/function_tables.h"
#include "sink/output_format.h"

namespace uscope {

// Rows with a zero count are left out; sorted by count, largest last (as funccount does, so the
// top stays visible at the bottom of a terminal).
void print_counts(std::vector<CountRow> rows, OutputFormat format, std::FILE* out = stdout);

// Approximate percentile from log2 buckets: the upper bound of the bucket holding it.
uint64_t histogram_percentile(std::span<const uint64_t> buckets, double p);
void print_latency(const LatencyRow& row, OutputFormat format, std::FILE* out = stdout);

}  // namespace uscope
