#pragma once
// Frames as bcc's trace prints them, in trace -U/-K stacks, %U/%K and count --by ustack:
// "sym+0xoff [module]" with the module's file name (a Python function: "f (app.py:12) [python]");
// a frame without a name says why in place of the symbol, "[unknown: no symbols] [libfoo.so]",
// "[unknown: process gone]". Kernel frames (KernelSymbols::frame) name their module or "[kernel]".
#include <string>

#include "symbolize/symbolizer.h"

namespace uscope {

std::string symbol_text(const Frame& frame);
// The object's file name, and the name it was started by where that differs (a symlink):
// "libc.so.6", "redis-server (redis-check-rdb)".
std::string module_name(const Frame& frame);
// Why `frame` has no name ("no symbols", "process gone"); nullptr when it has one. trace --json
// gives it as a frame's "unknown".
const char* unknown_reason(const Frame& frame);

}  // namespace uscope
