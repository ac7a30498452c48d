#pragma once
// The tables of `uscope calls` and `uscope objnew` (bcc's ucalls and uobjnew): the in-kernel
// aggregation's rows (model/map_table.h) keyed by a method's or a type's name parts, shown as one
// name per row, joined as its runtime writes it, with the calls' time under -L.
#include <cstdio>
#include <string_view>

#include "model/map_table.h"
#include "plan/runtime.h"
#include "sink/output_format.h"

namespace uscope {

struct TallyView {
  const Runtime* runtime = nullptr;
  std::string_view kind;     // JSON's `kind`: "calls", "objects"
  std::string_view heading;  // the name column: "METHOD", "CLASS"
  std::string_view counted;  // the count column: "CALLS", "OBJECTS"
  bool timed = false;        // the rows' sums are nanoseconds of calls (calls -L)
  bool by_time = false;      // sort by the time, not the count
};

// Largest last (the top stays on screen), the `table.top` largest; every loss said.
void print_tally(MapTable table, const TallyView& view, OutputFormat format, std::FILE* out);

}  // namespace uscope
