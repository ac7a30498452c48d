#pragma once
// Per-function tables of count and latency without --by: calls per site, and a log2 histogram of
// durations per function with what could not be paired. Filled by their jobs from the kernel's
// counters, rendered by sink/aggregate_output.h.
#include <cstdint>
#include <string>
#include <vector>

namespace uscope {

struct CountRow {
  std::string function;
  std::string object;
  uint64_t count = 0;
};

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

}  // namespace uscope
