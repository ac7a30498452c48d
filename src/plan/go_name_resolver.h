#pragma once
// Go parameters and fields by name: `p:./app:main.work "%d %s", i, tag` reads `i` and `tag` where
// Go's DWARF says they are at the function's entry (registers of Go's ABI, a string as two), and
// `req.URL.Path` through pointers at DWARF's offsets. A string or []byte becomes str(ptr, len);
// an interface value a GoValue (printed with %v); in a return probe every parameter is its value
// saved at entry.
#include <cstdint>
#include <string>

#include "discover/dwarf_types.h"
#include "plan/probe_spec.h"
#include "util/result.h"

namespace uscope {

struct GoNameSite {
  uint64_t function_addr = 0;  // link-time address of the probed function
  std::string function;        // for messages
  std::string object;          // for messages
  ProbeKind kind = ProbeKind::Entry;
  // A copy of `function` inlined into another: the probe's pc in it (its parameters are where
  // DWARF's inlined subroutine says at that pc); 0 for the function's own code.
  uint64_t inlined_pc = 0;
};

Result<ProbeSpec> resolve_go_names(const ProbeSpec& spec, DwarfTypes& dwarf,
                                   const GoNameSite& site);

}  // namespace uscope
