#include "sink/function_shares.h"

#include <cstdint>
#include <unordered_map>

#include "sink/profile_stacks.h"

namespace uscope {

std::vector<FunctionShare> function_shares(const Profile& profile) {
  // Rows by (label, module); a row's index marks it seen once per sample.
  std::unordered_map<std::string, size_t> row_of;
  std::vector<FunctionShare> rows;
  std::vector<size_t> seen_in;  // the last sample that counted each row's TOTAL, + 1
  auto row = [&](const std::string& function, const std::string& module) -> size_t {
    auto [it, added] = row_of.try_emplace(function + '\0' + module, rows.size());
    if (added) {
      rows.push_back({function, module});
      seen_in.push_back(0);
    }
    return it->second;
  };
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    const ProfileSample& sample = profile.samples[i];
    if (sample.count == 0) continue;
    size_t leaf = SIZE_MAX;
    for (const auto& f : root_first_frames(profile, sample)) {
      leaf = row(f.label, module_of(profile, profile.locations[f.location]));
      if (seen_in[leaf] != i + 1) rows[leaf].total += sample.count;
      seen_in[leaf] = i + 1;
    }
    if (leaf == SIZE_MAX) {
      leaf = row("[no stack]", "");
      rows[leaf].total += sample.count;
    }
    rows[leaf].self += sample.count;
  }
  return rows;
}

double share_percent(uint64_t n, uint64_t total) {
  if (total == 0) return 0;
  return static_cast<double>(n * 1000 / total) / 10;
}

}  // namespace uscope
