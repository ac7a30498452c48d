// The unwind table builder reads .eh_frame / .debug_frame (through libdw and uscope's own FDE
// range decoder) and .gopclntab's SP deltas from whatever binary is profiled: it must survive any
// bytes, and the table it returns must keep its promises (sorted, distinct neighbours, closed by
// a NONE row).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "discover/gopclntab.h"
#include "discover/unwind_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto elf = uscope::ElfFile::from_memory(std::vector<uint8_t>(data, data + size), "fuzz");
  if (!elf) return 0;
  uscope::UnwindBuildOptions options;
  auto go = uscope::GoPclntab::read(*elf);
  if (go && *go) options.go = &**go;
  auto t = uscope::build_unwind_table(*elf, options);
  if (!t) return 0;
  const auto& rows = t->rows;
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].vaddr <= rows[i - 1].vaddr || rows[i].rule == rows[i - 1].rule) __builtin_trap();
  if (!rows.empty() && rows.back().rule.cfa != UNWIND_CFA_NONE) __builtin_trap();
  return 0;
}
