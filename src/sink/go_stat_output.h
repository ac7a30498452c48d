#pragma once
// `uscope stat`'s output for Go programs: a line (or a JSON object) per interval, and a summary
// at the end with every loss the session counted.
#include <string>
#include <string_view>

#include "model/go_stat.h"
#include "sink/line_sink.h"

namespace uscope {

// The column header of the text lines.
std::string go_stat_text_header();
// One interval, rates per second: "20:15:01  1052  2311  2298  1  2  0.312 ms  0.201 ms", or a
// JSON object (kind "interval") with the counts of the interval and its length. `clock` is the
// wall-clock time at its end ("20:15:01").
std::string go_stat_text_line(const GoStatInterval& i, std::string_view clock);
std::string go_stat_json_line(const GoStatInterval& i, std::string_view clock);

// What the session saw in total, pause percentiles and a line of losses; `stop` says why it ended.
struct GoStatSummary {
  std::string object;
  std::string go_version;
  std::string stop;
  std::string no_goroutines;  // why live goroutines are unknown ("" when known)
};
std::string go_stat_text_summary(const GoRuntimeStats& s, const GoStatLosses& l,
                                 const GoStatSummary& about);
std::string go_stat_json_summary(const GoRuntimeStats& s, const GoStatLosses& l,
                                 const GoStatSummary& about);

using GoStatSink =
    LineSink<std::string (*)(const GoStatInterval&, std::string_view),
             std::string (*)(const GoRuntimeStats&, const GoStatLosses&, const GoStatSummary&)>;
GoStatSink go_stat_sink(OutputFormat format);

}  // namespace uscope
