// A code object's line table is read from the target's memory, so the decoder must survive any
// bytes and keep its promises: ranges in order, never empty, and the line of an instruction the
// one of the range that holds it. Input: one byte picks the format (3.11+ locations, 3.10
// linetable, <= 3.9 lnotab), two the first line (little-endian, signed), the rest is the table.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "symbolize/python_code.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  using uscope::PythonLineTable;
  auto kind = data[0] % 3 == 0   ? PythonLineTable::Locations
              : data[0] % 3 == 1 ? PythonLineTable::Linetable
                                 : PythonLineTable::Lnotab;
  int16_t first = 0;
  std::memcpy(&first, data + 1, 2);
  std::span<const uint8_t> table(data + 3, size - 3);
  auto ranges = uscope::decode_python_line_table(kind, first, table);
  uint32_t end = 0;
  for (const auto& r : ranges) {
    if (r.start >= r.end || r.start < end) __builtin_trap();
    // The location table has no gaps: each entry starts where the last ended.
    if (kind == PythonLineTable::Locations && r.start != end) __builtin_trap();
    end = r.end;
  }
  for (const auto& r : ranges) {
    // The first range holding an instruction gives its line.
    const uscope::PythonLineRange* holder = nullptr;
    for (const auto& h : ranges)
      if (r.start >= h.start && r.start < h.end) {
        holder = &h;
        break;
      }
    if (holder != &r) __builtin_trap();
    if (uscope::python_line_of(kind, first, table, r.start) != r.line) __builtin_trap();
  }
  if (ranges.empty() && uscope::python_line_of(kind, first, table, 0) != -1) __builtin_trap();
  return 0;
}
