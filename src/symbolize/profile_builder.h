#pragma once
// Raw stacks (collect/stack_samples.h) -> the profile model (sink/profile.h): every distinct
// address symbolized once, mappings with their build-ids, functions and locations interned,
// inlined calls expanded into a location's lines, unnamed frames saying why
// ("[unknown: libfoo.so has no symbols]"), and each sample marked complete when its user stack
// reaches its thread's entry point.
#include <span>

#include "collect/stack_samples.h"
#include "model/profile.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/symbolizer.h"

namespace uscope {

// The functions a complete user stack ends in: _start, main, start_thread, clone3, ...
bool is_thread_entry(std::string_view function);

// Symbolizes through `user` (whose processes should have been remember()ed while they lived)
// and `kernel` (nullptr: kernel frames stay unnamed, saying so).
Profile build_profile(std::span<const StackSample> samples, Symbolizer& user,
                      const KernelSymbols* kernel);

}  // namespace uscope
