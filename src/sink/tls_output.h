#pragma once
// `uscope tls`'s output: a header line per TLS call (time, process, function, direction, bytes,
// connection) with its payload under it, or a JSON object per call; and the totals and losses at
// the end, text or JSON.
#include <cstdint>
#include <string>
#include <string_view>

#include "model/tls_records.h"
#include "sink/line_sink.h"

namespace uscope {

struct TlsRender {
  uint64_t start_ns = 0;  // bpf_ktime_get_ns() clock at the session's start: TIME counts from it
  size_t max_bytes = 0;   // --max-bytes, named where a payload was cut
  bool redact = true;     // credential header values redacted (--no-redact: false)
};

std::string tls_text_header();
std::string tls_text_record(const TlsRecord& r, const TlsRender& how);
std::string tls_json_record(const TlsRecord& r, const TlsRender& how);

// `stop` says why the session ended ("stopped by SIGINT").
std::string tls_text_summary(const TlsTotals& t, const TlsLosses& l, std::string_view stop);
std::string tls_json_summary(const TlsTotals& t, const TlsLosses& l, std::string_view stop);

using TlsSink = LineSink<std::string (*)(const TlsRecord&, const TlsRender&),
                         std::string (*)(const TlsTotals&, const TlsLosses&, std::string_view)>;
TlsSink tls_sink(OutputFormat format);

}  // namespace uscope
