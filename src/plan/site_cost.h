#pragma once
// What a uprobe hit costs at a given instruction on x86-64, and where an entry probe can sit
// instead of the function's first instruction when that one would be single-stepped.
//
// The kernel handles a uprobe trap either by emulating the probed instruction in the trap
// handler (nops, push reg, relative jmp/call/jcc: ~0.3-1 us per hit on the reference VM) or by
// single-stepping a copy of it out of line (everything else: ~15-40 us per hit). gcc's
// -fcf-protection makes `endbr64` the first instruction of most functions, and endbr64 is
// single-stepped, so the instruction after it (typically `push rbp` or a `jcc`) is often a far
// cheaper site that sees the same argument registers. site_cost.cc holds the measured table.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace uscope {

enum class SiteCost {
  Emulated,       // handled inside the trap: cheap
  SingleStepped,  // copied to the XOL page and single-stepped: ~20x dearer
  Unprobeable,    // the kernel refuses the site (ENOTSUPP) or probing it breaks the target
};

const char* site_cost_name(SiteCost cost);  // "emulated", "single-stepped", "unprobeable"

// What a probe hit costs the traced thread, in ns, per class of site: the one table the overhead
// estimate (collect/overhead.h) reads; the classes are classify_site's, which `list` shows.
// Measured by bench/overhead.py --calibrate (command and table in docs/BENCHMARKS.md) as the
// target's CPU time per call under `uscope count` minus without probes, minus the BPF program's
// own run time (the kernel's BPF stats). Medians on a shared 2-CPU VM, good to ~25%: every number
// printed from them says "≈".
struct HitCosts {
  double emulated_trap_ns;        // int3, emulated instruction, back to user space
  double single_stepped_trap_ns;  // int3, copy stepped out of line, second trap, back
  // A return probe's extra work on top of the entry trap it needs (the return trampoline's
  // uretprobe syscall or trap), measured with entry and return consumers on one emulated site.
  double return_ns;
  // BPF run time per hit, when the kernel's stats cannot be read (see collect/bpf_run_stats.h):
  double counter_program_ns;  // hit_counter.bpf.c (count)
  double trace_program_ns;    // trace.bpf.c: a recipe reading one argument, no event written
};
const HitCosts& measured_hit_costs();
// The trap's share of a hit at a site of this class; 0 for Unprobeable (never attached).
double trap_ns(SiteCost cost);

struct SiteClass {
  SiteCost cost = SiteCost::SingleStepped;
  std::string insn;  // as capstone prints it (Intel syntax), e.g. "push rbp"
  size_t length = 0;
  std::string why;  // one phrase, e.g. "push reg is emulated"
};

// Classifies the instruction at the start of `code` (x86-64 machine code located at `addr`).
// Fails only when `code` does not start with a decodable instruction.
Result<SiteClass> classify_site(std::span<const uint8_t> code, uint64_t addr);

struct EntrySitePlan {
  uint64_t offset_in_function = 0;  // 0 = the function start
  int64_t sp_delta = 0;  // rsp at the chosen site minus rsp at function entry (-8 after push rbp)
  SiteClass site;        // class of the chosen site
  SiteClass original;    // class of the first instruction
  std::string reason;    // why moved, or why not
  // Every instruction skipped is an endbr64 or a nop: landing pads no direct branch targets, so
  // no code elsewhere in the object needs checking for jumps past the function start.
  bool skipped_only_landing_pads = true;
};

// Picks the cheapest site in the straight-line entry block of a function (its bytes in
// `function_code`, loaded at `function_addr`) at which every register in `reads` still holds its
// entry value. `reads` uses register names ("rdi", "esi", "r8d", ...; sub-registers count as
// their 64-bit register); "rsp" may be listed: the stack pointer may move by known amounts,
// reported in sp_delta so rsp-relative reads can be rebased. `reads_memory` says the probe
// dereferences memory (pointer arguments, stack arguments); then skipped instructions must not
// store anywhere but the new frame below the entry rsp. Falls back to offset 0 with the reason.
// Fails only when the first instruction cannot be decoded. `external_targets` (sorted link-time
// addresses, from plan_function_entry()'s scan of the rest of the object) adds the jumps other
// functions make into this one: glibc's mempcpy enters memmove three bytes in, past an instruction
// a moved probe would skip.
Result<EntrySitePlan> plan_entry_site(std::span<const uint8_t> function_code,
                                      uint64_t function_addr, const std::vector<std::string>& reads,
                                      bool reads_memory,
                                      std::span<const uint64_t> external_targets = {});

// Every direct jmp/jcc/call found by a linear sweep of `code` (loaded at `addr`), in address
// order, decoding lengths and branches only (instruction_sweep.h). Bytes that do not decode are
// stepped over one at a time.
struct DirectBranch {
  uint64_t pc = 0;      // the branch instruction
  uint64_t target = 0;  // where it goes
  bool call = false;
};
void for_each_direct_branch(std::span<const uint8_t> code, uint64_t addr,
                            const std::function<void(const DirectBranch&)>& fn);
// The same for the instructions that start before `end` only. Returns the address of the first
// instruction not decoded, where a later call on the rest of `code` goes on: the sweep is the same
// in pieces as in one go.
uint64_t for_each_direct_branch_before(std::span<const uint8_t> code, uint64_t addr, uint64_t end,
                                       const std::function<void(const DirectBranch&)>& fn);
// Their targets, sorted and unique.
std::vector<uint64_t> direct_branch_targets(std::span<const uint8_t> code, uint64_t addr);

// Every load of a general-purpose register from a RIP-relative address (`mov rcx, [rip + d]`)
// found by the same sweep: where code reads a global variable, which a binary without a symbol
// table names nowhere else.
struct RipRelativeLoad {
  uint64_t pc = 0;      // the mov
  uint64_t target = 0;  // the address it reads
  uint8_t size = 0;     // bytes read
};
std::vector<RipRelativeLoad> rip_relative_loads(std::span<const uint8_t> code, uint64_t addr);

// The RET instructions of the function whose code is `code` (at `addr`), each with its class: where
// return probes go in code whose stacks move (Go), instead of a uretprobe. Fails when the linear
// sweep cannot decode the whole function (a RET past the failure would be missed).
struct ReturnInstruction {
  uint64_t addr = 0;
  SiteClass cls;
};
Result<std::vector<ReturnInstruction>> return_instructions(std::span<const uint8_t> code,
                                                           uint64_t addr);

// "rdi" for "edi"/"di"/"dil"/"rdi", likewise for every general-purpose register; any other name
// is returned unchanged. Exposed for the planner, which names registers the same way.
std::string canonical_register(std::string_view name);

}  // namespace uscope
