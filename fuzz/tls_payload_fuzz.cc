// What `uscope tls` prints of a payload is bytes a traced process sent or received: any bytes at
// all. Text detection, header redaction and both renderings must survive them, and redaction must
// never let a credential header's value through.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sink/tls_payload.h"

namespace {

bool iequals_prefix(std::string_view s, std::string_view p) {
  if (s.size() < p.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = (s[i] >= 'A' && s[i] <= 'Z') ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != p[i]) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)uscope::payload_is_text(bytes);
  size_t redacted = 0;
  std::string out = uscope::redact_headers(bytes, redacted);
  // Every line of the result that is a credential header carries a redacted value or none.
  for (size_t pos = 0; pos <= out.size();) {
    size_t eol = out.find('\n', pos);
    std::string_view line(out.data() + pos, (eol == std::string::npos ? out.size() : eol) - pos);
    for (std::string_view h : {"authorization:", "cookie:", "set-cookie:"})
      if (iequals_prefix(line, h)) {
        std::string_view value = line.substr(h.size());
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
          value.remove_prefix(1);
        if (!value.empty() && value.back() == '\r') value.remove_suffix(1);
        if (!value.empty() && !value.starts_with("[redacted ")) __builtin_trap();
      }
    if (eol == std::string::npos) break;
    pos = eol + 1;
  }
  (void)uscope::payload_text_lines(bytes, "  ");
  (void)uscope::payload_hex_lines(bytes.substr(0, 4096), "  ");
  (void)uscope::payload_hex(bytes);
  return 0;
}
