#pragma once
// A Go function's parameters as a spec's names and argN read them: each one's type and where
// its words are at the function's entry, from one of two sources, and which one (for -v):
//   - DWARF: Go's location lists say where each parameter is at the entry;
//   - a declared list (`main.work(i int, tag string)`): types as spelled, registers by Go's ABI
//     (go_abi.h). With DWARF too, the list is checked against it and DWARF places the values.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/dwarf_types.h"
#include "discover/go_types.h"
#include "plan/calling_convention.h"
#include "plan/probe_spec.h"
#include "util/result.h"

namespace uscope {

struct GoParam {
  std::string name;  // "" when DWARF names none
  GoType type;
  std::vector<std::string> regs;        // the registers of its words, in order ("rbx", "rcx")
  std::optional<int64_t> stack_offset;  // or: at rsp + this at the entry (rsp at a RET too)
  std::string why_not;  // neither: why, as "'x' <why_not>" ("is passed on the stack ...")
  int column = 0;       // a declared parameter's column, for errors
};

struct GoParams {
  std::vector<GoParam> params;
  // Where the locations came from: "DWARF", "the declared list and Go's register ABI", "DWARF,
  // which the declared list agrees with".
  std::string source;
};

// From `fn`'s DWARF (its results left out).
// `inlined_copy`: `fn` is a copy inlined into another function (DwarfTypes::inlined_at), its
// locations at the copy's first instruction.
GoParams go_params_from_dwarf(const DwarfFunction& fn, bool inlined_copy = false);

// From a Go declared list: each type's layout from its spelling or `types` (named types), the
// registers by `cc`. Errors name the parameter whose type has no known layout.
Result<GoParams> go_params_from_declared(const std::vector<DeclaredParam>& declared, GoTypes* types,
                                         const CallingConvention& cc);

// The declared list against the function's DWARF: as many parameters, each of the type DWARF
// says (the names are the user's own). DWARF's parameters renamed as declared, or an error
// quoting the signature DWARF gives.
Result<GoParams> go_params_checked(const std::vector<DeclaredParam>& declared, GoParams dwarf,
                                   GoTypes* types, std::string_view function);

// "main.work(i int, tag string)", for messages.
std::string go_signature(std::string_view function, const std::vector<GoParam>& params);

}  // namespace uscope
