#pragma once
// What `uscope tls` shows of a payload: text as text, anything else as hex, and the values of
// credential headers (Authorization, Proxy-Authorization, Cookie, Set-Cookie) redacted unless
// asked not to. Pure functions of the bytes a probe captured (untrusted: fuzzed in
// fuzz/tls_payload_fuzz.cc).
#include <cstddef>
#include <string>
#include <string_view>

namespace uscope {

// Whether `data` reads as text: UTF-8 (a sequence cut at the end counts, as the capture may end
// in one) with no control characters but tab, CR and LF.
bool payload_is_text(std::string_view data);

// `text` with the value of every credential header line replaced by "[redacted N bytes]";
// `redacted` counts the values replaced. Header lines are found anywhere in the text, at the
// start or after a LF, so that a request's headers are redacted also when its request line came
// in another call.
std::string redact_headers(std::string_view text, size_t& redacted);

// Text lines for a person: each line of `text` after `indent`, CR before LF dropped, any other
// control character as \xNN; ends with a newline.
std::string payload_text_lines(std::string_view text, std::string_view indent);

// A hex dump, 16 bytes a line: "0000  16 03 01 00 2a ...  |....*...|".
std::string payload_hex_lines(std::string_view data, std::string_view indent);

// Lowercase hex of every byte, for JSON.
std::string payload_hex(std::string_view data);

}  // namespace uscope
