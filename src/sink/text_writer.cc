#include "sink/text_writer.h"

namespace uscope {

namespace {

constexpr char kHex[] = "0123456789abcdef";

bool printable(unsigned char c) {
  return c >= 0x20 && c < 0x7f && c != '\\';
}

// The letter of a one-letter backslash escape both the text and the JSON form use, or 0.
char short_escape(unsigned char c) {
  switch (c) {
    case '\\':
      return '\\';
    case '\n':
      return 'n';
    case '\r':
      return 'r';
    case '\t':
      return 't';
    default:
      return 0;
  }
}

// Length of the valid UTF-8 sequence starting `s` (a byte >= 0x80), or 0 when it is not one.
size_t utf8_sequence(std::string_view s) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
    return i < s.size() && b(i) >= lo && b(i) <= hi;
  };
  unsigned char c = b(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;  // no UTF-16 surrogates
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

}  // namespace

void append_padded(OutputBuffer& out, std::string_view s, size_t width, bool left) {
  size_t pad = s.size() < width ? width - s.size() : 0;
  if (!left) out.append_repeated(' ', pad);
  out.append(s);
  if (left) out.append_repeated(' ', pad);
}

size_t printable_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += printable(c) ? 1 : short_escape(c) ? 2 : 4;
  return n;
}

void append_printable(OutputBuffer& out, std::string_view s) {
  char* p = out.reserve(4 * s.size());
  char* start = p;
  for (unsigned char c : s) {
    if (printable(c)) {
      *p++ = static_cast<char>(c);
      continue;
    }
    *p++ = '\\';
    if (char e = short_escape(c)) {
      *p++ = e;
    } else {
      *p++ = 'x';
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 15];
    }
  }
  out.commit(static_cast<size_t>(p - start));
}

bool json_plain(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
  return true;
}

void append_json_string(OutputBuffer& out, std::string_view s) {
  // Worst case: every byte a \u00XX (6 bytes) or U+FFFD as \ufffd.
  char* p = out.reserve(6 * s.size() + 2);
  char* start = p;
  *p++ = '"';
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *p++ = static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t n = utf8_sequence(s.substr(i));
      if (n == 0) {
        for (char e : std::string_view("\\ufffd")) *p++ = e;
        ++i;
      } else {
        for (size_t k = 0; k < n; ++k) *p++ = s[i + k];
        i += n;
      }
      continue;
    }
    *p++ = '\\';
    if (char e = c == '"' ? '"' : c == '\b' ? 'b' : c == '\f' ? 'f' : short_escape(c)) {
      *p++ = e;
    } else {
      for (char x : std::string_view("u00")) *p++ = x;
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 15];
    }
    ++i;
  }
  *p++ = '"';
  out.commit(static_cast<size_t>(p - start));
}

}  // namespace uscope
