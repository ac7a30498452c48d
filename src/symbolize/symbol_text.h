#pragma once
// Symbols as bcc's trace prints them, in -U/-K stacks and for %U/%K: "sym+0xoff [module]" with
// the module's file name, "[unknown] [module]" when only the module is known, "[unknown]" else;
// kernel frames (KernelSymbols::frame) name their module or "[kernel]".
#include <string>

#include "symbolize/symbolizer.h"

namespace uscope {

std::string symbol_text(const Frame& frame);

}  // namespace uscope
