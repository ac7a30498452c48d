#pragma once
// Where a return probe goes when a uretprobe must not: Go code, whose goroutine stacks the runtime
// moves (copies to grow or shrink them) under any return address a uretprobe rewrote, which
// crashes the program. There a return probe is a uprobe on each RET instruction of the function,
// found by disassembly, and the call's entry is found by goroutine (calling_convention.h).
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

}  // namespace uscope
