// The Text format: the functions that hold the most samples, as a table. SELF counts samples
// whose leaf is the function; TOTAL counts samples with the function anywhere on the stack,
// once per sample however deep it recurses.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sink/profile_stacks.h"
#include "sink/profile_writers.h"

namespace uscope {

namespace {

struct TopRow {
  std::string function, module;
  uint64_t self = 0, total = 0;
};

// Rounded down to the 0.1 shown: a function on all but a few samples never reads 100.0%.
double percent(uint64_t n, uint64_t total) {
  return static_cast<double>(n * 1000 / total) / 10;
}

}  // namespace

Result<void> write_top(const Profile& profile, std::FILE* out, const ProfileSinkOptions& options) {
  uint64_t total = profile.total_samples();
  if (total == 0) {
    fmt::print(out, "no samples\n");
    return {};
  }
  // Rows by (label, module); a row's index marks it seen once per sample.
  std::unordered_map<std::string, size_t> row_of;
  std::vector<TopRow> sorted;
  std::vector<size_t> seen_in;  // the last sample that counted each row's TOTAL, + 1
  auto row = [&](const std::string& function, const std::string& module) -> size_t {
    auto [it, added] = row_of.try_emplace(function + '\0' + module, sorted.size());
    if (added) {
      sorted.push_back({function, module});
      seen_in.push_back(0);
    }
    return it->second;
  };
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    const ProfileSample& sample = profile.samples[i];
    if (sample.count == 0) continue;
    // A sample without any frame still counts, so that the percentages add up.
    size_t leaf = SIZE_MAX;
    for (const auto& f : root_first_frames(profile, sample)) {
      leaf = row(f.label, module_of(profile, profile.locations[f.location]));
      if (seen_in[leaf] != i + 1) sorted[leaf].total += sample.count;
      seen_in[leaf] = i + 1;
    }
    if (leaf == SIZE_MAX) {
      leaf = row("[no stack]", "");
      sorted[leaf].total += sample.count;
    }
    sorted[leaf].self += sample.count;
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
