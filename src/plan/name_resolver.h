#pragma once
// Parameter names and struct members in a probe spec, resolved against the probed function:
// `p:./app:handle "%s %d", req->path, len` becomes `str(arg1 + 16)` and `(int)arg2`. Names come
// from the spec's declared parameter list (`open(char *filename)`, bcc's form) or else from the
// function's DWARF; struct layouts always come from DWARF (any CU of the object). In a return
// probe a parameter means its value at entry ($entry(argN)). Go code has a resolver of its own
// (go_name_resolver.h), which this one hands it to.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "discover/dwarf_types.h"
#include "plan/go_name_resolver.h"
#include "plan/probe_spec.h"
#include "plan/site_match.h"
#include "util/result.h"

namespace uscope {

// The probed site as the resolver sees it.
struct NameSite {
  DwarfTypes* dwarf = nullptr;  // the object's DWARF; null or !has_dwarf() when it has none
  uint64_t function_addr = 0;   // link-time address of the probed function (0: USDT)
  std::string function;         // for messages: "handle"
  std::string object;           // for messages: the object's display path
};

// Whether the spec names anything the resolver must rewrite (Name, Member, a typed cast).
bool has_names(const ProbeSpec& spec);

// `spec` with every Name and Member rewritten into Arg/Entry/Deref/Add expressions that
// compile_probe understands, the format arguments checked again. Errors name the column and what
// would work ("no parameter 'lenght' in handle(req, len); closest: len").
Result<ProbeSpec> resolve_names(const ProbeSpec& spec, const NameSite& site);

// The planner's one call per matched site: opens the object's DWARF (and, for Go code, its Go
// types) the first time a spec needs them, then resolves; Go code by go_name_resolver.h, which
// also rewrites argN into the Nth parameter and says in `origins` where each name was found.
// `inlined_pc`: the site is a Go copy of `function` inlined at that pc (its parameters come from
// DWARF's inlined subroutine); 0 for the function's own code.
Result<ProbeSpec> resolve_names(const ProbeSpec& spec, PlannedObject& object,
                                uint64_t function_addr, const std::string& function,
                                std::vector<NameOrigin>* origins = nullptr,
                                uint64_t inlined_pc = 0);

}  // namespace uscope
