// A method's compressed line number table is read from a JVM's memory, so its decoder must survive
// any bytes and keep its promises: at most one pair per byte read, the line of a bci one of the
// table's lines (or -1), and the line of a bci that has a pair that pair's line when it is the
// first at that bci. Input: one byte picks the UNSIGNED5 flavour (excluded bytes 0 or 1), the
// rest is the table.
#include <cstddef>
#include <cstdint>
#include <span>

#include "symbolize/hotspot_streams.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t excluded = data[0] & 1;
  std::span<const uint8_t> table(data + 1, size - 1);
  auto pairs = uscope::decode_hotspot_line_table(table, excluded);
  if (pairs.size() > table.size()) __builtin_trap();
  for (size_t i = 0; i < pairs.size(); ++i) {
    bool first = true;
    for (size_t j = 0; j < i; ++j) first &= pairs[j].bci != pairs[i].bci;
    int line = uscope::hotspot_line_of(table, excluded, pairs[i].bci);
    if (first && line != pairs[i].line) __builtin_trap();
  }
  for (int bci : {-1, 0, 1, 100, 65535}) {
    int line = uscope::hotspot_line_of(table, excluded, bci);
    if (line == -1) continue;
    bool found = false;
    for (const auto& p : pairs) found |= p.line == line;
    if (!found) __builtin_trap();
  }
  return 0;
}
