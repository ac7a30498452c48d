#include "sink/tls_payload.h"

#include <fmt/core.h>

#include <array>
#include <cctype>

namespace uscope {

namespace {

// Bytes of the UTF-8 sequence starting with `c`; 0 for a byte that cannot start one.
size_t utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return 2;
  if (c >= 0xe0 && c <= 0xef) return 3;
  if (c >= 0xf0 && c <= 0xf4) return 4;
  return 0;
}

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

constexpr std::array<std::string_view, 4> kCredentialHeaders = {
    "authorization:", "proxy-authorization:", "cookie:", "set-cookie:"};

}  // namespace

bool payload_is_text(std::string_view data) {
  for (size_t i = 0; i < data.size();) {
    auto c = static_cast<unsigned char>(data[i]);
    if (c < 0x20 && c != '\t' && c != '\r' && c != '\n') return false;
    if (c == 0x7f) return false;
    size_t n = utf8_length(c);
    if (n == 0) return false;
    for (size_t k = 1; k < n; ++k) {
      if (i + k >= data.size()) return true;  // cut at the end of the capture
      if ((static_cast<unsigned char>(data[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string redact_headers(std::string_view text, size_t& redacted) {
  redacted = 0;
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    std::string_view value;
    size_t name_len = 0;
    for (std::string_view h : kCredentialHeaders)
      if (iequals_prefix(line, h)) {
        name_len = h.size();
        break;
      }
    if (name_len) {
      size_t start = name_len;
      while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
      size_t end = line.size();
      if (end > start && line[end - 1] == '\r') --end;
      out.append(line.substr(0, start));
      if (end > start) {
        out += fmt::format("[redacted {} bytes]", end - start);
        ++redacted;
      }
      out.append(line.substr(end));
    } else {
      out.append(line);
    }
    if (eol == std::string_view::npos) break;
    out += '\n';
    pos = eol + 1;
  }
  return out;
}

std::string payload_text_lines(std::string_view text, std::string_view indent) {
  std::string out;
  bool line_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (line_start) out.append(indent);
    line_start = false;
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (c == '\n') {
      out += '\n';
      line_start = true;
    } else if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  if (!line_start) out += '\n';
  return out;
}

std::string payload_hex_lines(std::string_view data, std::string_view indent) {
  std::string out;
  for (size_t off = 0; off < data.size(); off += 16) {
    out.append(indent);
    out += fmt::format("{:04x} ", off);
    std::string ascii;
    for (size_t i = 0; i < 16; ++i) {
      if (off + i < data.size()) {
        auto c = static_cast<unsigned char>(data[off + i]);
        out += fmt::format(" {:02x}", c);
        ascii += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
      } else {
        out += "   ";
      }
    }
    out += "  |" + ascii + "|\n";
  }
  return out;
}

std::string payload_hex(std::string_view data) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(data.size() * 2);
  for (char ch : data) {
    auto c = static_cast<unsigned char>(ch);
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

}  // namespace uscope
