#pragma once
// `uscope http`'s output: a line (or a JSON object) per request, and the RED summary per route at
// the end, text or JSON, with every loss the session counted.
#include <string>
#include <string_view>

#include "model/http_red.h"
#include "sink/line_sink.h"

namespace uscope {

// The column header of the text lines.
std::string http_text_header();
// One exchange: "server GET     200     0.084 ms  /items/apple", or a JSON object with stable
// field names (kind "request"). Both end in a newline.
std::string http_text_line(const HttpExchange& x);
std::string http_json_line(const HttpExchange& x);

// The RED table per route (count, errors, p50/p90/p99/max) and a line of losses; `stop` says
// why the session ended ("stopped by SIGINT").
std::string http_text_summary(const HttpRed& red, const HttpLosses& losses, std::string_view stop);
// The same as one JSON object (kind "summary"), with a "losses" object holding every counter.
std::string http_json_summary(const HttpRed& red, const HttpLosses& losses, std::string_view stop);

// "0.084 ms", "12.500 ms", "1.204 s".
using HttpSink = LineSink<std::string (*)(const HttpExchange&),
                          std::string (*)(const HttpRed&, const HttpLosses&, std::string_view)>;
HttpSink http_sink(OutputFormat format);

std::string duration_text(uint64_t ns);

}  // namespace uscope
