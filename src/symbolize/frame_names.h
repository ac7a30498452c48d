#pragma once
// What a profile shows for a frame that has no name: why, in the words trace's %U and -U use
// (to_string(FrameMiss)), with the object's file name ("[unknown: no symbols in libfoo.so]",
// "[unknown: no symbol covers the address in redis-server]", "[unknown: process gone]"), since a
// flame graph's frame is only its name. Never blank. Printed stacks (trace -U, count --by ustack)
// keep bcc's "symbol [module]" form: symbol_text.h.
#include <string>

#include "symbolize/symbolizer.h"

namespace uscope {

// The function's name when the frame has one, else why it has none.
std::string frame_name(const Frame& frame);
// Why a user frame has no name.
std::string unnamed_frame_text(const Frame& frame);
// Why a kernel frame (KernelSymbols::frame) has no name; `symbols_loaded` false when kallsyms
// was not read at all.
std::string unnamed_kernel_frame_text(FrameMiss miss, bool symbols_loaded);

}  // namespace uscope
