#pragma once
// What the unwinder's tables cost and where they came from (attach/unwind_maps.h), for -v: one
// line, then one per object whose table failed.
#include <cstdio>
#include <string>

#include "attach/unwind_maps.h"

namespace uscope {

std::string unwind_stats_text(const UnwindLoadStats& stats);
void print_unwind_stats(const UnwindLoadStats& stats, std::FILE* out);

}  // namespace uscope
