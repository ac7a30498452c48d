#pragma once
// Where a probe on a matched site attaches, and what a hit there costs. One rule for every
// command: `trace`, `count`, `latency` and `list` all place sites through place_site().
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "discover/elf_file.h"
#include "plan/attach_site.h"
#include "plan/branch_candidates.h"
#include "plan/calling_convention.h"
#include "plan/probe_spec.h"
#include "plan/site_cost.h"
#include "plan/site_match.h"

namespace uscope {

// Where an entry probe on the function at [addr, addr+size) goes. A move past more than endbr64
// is checked against every possible branch into the skipped bytes from the rest of the object
// (the far ones found once into `scan`, branch_candidates.h), since other functions may
// jump into this one's prologue. A possible branch counts when the function `symbols` says holds
// it has it, decoded from its start (every one counts without `symbols`).
Result<EntrySitePlan> plan_function_entry(const ElfFile& elf, uint64_t addr, uint64_t size,
                                          const std::vector<std::string>& reads, bool reads_memory,
                                          BranchScan& scan, const SymbolTable* symbols);

// What a probe reads at its site: the registers (canonical names) whose entry values it needs and
// whether it dereferences memory. The fewer, the further into the prologue it may move.
struct SiteReads {
  std::vector<std::string> registers;
  bool memory = false;
};

// What `list` assumes of an entry probe: it reads all six SysV argument registers and memory, so
// its ENTRY PROBE SITE is where `trace 'p:...'` attaches any probe of that function. Probes that
// read less (count, latency, `p:f "%d", arg1`) may move further, never less far.
SiteReads all_argument_reads();

// The attach point of one matched site, with its cost class. Probes on a function's first
// instruction may move into the prologue when the registers they read provably still hold the
// arguments there (return probes only while rsp is unchanged).
struct SitePlacement {
  uint64_t offset = 0;   // file offset of the probed instruction
  uint64_t address = 0;  // its link-time address
  uint64_t moved = 0;    // bytes past the matched site (0 = not moved)
  int32_t sp_delta = 0;
  SiteClass cost;      // class of the probed instruction
  SiteClass original;  // class of the matched site's own instruction (== cost when not moved)
  std::string note;    // why moved or not
};
SitePlacement place_site(const MatchedSite& m, ProbeKind kind,
                         const std::vector<std::string>& reads, bool reads_memory, bool allow_move);
SitePlacement place_site(const MatchedSite& m, ProbeKind kind, const SiteReads& reads,
                         bool allow_move);

// An entry probe of a program reading `reads` on `f` in `o`, placed by place_site() (into the
// prologue when it may); `placed` says where it went. The cookie is the caller's to set.
AttachSite entry_probe_site(PlannedObject& o, const FunctionSymbol& f, const SiteReads& reads,
                            SitePlacement& placed);

// `list`'s sites, placed as `trace` places them: where a p: probe of `f` reading every argument
// and memory attaches (all_argument_reads()), and where a u: probe of one USDT location does.
SitePlacement listed_entry_site(PlannedObject& o, const FunctionSymbol& f);
SitePlacement listed_usdt_site(PlannedObject& o, const UsdtProbe& p, const UsdtLocation& loc);

// Registers an expression reads (canonical names) and whether it dereferences memory.
// argN are `cc`'s argument registers.
void collect_reads(const Expr& e, ProbeKind kind, std::vector<std::string>& regs, bool& memory,
                   const CallingConvention& cc = sysv_convention());
// Everything a spec's predicate and arguments read.
SiteReads spec_reads(const ProbeSpec& spec, const CallingConvention& cc = sysv_convention());

}  // namespace uscope
