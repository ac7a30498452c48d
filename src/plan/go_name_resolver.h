#pragma once
// Go parameters and fields by name, and argN as the Nth parameter: `p:./app:main.work "%d %s",
// i, tag` reads `i` and `tag` where they are at the function's entry (go_params.h: DWARF's
// locations, or a declared list `main.work(i int, tag string)` placed by Go's ABI), and
// `req.URL.Path` through pointers at the offsets GoTypes gives (DWARF, else the runtime type
// descriptors, else uscope's table). A string or []byte becomes str(ptr, len); an interface value
// a GoValue (printed with %v); in a return probe every parameter is its value saved at entry.
// Without DWARF or a declared list, argN stays the Nth register of Go's ABI.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "discover/dwarf_types.h"
#include "discover/go_types.h"
#include "plan/calling_convention.h"
#include "plan/probe_spec.h"
#include "util/result.h"

namespace uscope {

// Where a name of a spec was found, for -v.
struct NameOrigin {
  std::string name;    // as written: "tag", "arg2", "req.URL"
  std::string where;   // "in rbx, rcx (string)", "at offset 16 in net/http.Request (*net/url.URL)"
  std::string source;  // "DWARF", "the runtime type descriptor", ...
};

struct GoNameSite {
  uint64_t function_addr = 0;  // link-time address of the probed function
  std::string function;        // for messages
  std::string object;          // for messages
  ProbeKind kind = ProbeKind::Entry;
  const CallingConvention* cc = &go_register_convention();
  std::string go_version;  // for messages: "go1.16.15"; "" when unknown
  // A copy of `function` inlined into another: the probe's pc in it (its parameters are where
  // DWARF's inlined subroutine says at that pc); 0 for the function's own code.
  uint64_t inlined_pc = 0;
};

// Whether a spec on Go code has something for the resolver: names, members, argN, $entry(argN).
bool needs_go_resolver(const ProbeSpec& spec);

// `types` opens the object's Go types when a field or a declared named type needs them.
using GoTypesSource = std::function<Result<GoTypes*>()>;

Result<ProbeSpec> resolve_go_names(const ProbeSpec& spec, DwarfTypes& dwarf,
                                   const GoTypesSource& types, const GoNameSite& site,
                                   std::vector<NameOrigin>* origins = nullptr);

}  // namespace uscope
