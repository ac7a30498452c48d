#pragma once
// What the unwinder's tables cost and where they came from (attach/unwind_maps.h), for -v: one
// line, then one per object whose table failed.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "attach/unwind_maps.h"

namespace uscope {

std::string unwind_stats_text(const UnwindLoadStats& stats);
// `walks`: UnwindFollower::walk_counts(), whose frame counts make a second line.
void print_unwind_stats(const UnwindLoadStats& stats,
                        const std::vector<std::pair<std::string, uint64_t>>& walks, std::FILE* out);

}  // namespace uscope
