#pragma once
// Rendering of in-kernel aggregations: call counts (`count`) and log2 latency histograms
// (`latency`), as aligned text or JSON Lines.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "sink/output_format.h"

namespace uscope {

struct CountRow {
  std::string function;
  std::string object;
  uint64_t count = 0;
};

// Rows with a zero count are left out; sorted by count, largest last (as funccount does, so the
// top stays visible at the bottom of a terminal).
void print_counts(std::vector<CountRow> rows, OutputFormat format, std::FILE* out = stdout);

struct LatencyRow {
  std::string function;
  std::string object;
  std::vector<uint64_t> buckets;  // bucket b: [2^b, 2^(b+1)) ns
  uint64_t entries = 0;           // entry probe hits
  uint64_t matched = 0;           // returns matched with their entry
  uint64_t returns_without_entry = 0;
  // Go: entry hits that were not calls (the first instruction re-run after the runtime grew the
  // goroutine's stack), and entries the BPF side could not record (stack bounds unreadable).
  uint64_t entries_repeated = 0;
  uint64_t entries_not_recorded = 0;
};

// Approximate percentile from log2 buckets: the upper bound of the bucket holding it.
uint64_t histogram_percentile(std::span<const uint64_t> buckets, double p);
void print_latency(const LatencyRow& row, OutputFormat format, std::FILE* out = stdout);

}  // namespace uscope
