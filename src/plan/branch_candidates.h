#pragma once
// Branches found without decoding: every byte of the code is read as if an instruction started
// there, so what these find is a superset of the direct jmp/jcc/call/loop and indirect jmp
// instructions a decoder would find at the real instruction boundaries. A site planner that
// finds no candidate into a function's prologue knows that no instruction branches there, at the
// cost of a pass over bytes rather than a disassembly (capstone decodes ~2 M instructions a
// second: 2.7 s for a 22 MB Go .text).
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace uscope {

// Calls fn(pc, target) for every rel8/rel16/rel32 direct branch encoding starting at any byte of
// `code` (loaded at `addr`): jmp, jcc, call, loop/jrcxz, with or without a 0x66 prefix.
template <typename F>
void for_each_possible_branch(std::span<const uint8_t> code, uint64_t addr, F&& fn) {
  const size_t n = code.size();
  auto s8 = [&](size_t i) { return static_cast<int64_t>(static_cast<int8_t>(code[i])); };
  auto s16 = [&](size_t i) {
    return static_cast<int64_t>(static_cast<int16_t>(code[i] | (code[i + 1] << 8)));
  };
  auto s32 = [&](size_t i) {
    uint32_t v = static_cast<uint32_t>(code[i]) | static_cast<uint32_t>(code[i + 1]) << 8 |
                 static_cast<uint32_t>(code[i + 2]) << 16 |
                 static_cast<uint32_t>(code[i + 3]) << 24;
    return static_cast<int64_t>(static_cast<int32_t>(v));
  };
  for (size_t i = 0; i + 1 < n; ++i) {
    const uint8_t b = code[i];
    const uint64_t pc = addr + i;
    // `length` bytes of instruction end with a displacement `disp`: target = next pc + disp.
    auto emit = [&](size_t length, int64_t disp) {
      fn(pc, pc + length + static_cast<uint64_t>(disp));
    };
    if ((b >= 0x70 && b <= 0x7f) || b == 0xeb || (b >= 0xe0 && b <= 0xe3)) {
      emit(2, s8(i + 1));
    } else if ((b == 0xe8 || b == 0xe9) && i + 5 <= n) {
      emit(5, s32(i + 1));
    } else if (b == 0x0f && code[i + 1] >= 0x80 && code[i + 1] <= 0x8f && i + 6 <= n) {
      emit(6, s32(i + 2));
    }
    // 0x66 makes the displacement 16 bits on AMD (Intel ignores it; covered above from i+1).
    if (b == 0x66 && i + 4 <= n && (code[i + 1] == 0xe8 || code[i + 1] == 0xe9)) {
      emit(4, s16(i + 2));
    } else if (b == 0x66 && i + 5 <= n && code[i + 1] == 0x0f && code[i + 2] >= 0x80 &&
               code[i + 2] <= 0x8f) {
      emit(5, s16(i + 3));
    }
  }
}

// Whether a byte of `code` could start an indirect jmp (ff /4: jmp r/m64; ff /5: jmp far m).
bool may_jump_indirectly(std::span<const uint8_t> code);

// Whether some byte of `code` (loaded at `addr`) could start a direct branch to an address in
// [first, last].
bool may_branch_into(std::span<const uint8_t> code, uint64_t addr, uint64_t first, uint64_t last);

// The possible rel32 branches of a whole object's code (its executable sections, each given with
// its address), sorted by target, those whose target lies outside the given code dropped: the
// far branches into a function's prologue, found once per object. Those landing within
// kNearBranchReach of their pc are left to a scan of the bytes around the function
// (may_branch_into). How far from its own pc a branch counted as near may land: rel8's reach and
// its length.
inline constexpr int64_t kNearBranchReach = 136;
struct PossibleBranch {
  uint64_t target = 0;
  uint64_t pc = 0;
  auto operator<=>(const PossibleBranch&) const = default;
};
// Only those with a target in [first, last] when these are given: one function's, without the
// memory and the sort of all of them (22 MB of code holds millions).
std::vector<PossibleBranch> possible_far_branches(
    std::span<const std::pair<uint64_t, std::span<const uint8_t>>> code, uint64_t first = 0,
    uint64_t last = UINT64_MAX);
// Whether a possible branch from `pc` to `target` is a far one (lands beyond kNearBranchReach).
inline bool is_far_branch(uint64_t pc, uint64_t target) {
  const auto reach = static_cast<int64_t>(target - pc);
  return reach > kNearBranchReach || reach < -kNearBranchReach;
}

// What an object's entry-site planner keeps between functions: its far possible branches, found
// once when a second function is planned (the first, often all that `trace` plans, takes only
// its own), and the real direct branches (pc, target) of the functions it last decoded
// to check a possible branch, each decoded from its start only as far as a checked branch (the
// function after this one is checked for branches in its first bytes); a function's neighbours are
// checked again for the next function, and `list` goes through them in address order. Bounded:
// cleared past kMaxDecoded functions.
struct BranchScan {
  std::optional<std::vector<PossibleBranch>> far;
  size_t far_scans = 0;  // scans of the code for far branches so far
  // Set by a planner of most of the object's functions (`list`): the scan of all far branches is
  // made for the first function, not after a scan for that one's own.
  bool plans_all = false;
  struct Decoded {
    std::vector<std::pair<uint64_t, uint64_t>> branches;  // in pc order
    uint64_t next = 0;                                    // the first instruction not decoded yet
  };
  std::map<uint64_t, Decoded> decoded;  // by function start
  static constexpr size_t kMaxDecoded = 64;
};

}  // namespace uscope
