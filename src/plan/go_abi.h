#pragma once
// Go's register assignment of parameters (cmd/compile/abi-internal.md, "Function call argument
// and result passing"), for a declared list on a binary without DWARF. In order, each parameter
// takes as many integer registers as it has words (a string or interface 2, a slice 3, a scalar,
// pointer, map, chan or func 1, a struct its fields', an array of one element that element's);
// floats take floating-point registers instead. A parameter that does not fit in what is left
// goes on the stack whole, and a later one may still take registers. The registers are the
// calling convention's (calling_convention.h): none under Go's older stack ABI.
#include <span>
#include <string_view>
#include <vector>

#include "bpf/trace.h"
#include "discover/go_types.h"
#include "plan/calling_convention.h"
#include "util/result.h"

namespace uscope {

// The type a declared list spells (DeclaredParam::go_type, Go's own spelling): its layout from
// the spelling for predeclared and composite types ("string", "[]uint8", "*main.T", "map[K]V"),
// from `types` (DWARF, else the runtime type descriptors) for a named one ("main.Point",
// "net/http.ResponseWriter"). `types` may be null: then a named type is an error.
Result<GoType> declared_go_type(std::string_view spelling, GoTypes* types);

// Where one parameter arrives.
struct GoArgSlot {
  std::vector<uscope_reg> ints;  // its words' integer registers, in order
  int floats = 0;                // floating-point registers (X0..X14) it takes
  bool on_stack = false;         // did not fit: on the stack
};

// Go's amd64 ABI has 15 floating-point argument registers (X0..X14).
inline constexpr int kGoFloatRegisters = 15;

// The slots of `params` in order. Structs and arrays are split into their fields and elements
// (layouts through `types`); errors name the type whose layout is unknown.
Result<std::vector<GoArgSlot>> assign_go_args(std::span<const GoType> params, GoTypes* types,
                                              const CallingConvention& cc);

}  // namespace uscope
