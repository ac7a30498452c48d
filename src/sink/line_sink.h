#pragma once
// The output of an event command (http, tls, stat) in one format: a header (text only), a line
// per record or interval, a summary at the end. Each command's sink function (http_sink,
// tls_sink, go_stat_sink) picks the format's renderers once, through line_sink(), so no command
// chooses per line.
#include <string>
#include <utility>

#include "sink/output_format.h"

namespace uscope {

template <class Line, class Summary>
struct LineSink {
  std::string header;  // before the first line; "" in JSON Lines
  Line line;
  Summary summary;
};

// The one choice of a format's renderers: JSON Lines' for OutputFormat::Json, else the text ones.
template <class Line, class Summary>
LineSink<Line, Summary> line_sink(OutputFormat format, LineSink<Line, Summary> text,
                                  LineSink<Line, Summary> json) {
  return format == OutputFormat::Json ? std::move(json) : std::move(text);
}

}  // namespace uscope
