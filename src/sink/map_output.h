#pragma once
// Keyed aggregations printed as bpftrace prints its maps: counts sorted by value (largest last),
// histograms with `[lo, hi)  N |@@@@   |` bars, the top N keys unless all are asked for; or JSON
// Lines, one object per key. The model is filled by the CLI from collect/aggregates.h.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bpf/trace.h"
#include "sink/output_format.h"

namespace uscope {

struct MapKeyPart {
  bool is_string = false;
  std::string text;  // strings
  int64_t number = 0;
  bool truncated = false;   // the string goes on past `text`
  bool unreadable = false;  // BPF could not read the string
};

struct MapRow {
  std::vector<MapKeyPart> key;  // one per key column, ustack excluded
  // ustack key: frames innermost first, already symbolized; `no_stack`: the capture failed.
  std::vector<std::string> stack;
  bool no_stack = false;
  uint64_t count = 0;
  int64_t sum = 0;
  std::vector<uint64_t> buckets;  // hist/latency: TRACE_AGG_BUCKETS
};

struct MapScale {
  uint32_t mode = TRACE_AGG_COUNT;  // enum uscope_agg_mode
  int64_t min = 0, max = 0, step = 0;
  uint32_t linear_buckets = 0;
};

struct MapTable {
  std::string kind;                    // "count", "hist", "latency": JSON's `kind`
  std::vector<std::string> key_names;  // "comm", "arg1", "ustack", ...
  MapScale scale;
  std::string unit;  // "ns" for latency, "" otherwise
  std::vector<MapRow> rows;
  size_t top = 0;                    // keys shown, the largest; 0: every key
  std::optional<uint64_t> interval;  // -i: which interval (1, 2, ...), the rows are deltas
  uint64_t not_counted = 0;          // hits lost to a full map (TC_AGG_FULL)
  uint64_t max_keys = 0;             // the map's size, for the message about it
  // Other losses, by their JSON name ("stack_failed", "read_errors", ...): always in the JSON
  // summary line, in the text when not zero.
  std::vector<std::pair<std::string, uint64_t>> losses;
};

// bpftrace's bucket labels: "(..., 0)", "[0]", "[1]", "[2, 4)", "[1K, 2K)"; linear "[0, 10)",
// "[100, ...)".
std::string bucket_label(const MapScale& scale, size_t bucket);
// The bucket's bounds: [low, high); nullopt for an open end.
std::pair<std::optional<int64_t>, std::optional<int64_t>> bucket_bounds(const MapScale& scale,
                                                                        size_t bucket);

// Aligned text, or JSON Lines for OutputFormat::Json.
void print_map(MapTable table, OutputFormat format, std::FILE* out = stdout);

}  // namespace uscope
