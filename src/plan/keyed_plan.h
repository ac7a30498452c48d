#pragma once
// In-kernel aggregations (count --by, hist, latency --by) compiled into recipes: the key
// expressions become emitted fields that trace.bpf.c turns into the key of an `aggregates` row
// (TRACE_F_AGGREGATE), the value of a histogram becomes TOP_AGG_VALUE.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/trace.h"
#include "plan/planner.h"
#include "plan/probe_spec.h"
#include "plan/recipe.h"
#include "util/result.h"

namespace uscope {

// One `--by` key.
struct AggregateKey {
  enum class Kind { Number, String, UserStack };
  std::string name;  // as written: "comm", "arg1", "str(arg2, 16)", "ustack"
  Kind kind = Kind::Number;
  Expr expr;  // Number, String
};

// Keys separated by commas ("comm,arg1,str(arg2, 16)"; a comma inside parentheses belongs to
// its key). comm, pid, tid, cpu, uid and ustack are names of their own; anything else is a probe
// expression read at a probe of `kind`. `at_return_of_call` (latency): the keys are read at the
// return, where argN means its value at entry, $entry(argN).
Result<std::vector<AggregateKey>> parse_aggregate_keys(std::string_view by, ProbeKind kind,
                                                       bool at_return_of_call = false);

// How values are bucketed.
struct HistScale {
  uint32_t mode = TRACE_AGG_COUNT;  // enum uscope_agg_mode
  int64_t min = 0, max = 0, step = 0;
  uint32_t linear_buckets = 0;  // (max - min) / step
};

// "MIN,MAX,STEP" of --linear: at most TRACE_AGG_BUCKETS - 2 buckets between MIN and MAX.
Result<HistScale> parse_linear_scale(std::string_view text);

struct AggregateSpec {
  std::vector<AggregateKey> keys;
  std::optional<Expr> value;  // hist: the expression whose values are bucketed
  HistScale scale;
  bool latency = false;  // the return half of a call buckets its duration (log2, ns)
};

struct CompiledAggregate {
  uscope_recipe main{};                 // at the site; latency: the return half
  std::optional<uscope_recipe> entry;   // at function entry: $entry() values, latency's time
  std::vector<OutputField> key_fields;  // how the key bytes decode, in key order (no ustack)
};

// Cuts the string fields a recipe emits to one cap, the highest that lets them and its numbers
// fit an `aggregates` key (TRACE_AGG_KEY_BYTES; a string shorter than the cap keeps its size);
// fails, naming the sizes, when even a byte per string does not fit.
Result<void> fit_key(uscope_recipe& r);

// `spec` gives the probe kind and the predicate. Latency: `site.kind` is Return. `slot` tells
// this aggregation's rows from others' in the shared map.
// `resolve` rewrites parameter names and members (the name resolver, bound to the probed
// function) in the probe the keys and the value make up; none = names are refused.
using NameResolver = std::function<Result<ProbeSpec>(const ProbeSpec&)>;
Result<CompiledAggregate> compile_aggregate(const ProbeSpec& spec, const AggregateSpec& agg,
                                            const SiteContext& site, uint32_t probe_id,
                                            uint32_t slot, const NameResolver& resolve = {});

// One aggregation slot: the rows of one probe (function or USDT probe) at all of its sites.
struct AggregateSlot {
  std::string label;
  std::string object;  // display path
  std::vector<OutputField> key_fields;
};

struct AggregationPlan {
  std::vector<uscope_recipe> recipes;  // index = bpf cookie
  std::vector<PlannedSite> sites;      // sites[i] runs recipes[i]
  std::vector<AggregateSlot> slots;    // by the recipes' agg_slot
  std::vector<SkippedSite> skipped;    // matched but unprobeable, with why
};

// Every site `specs` match, each probe (label) one slot. Return probes (r:, latency) get their
// entry half at the function's entry.
Result<AggregationPlan> plan_aggregation(ObjectCache& cache, std::span<const ProbeSpec> specs,
                                         const AggregateSpec& agg, bool move_sites);

}  // namespace uscope
