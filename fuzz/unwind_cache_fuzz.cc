// Unwind cache files are read back from a directory other processes can write (and disks can
// corrupt): the parser must survive any bytes, and a table it accepts must keep the promises the
// BPF side relies on (sorted, distinct neighbours, kinds in range, closed by a NONE row) and
// serialize back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "discover/unwind_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto t = uscope::parse_unwind_table(bytes);
  if (!t) return 0;
  const auto& rows = t->rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].rule.cfa > UNWIND_CFA_UNSUPPORTED || rows[i].rule.rbp > UNWIND_RBP_UNDEFINED)
      __builtin_trap();
    if (i > 0 && (rows[i].vaddr <= rows[i - 1].vaddr || rows[i].rule == rows[i - 1].rule))
      __builtin_trap();
  }
  if (!rows.empty() && rows.back().rule.cfa != UNWIND_CFA_NONE) __builtin_trap();
  auto again = uscope::parse_unwind_table(uscope::serialize_unwind_table(*t));
  if (!again || again->rows != rows || again->source != t->source) __builtin_trap();
  return 0;
}
