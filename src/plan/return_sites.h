#pragma once
// Where a return probe goes when a uretprobe must not: Go code, whose goroutine stacks the runtime
// moves (copies to grow or shrink them) under any return address a uretprobe rewrote, which
// crashes the program. There a return probe is a uprobe on each RET instruction of the function,
// found by disassembly, and the call's entry is found by goroutine (calling_convention.h).
#include <string_view>
#include <vector>

#include "plan/calling_convention.h"
#include "plan/site_match.h"
#include "plan/site_placement.h"
#include "util/result.h"

namespace uscope {

// The calling convention of code in `o`: Go's (by its build info) for Go binaries, else SysV.
const CallingConvention& convention_of(const PlannedObject& o);

// One placement per RET of the function `m` starts. Fails, saying why and what would work, when
// the function's returns cannot all be found (size unknown, undecodable bytes, no RET: it ends
// in a tail jump or never returns), for an inlined copy (no return of its own), and for Go
// before 1.17 (the goroutine is not in a register there).
Result<std::vector<SitePlacement>> place_return_instructions(const MatchedSite& m);

// The end of a Go call at the entry of `function` in m's object (ProbeSpec::ends_at), or where
// it is dropped unfinished (`abandon`: ProbeSpec::abandoned_at): its entry site, placed as an
// entry probe reading `reads` is. Fails when the object has no out-of-line copy of `function`
// (absent, or only inlined), and, unless `any_depth` (a call keyed by its goroutine alone), when
// the site does not keep rsp (the goroutine key of a Go call is its entry rsp's depth, the same
// for two calls from one frame).
Result<SitePlacement> place_end_entry(const MatchedSite& m, std::string_view function,
                                      const SiteReads& reads, bool allow_move, bool any_depth,
                                      bool abandon);

}  // namespace uscope
