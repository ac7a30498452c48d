#include "plan/branch_candidates.h"

#include <algorithm>

namespace uscope {

bool may_jump_indirectly(std::span<const uint8_t> code) {
  for (size_t i = 0; i + 1 < code.size(); ++i) {
    if (code[i] != 0xff) continue;
    const uint8_t modrm = code[i + 1];
    const int reg = (modrm >> 3) & 7, mod = modrm >> 6;
    if (reg == 4 || (reg == 5 && mod != 3)) return true;
  }
  return false;
}

bool may_branch_into(std::span<const uint8_t> code, uint64_t addr, uint64_t first, uint64_t last) {
  bool found = false;
  for_each_possible_branch(
      code, addr, [&](uint64_t, uint64_t target) { found |= target >= first && target <= last; });
  return found;
}

std::vector<PossibleBranch> possible_far_branches(
    std::span<const std::pair<uint64_t, std::span<const uint8_t>>> code, uint64_t first,
    uint64_t last) {
  auto inside = [&](uint64_t target) {
    return std::any_of(code.begin(), code.end(), [&](const auto& c) {
      return target >= c.first && target - c.first < c.second.size();
    });
  };
  std::vector<PossibleBranch> out;
  for (const auto& [addr, bytes] : code) {
    for_each_possible_branch(bytes, addr, [&](uint64_t pc, uint64_t target) {
      if (target >= first && target <= last && is_far_branch(pc, target) && inside(target))
        out.push_back({target, pc});
    });
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace uscope
