#pragma once
// The pieces events are formatted from, appended straight to an OutputBuffer: decimal and hex
// numbers, padding, bytes made printable, JSON strings. Hand-written rather than fmt or
// nlohmann-json because the event path must call no libc function a user may be probing
// (malloc, memcpy, str*: fmt copies with memmove, a JSON DOM allocates per value) and must format
// over a million events per second.
#include <cstdint>
#include <string_view>

#include "util/output_buffer.h"

namespace uscope {

// Longest decimal of a u64 plus a sign.
inline constexpr size_t kMaxDecimal = 21;

// Digits of `v` written backwards ending at `end`; returns where they start.
inline char* decimal_backwards(uint64_t v, char* end) {
  do {
    *--end = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  return end;
}

inline void append_decimal(OutputBuffer& out, uint64_t v) {
  char buf[kMaxDecimal];
  char* end = buf + sizeof(buf);
  char* p = decimal_backwards(v, end);
  out.append(std::string_view(p, static_cast<size_t>(end - p)));
}

inline void append_signed(OutputBuffer& out, int64_t v) {
  if (v < 0) out.append('-');
  append_decimal(out, v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
}

// `s` then spaces up to `width` (left-aligned), or spaces first (right-aligned).
void append_padded(OutputBuffer& out, std::string_view s, size_t width, bool left);

// Bytes shown to a person: printable ASCII kept, `\` as `\\`, \n \r \t, the rest as \xNN.
void append_printable(OutputBuffer& out, std::string_view s);
size_t printable_length(std::string_view s);

// A JSON string with its quotes. Valid UTF-8 is kept; a byte that does not start a valid UTF-8
// sequence becomes U+FFFD (what nlohmann-json's `replace` does), so the line always parses.
void append_json_string(OutputBuffer& out, std::string_view s);
// True when `s` can go into a JSON string as it is (printable ASCII without `"` and `\`).
bool json_plain(std::string_view s);

}  // namespace uscope
