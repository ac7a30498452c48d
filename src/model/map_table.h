#pragma once
// A keyed aggregation as the table commands show it (count --by, hist, latency --by): one row per
// key with its count, sum or buckets, and every loss by name. Filled by the aggregation job
// from the kernel's map, rendered by sink/map_output.h.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bpf/trace.h"

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

}  // namespace uscope
