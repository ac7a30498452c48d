#pragma once
// An object's unwind table: its call-frame information (.eh_frame, else .debug_frame from its
// debug file, read with libdw; Go's .gopclntab SP deltas for Go functions) turned into sorted rows
// of the few rules the BPF unwinder evaluates (bpf/unwind.h). Built once per build-id and cached
// on disk (discover/unwind_cache.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/unwind.h"
#include "discover/elf_file.h"
#include "util/result.h"

namespace uscope {

class GoPclntab;

// bpf/unwind.h's unwind_rule with comparisons, so that rules can be deduplicated.
struct UnwindRule {
  unwind_cfa_kind cfa = UNWIND_CFA_NONE;
  unwind_rbp_kind rbp = UNWIND_RBP_SAME;
  int16_t ra_offset = -8;
  int32_t cfa_offset = 0;
  int32_t rbp_offset = 0;
  auto operator<=>(const UnwindRule&) const = default;
};

// `rule` holds from `vaddr` (a link-time address of the object) up to the next row's vaddr.
struct UnwindRow {
  uint64_t vaddr = 0;
  UnwindRule rule;
  bool operator==(const UnwindRow&) const = default;
};

struct UnwindTable {
  // Sorted by vaddr, no two adjacent rows with the same rule; a range no CFI covers is a row of
  // UNWIND_CFA_NONE (the last row is one, ending the last covered range).
  std::vector<UnwindRow> rows;
  // What the rows came from: ".eh_frame", ".debug_frame in /usr/lib/debug/...",
  // ".eh_frame + .gopclntab", "" when nothing (all frame pointers).
  std::string source;
  // What the conversion found, for `-v` and the benchmarks.
  size_t fdes = 0;           // FDEs (or Go functions) read
  size_t unsupported = 0;    // rows whose rule uscope does not evaluate
  size_t signal_frames = 0;  // rows of signal trampolines
};

struct UnwindBuildOptions {
  // A separate debug file (its .debug_frame is used when the object has no .eh_frame); "" none.
  std::string debug_file;
  const GoPclntab* go = nullptr;  // Go's function table, when the object is Go
};

// Builds the table of `elf`. An object without any CFI gets an empty table (not an error): the
// unwinder uses frame pointers there. Fails only on malformed CFI, with what was wrong.
Result<UnwindTable> build_unwind_table(const ElfFile& elf, const UnwindBuildOptions& options = {});

}  // namespace uscope
