#pragma once
// Probe specs resolved to attach sites: which object, which file offset, which kind of probe,
// which USDT semaphore, which recipe, and what each site costs per hit. The one owner of attach
// sites: matching (site_match.h), placement (site_placement.h), and here the plan of `trace`;
// `count` and `latency` plan in aggregate_plan.h. Every plan is a site table indexed by the bpf
// cookie, each site saying which probe it belongs to and in which role.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/trace.h"
#include "plan/attach_site.h"
#include "plan/go_name_resolver.h"
#include "plan/probe_spec.h"
#include "plan/recipe.h"
#include "plan/site_cost.h"
#include "plan/site_match.h"
#include "plan/site_placement.h"

namespace uscope {

// What the program attached at a site does there.
enum class SiteRole {
  Event,          // trace: evaluates the probe and emits its event
  SaveEntry,      // trace: the entry half of a return probe using $entry(argN)
  LatencyEntry,   // latency: records the entry time
  LatencyReturn,  // latency: adds the call's duration to the histogram
  Count,          // count: adds one to the site's counter
  Aggregate,      // count --by, hist, latency --by: adds to its key's row (keyed_plan.h)
  Abandon,        // trace: drops a call that can no longer end, counted (ProbeSpec::abandoned_at)
};
const char* site_role_name(SiteRole role);  // "event", "save-entry", ...

struct PlannedSite {
  AttachSite attach;   // attach.cookie == the site's index in its plan
  uint32_t probe = 0;  // trace: index into TracePlan::probes; count/latency: the function's row
  SiteRole role = SiteRole::Event;
  std::string object;  // display path
  std::string label;
  SitePlacement placement;  // offset, move, cost class of the site
};

// A matched site left out of a plan, and why (the kernel cannot probe its instruction).
struct SkippedSite {
  std::string label;
  std::string object;
  std::string why;
};

// The cookie of `probe`'s first site in `role`, if it has one.
std::optional<uint64_t> find_cookie(std::span<const PlannedSite> sites, uint32_t probe,
                                    SiteRole role);

struct ProbePlan {
  ProbeSpec spec;
  std::string label;
  std::vector<OutputField> fields;
  std::vector<NameOrigin> names;  // where each name of the spec was found (Go code), for -v
};

struct TracePlan {
  std::vector<uscope_recipe> recipes;  // index = bpf cookie
  std::vector<PlannedSite> sites;      // sites[i] runs recipes[i]
  std::vector<ProbePlan> probes;       // one per function (or USDT probe) a spec matched
  std::vector<SkippedSite> skipped;    // functions a glob matched that cannot be probed
  // A spec has a glob: a site the kernel refuses at attach time is left out like `skipped`,
  // rather than failing the session (a function named exactly is attached or refused whole).
  bool skip_refused = false;
};

// A glob in a `trace` spec prints an event per call of every function it matches: past this many
// functions per spec the plan is refused (count the calls first with `uscope count`).
inline constexpr size_t kMaxTraceGlobFunctions = 1000;

struct TraceOptions {
  bool capture_stack = false;
  bool kernel_stack = false;  // -K: events carry the kernel stack (TRACE_F_KSTACK)
  bool move_sites = true;     // allow cheaper sites inside the entry block
  size_t max_glob_functions = kMaxTraceGlobFunctions;
};

// What compile_probe() needs to know of a matched site placed at `place`.
SiteContext site_context(const MatchedSite& m, ProbeKind kind, const SitePlacement& place);

// A site in an inlined copy (MatchedSite::inlined_in) has no return and no arguments in Go's
// registers; its parameters by name need DWARF (an inlined subroutine's location lists). Fails,
// naming functions the copy calls to probe instead, for a probe that needs what the copy lacks.
Result<void> check_inlined_site(const MatchedSite& m, const ProbeSpec& spec);

// One probe per matched function (a glob matches many, each its own probe and label), a recipe
// and a site per attach point (two for a return probe using $entry()).
Result<TracePlan> plan_trace(ObjectCache& cache, std::span<const ProbeSpec> specs,
                             const TraceOptions& opts);

}  // namespace uscope
