// The Text format: the functions that hold the most samples, as a table. SELF counts samples
// whose leaf is the function; TOTAL counts samples with the function anywhere on the stack,
// once per sample however deep it recurses.
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

#include "sink/profile_stacks.h"
#include "sink/profile_writers.h"

namespace uscope {

namespace {

struct TopRow {
  std::string function, module;
  uint64_t self = 0, total = 0;
};

double percent(uint64_t n, uint64_t total) {
  return total == 0 ? 0.0 : 100.0 * static_cast<double>(n) / static_cast<double>(total);
}

}  // namespace

Result<void> write_top(const Profile& profile, std::FILE* out, const ProfileSinkOptions& options) {
  uint64_t total = profile.total_samples();
  if (total == 0) {
    fmt::print(out, "no samples\n");
    return {};
  }
  using Key = std::pair<std::string, std::string>;  // label, module
  std::map<Key, TopRow> rows;
  for (const auto& sample : profile.samples) {
    if (sample.count == 0) continue;
    auto frames = root_first_frames(profile, sample);
    std::set<Key> seen;
    for (const auto& f : frames) {
      Key key{f.label, module_of(profile, profile.locations[f.location])};
      TopRow& row = rows[key];
      if (seen.insert(key).second) row.total += sample.count;
      if (&f == &frames.back()) row.self += sample.count;
    }
    if (frames.empty()) {  // no frame at all: count it so that the percentages add up
      TopRow& row = rows[Key{"[no stack]", ""}];
      row.self += sample.count;
      row.total += sample.count;
    }
  }
  std::vector<TopRow> sorted;
  sorted.reserve(rows.size());
  for (auto& [key, row] : rows) {
    row.function = key.first;
    row.module = key.second;
    sorted.push_back(std::move(row));
  }
  std::sort(sorted.begin(), sorted.end(), [](const TopRow& a, const TopRow& b) {
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
    const TopRow& r = sorted[i];
    fmt::print(out, "{:>5.1f}% {:>6.1f}% {:>9} {:>9}  {:<{}}  {}\n", percent(r.self, total),
               percent(r.total, total), grouped(r.self), grouped(r.total), r.function, width,
               r.module);
  }
  if (shown < sorted.size())
    fmt::print(out, "({} more functions; --top N shows more, -o FILE.svg a flame graph)\n",
               sorted.size() - shown);
  return {};
}

}  // namespace uscope
