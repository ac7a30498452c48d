#pragma once
// Reading the keyed aggregations of trace.bpf.c (count --by, hist, latency --by): the rows of the
// `aggregates` map, the user stacks of `ustack` keys, and the per-interval deltas of -i.
#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "bpf/trace.h"
#include "plan/recipe.h"
#include "plan/recipe_interpreter.h"
#include "util/result.h"

namespace uscope {

// One row as the kernel holds it: cumulative since the program was loaded.
struct AggregateRow {
  uint32_t slot = 0;
  int32_t stack_id = -1;
  uint64_t stack = 0;  // the user stack's key in the stack table (see uscope_agg_key)
  uint32_t epoch = 0;  // uscope_agg_key.epoch
  std::array<uint8_t, TRACE_AGG_KEY_BYTES> key{};
  uint64_t count = 0;
  uint64_t sum = 0;               // two's complement sum of the values
  std::vector<uint64_t> buckets;  // TRACE_AGG_BUCKETS
};

// Every row of the map. Rows are never deleted while the program runs (but by
// take_aggregate_rows), so iterating while BPF inserts misses no row that existed when the read
// started.
Result<std::vector<AggregateRow>> read_aggregate_map(int map_fd);
// The rows counted under `epoch`, deleted once read: for a reader whose keys do not repeat
// enough to keep every row (the agent's HTTP rows, by raw path). It must have moved the program
// to another epoch (TraceProgram::set_epoch) a while before: a run that looked the epoch up
// before the move and adds to a row between this read and its delete loses that add, so the
// wait is what keeps that from happening (runs take microseconds; the agent waits half a second).
Result<std::vector<AggregateRow>> take_aggregate_rows(int map_fd, uint32_t epoch);
// The user stack of a row's `ustack` key, innermost first; in a prologue with the caller the
// frame-pointer walk skips put back in second place (as EventDecoder does for events).
Result<std::vector<uint64_t>> read_stack_trace(int stacks_fd, const AggregateRow& row);

// The key fields of a row, decoded by the fields its recipe emitted (strings that BPF could not
// read come back deferred with no address).
Result<std::vector<PayloadValue>> decode_key(std::span<const OutputField> fields,
                                             const AggregateRow& row);

// -i: the kernel's rows only grow; each interval shows how much they grew since the last one,
// computed here (deleting rows under BPF would lose the updates made between read and delete).
class AggregateDeltas {
 public:
  // Rows that grew since the previous call, holding the growth; the first call returns every
  // row with a count.
  std::vector<AggregateRow> advance(const std::vector<AggregateRow>& cumulative);

 private:
  using Id = std::tuple<uint32_t, int32_t, uint64_t, std::array<uint8_t, TRACE_AGG_KEY_BYTES>>;
  std::map<Id, AggregateRow> last_;
};

}  // namespace uscope
