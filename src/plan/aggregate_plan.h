#pragma once
// The plans of `count` and `latency`: every function (or USDT location) their patterns match,
// placed by the same rule as `trace`, as a site table indexed by the bpf cookie.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/planner.h"

namespace uscope {

struct AggregateOptions {
  bool move_sites = true;  // allow cheaper sites inside the entry block
};

// One hit counter per site: sites[cookie] is counter `cookie` and a row of the table (its
// `probe` is its own index).
struct CountPlan {
  std::vector<PlannedSite> sites;    // index = bpf cookie; role Count
  std::vector<SkippedSite> skipped;  // matched but unprobeable, with why
};

// A count probe reads nothing, so it moves as far into the prologue as any probe can.
Result<CountPlan> plan_count(ObjectCache& cache, std::span<const ProbeSpec> patterns,
                             const AggregateOptions& opts);

// Per timed function, an entry half and a return half on one site (the kernel runs both on one
// trap), each with its recipe: recipes[cookie] runs at sites[cookie].
struct LatencyPlan {
  struct Function {
    std::string label;
    std::string object;
    uint64_t entry_cookie = 0;  // LatencyEntry site: its counters count calls
    // LatencyReturn sites (one, or one per RET for Go): their counters and histograms, summed,
    // time the calls.
    std::vector<uint64_t> return_cookies;
  };
  std::vector<uscope_recipe> recipes;  // index = bpf cookie
  std::vector<PlannedSite> sites;      // sites[i] runs recipes[i]; probe = index into functions
  std::vector<Function> functions;
};

// Patterns latency can time: functions, not USDT probes. A command-line mistake, checked before
// anything is opened (and again by plan_latency).
Result<void> check_latency_patterns(std::span<const ProbeSpec> patterns);

// Fails for USDT patterns (latency times functions), and for Go functions whose returns cannot
// all be found (return_sites.h).
Result<LatencyPlan> plan_latency(ObjectCache& cache, std::span<const ProbeSpec> patterns,
                                 const AggregateOptions& opts);

}  // namespace uscope
