// The Text format: the functions that hold the most samples (sink/function_shares.h), as a table;
// in a profile of time, the most time, with its unit.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sink/function_shares.h"
#include "sink/profile_writers.h"

namespace uscope {

Result<void> write_top(const Profile& profile, std::FILE* out, const ProfileSinkOptions& options) {
  uint64_t total = profile.total_samples();
  if (total == 0) {
    fmt::print(out, "{}\n",
               profile.measure == ProfileMeasure::OffCpuTime
                   ? "no off-CPU time: no thread of the target waited (each ran "
                     "whenever it could), or none for longer than --min-block"
               : profile.measure == ProfileMeasure::LiveBytes
                   ? "no block outstanding: every block followed was freed"
                   : "no samples");
    return {};
  }
  std::vector<FunctionShare> sorted = function_shares(profile);
  std::sort(sorted.begin(), sorted.end(), [](const FunctionShare& a, const FunctionShare& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.total != b.total) return a.total > b.total;
    return a.function < b.function;
  });
  size_t shown = std::min(sorted.size(), options.top);
  size_t width = 8;
  for (size_t i = 0; i < shown; ++i) width = std::max(width, sorted[i].function.size());
  width = std::min<size_t>(width, 60);
  fmt::print(out, "{:>6} {:>7} {:>9} {:>9}  {:<{}}  {}\n", "SELF%", "TOTAL%", "SELF", "TOTAL",
             "FUNCTION", width, "MODULE");
  for (size_t i = 0; i < shown; ++i) {
    const FunctionShare& r = sorted[i];
    fmt::print(out, "{:>5.1f}% {:>6.1f}% {:>9} {:>9}  {:<{}}  {}\n", share_percent(r.self, total),
               share_percent(r.total, total), count_text(profile, r.self),
               count_text(profile, r.total), r.function, width, r.module);
  }
  if (shown < sorted.size())
    fmt::print(out, "({} more functions; --top N shows more, -o FILE.svg a flame graph)\n",
               sorted.size() - shown);
  return {};
}

}  // namespace uscope
