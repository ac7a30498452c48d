#pragma once
// Where each parameter of a DWARF-described function is at entry under the SysV x86-64 ABI
// (System V AMD64 psABI 3.2.3): which are in rdi, rsi, rdx, rcx, r8, r9, which in xmm registers,
// which on the stack. Only what a uprobe at entry can read matters here, so the classification
// stops at "integer register N" or why not.
#include <optional>

#include "discover/dwarf_types.h"
#include "util/result.h"

namespace uscope {

// Fills every params[i].location of `fn`. `ret` is the return type: a struct returned in memory
// takes rdi for its hidden address, moving every integer argument one register on.
Result<void> assign_sysv_locations(DwarfTypes& types, DwarfFunction& fn,
                                   const std::optional<DwarfType>& ret);

}  // namespace uscope
