#include "sink/message_format.h"

#include "sink/text_writer.h"

namespace uscope {

namespace {

// Format text that is not a conversion, with "%%" turned into "%".
std::string literal_of(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '%' && i + 1 < text.size() && text[i + 1] == '%') ++i;
  }
  return out;
}

constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // "…"

}  // namespace

MessageFormat::MessageFormat(const ProbeSpec& spec) {
  const std::string& format = spec.format;
  size_t pos = 0;
  for (const auto& c : spec.conversions) {
    if (c.format_pos < pos || c.format_pos + c.format_len > format.size()) break;
    Piece p;
    p.literal = literal_of(std::string_view(format).substr(pos, c.format_pos - pos));
    p.conversion = true;
    p.conv = c.conv;
    p.bits = c.length == "hh" ? 8 : c.length == "h" ? 16 : c.length.empty() ? 32 : 64;
    // flags, width, precision as the spec parser validated them: [-+ #0]* digits* (.digits*)?
    size_t i = 0;
    const std::string& f = c.flags;
    for (; i < f.size(); ++i) {
      char ch = f[i];
      if (ch == '-')
        p.left = true;
      else if (ch == '+')
        p.plus = true;
      else if (ch == ' ')
        p.space = true;
      else if (ch == '#')
        p.alt = true;
      else if (ch == '0')
        p.zero = true;
      else
        break;
    }
    for (; i < f.size() && f[i] >= '0' && f[i] <= '9'; ++i) p.width = p.width * 10 + (f[i] - '0');
    if (i < f.size() && f[i] == '.') {
      p.precision = 0;
      for (++i; i < f.size() && f[i] >= '0' && f[i] <= '9'; ++i)
        p.precision = p.precision * 10 + (f[i] - '0');
    }
    pieces_.push_back(std::move(p));
    pos = c.format_pos + c.format_len;
  }
  if (pos < format.size()) {
    Piece tail;
    tail.literal = literal_of(std::string_view(format).substr(pos));
    pieces_.push_back(std::move(tail));
  }
}

void MessageFormat::render_number(const Piece& p, uint64_t v, OutputBuffer& out) const {
  if (p.conv == 'c') {
    char ch = static_cast<char>(v & 0xff);
    append_padded(out, std::string_view(&ch, 1), p.width, p.left);
    return;
  }
  uint64_t mask = p.bits == 64 ? ~uint64_t{0} : (uint64_t{1} << p.bits) - 1;
  bool is_signed = p.conv == 'd' || p.conv == 'i' || p.conv == 'v';
  bool negative = false;
  uint64_t magnitude = v & mask;
  if (is_signed && p.bits < 64 && (magnitude >> (p.bits - 1)))
    negative = true, magnitude = (~magnitude + 1) & mask;
  else if (is_signed && p.bits == 64 && static_cast<int64_t>(v) < 0)
    negative = true, magnitude = 0 - v;
  const char* prefix = "";
  int precision = p.precision;
  // %U and %K that were not symbolized show the address, as %p does.
  bool pointer = p.conv == 'p' || p.conv == 'U' || p.conv == 'K';
  bool hex = p.conv == 'x' || p.conv == 'X' || pointer;
  if (pointer) {
    magnitude = v;
    // glibc prints a null pointer as "(nil)".
    if (v == 0) return append_padded(out, "(nil)", p.width, p.left);
    prefix = "0x";
  } else if (p.alt && hex && magnitude != 0) {
    prefix = p.conv == 'X' ? "0X" : "0x";
  }
  if (negative)
    prefix = "-";
  else if (is_signed && p.plus)
    prefix = "+";
  else if (is_signed && p.space)
    prefix = " ";

  char buf[kMaxDecimal + 2];
  char* end = buf + sizeof(buf);
  char* digits = end;
  if (hex) {
    const char* set = p.conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    uint64_t x = magnitude;
    do {
      *--digits = set[x & 15];
      x >>= 4;
    } while (x);
  } else {
    digits = decimal_backwards(magnitude, end);
  }
  size_t n_digits = static_cast<size_t>(end - digits);
  if (precision == 0 && magnitude == 0) n_digits = 0;  // C: "%.0d" of 0 prints nothing
  size_t zeros = precision > 0 && static_cast<size_t>(precision) > n_digits
                     ? static_cast<size_t>(precision) - n_digits
                     : 0;
  size_t prefix_len = std::string_view(prefix).size();
  size_t len = prefix_len + zeros + n_digits;
  size_t pad = p.width > len ? p.width - len : 0;
  // The 0 flag pads with zeros after the sign, unless left-aligned or a precision is given.
  bool zero_pad = p.zero && !p.left && precision < 0;
  if (!p.left && !zero_pad) out.append_repeated(' ', pad);
  out.append(std::string_view(prefix, prefix_len));
  if (zero_pad) out.append_repeated('0', pad);
  out.append_repeated('0', zeros);
  out.append(std::string_view(end - n_digits, n_digits));
  if (p.left) out.append_repeated(' ', pad);
}

void MessageFormat::render(std::span<const DecodedValue> values, OutputBuffer& out) const {
  size_t k = 0;
  for (const auto& p : pieces_) {
    out.append(p.literal);
    if (!p.conversion) continue;
    if (k >= values.size()) {
      out.append('?');
      ++k;
      continue;
    }
    const DecodedValue& v = values[k++];
    if ((p.conv == 'U' || p.conv == 'K') && !v.symbol.empty()) {
      append_padded(out, v.symbol, p.width, p.left);
      continue;
    }
    if (p.conv != 's' && !(p.conv == 'v' && v.is_string)) {
      render_number(p, v.number, out);
      continue;
    }
    // The precision cuts the printable form (what snprintf did with it); "…" is not cut.
    size_t shown = printable_length(v.text);
    size_t cut = p.precision >= 0 && shown > static_cast<size_t>(p.precision)
                     ? static_cast<size_t>(p.precision)
                     : shown;
    size_t total = cut + (v.truncated ? 1 : 0);
    size_t pad = p.width > total ? p.width - total : 0;
    if (!p.left) out.append_repeated(' ', pad);
    size_t mark = out.pending();
    append_printable(out, v.text);
    out.truncate(mark + cut);
    if (v.truncated) out.append(kEllipsis);
    if (p.left) out.append_repeated(' ', pad);
  }
}

}  // namespace uscope
