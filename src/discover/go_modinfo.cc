// Go's module info text, read line by line the way runtime/debug.ParseBuildInfo reads it (Go
// 1.18+; older releases wrote the same lines without build settings). Lines of other kinds are
// ignored, as Go ignores them: Go 1.19 writes an empty line after each replacement.
#include "discover/go_modinfo.h"

#include <fmt/core.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uscope {
namespace {

constexpr std::string_view kPathLine = "path\t";
constexpr std::string_view kModLine = "mod\t";
constexpr std::string_view kDepLine = "dep\t";
constexpr std::string_view kReplaceLine = "=>\t";
constexpr std::string_view kBuildLine = "build\t";

// runtime/debug's quoteKey and quoteValue: what String() quotes, and what ParseBuildInfo refuses
// to see unquoted.
bool key_needs_quotes(std::string_view key) {
  return key.empty() || key.find_first_of("= \t\r\n\"`") != std::string_view::npos;
}
bool value_needs_quotes(std::string_view value) {
  return value.find_first_of(" \t\r\n\"`") != std::string_view::npos;
}

// Go's one-letter escapes: `\n` stands for kEscapedBytes[kEscapeLetters.find('n')].
constexpr std::string_view kEscapeLetters = "abfnrtv\\\"";
constexpr std::string_view kEscapedBytes = "\a\b\f\n\r\t\v\\\"";

std::vector<std::string_view> split_tabs(std::string_view s) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t tab = s.find('\t');
    out.push_back(s.substr(0, tab));
    if (tab == std::string_view::npos) return out;
    s.remove_prefix(tab + 1);
  }
}

std::optional<uint32_t> hex_digits(std::string_view s, size_t pos, size_t n) {
  if (pos > s.size() || s.size() - pos < n) return std::nullopt;
  uint32_t v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    const char c = s[i];
    uint32_t d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    v = v * 16 + d;
  }
  return v;
}

void append_utf8(std::string& out, uint32_t r) {
  if (r < 0x80) {
    out += static_cast<char>(r);
  } else if (r < 0x800) {
    out += static_cast<char>(0xc0 | (r >> 6));
    out += static_cast<char>(0x80 | (r & 0x3f));
  } else if (r < 0x10000) {
    out += static_cast<char>(0xe0 | (r >> 12));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (r & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (r >> 18));
    out += static_cast<char>(0x80 | ((r >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (r & 0x3f));
  }
}

// One escape of a double-quoted Go string at s[pos] (just past the backslash), as strconv reads
// it, appended to `out`; advances `pos`. False for an escape Go refuses.
bool take_escape(std::string_view s, size_t& pos, std::string& out) {
  if (pos >= s.size()) return false;
  const char c = s[pos++];
  if (const size_t i = kEscapeLetters.find(c); i != std::string_view::npos) {
    out += kEscapedBytes[i];
    return true;
  }
  switch (c) {
    case 'x': {
      auto v = hex_digits(s, pos, 2);
      if (!v) return false;
      pos += 2;
      out += static_cast<char>(*v);
      return true;
    }
    case 'u':
    case 'U': {
      const size_t n = c == 'u' ? 4 : 8;
      auto v = hex_digits(s, pos, n);
      // Surrogates and values past U+10FFFF are not runes.
      if (!v || *v > 0x10ffff || (*v >= 0xd800 && *v <= 0xdfff)) return false;
      pos += n;
      append_utf8(out, *v);
      return true;
    }
    default:
      break;
  }
  if (c >= '0' && c <= '7') {  // \ooo: exactly three octal digits, at most \377
    if (s.size() - pos < 2) return false;
    uint32_t v = c - '0';
    for (size_t i = 0; i < 2; ++i) {
      const char d = s[pos + i];
      if (d < '0' || d > '7') return false;
      v = v * 8 + (d - '0');
    }
    if (v > 0xff) return false;
    pos += 2;
    out += static_cast<char>(v);
    return true;
  }
  return false;
}

// The Go string literal ("..." or `...`) at the start of `s`, unquoted into `out`: how many bytes
// it spans, or nullopt when `s` does not start with a valid one (strconv.QuotedPrefix).
std::optional<size_t> take_quoted(std::string_view s, std::string& out) {
  out.clear();
  if (s.empty()) return std::nullopt;
  if (s[0] == '`') {
    const size_t end = s.find('`', 1);
    if (end == std::string_view::npos) return std::nullopt;
    for (char c : s.substr(1, end - 1)) {
      if (c != '\r') out += c;  // Go drops carriage returns from raw strings
    }
    return end + 1;
  }
  if (s[0] != '"') return std::nullopt;
  size_t pos = 1;
  while (pos < s.size()) {
    const char c = s[pos++];
    if (c == '"') return pos;
    if (c == '\n') return std::nullopt;
    if (c == '\\') {
      if (!take_escape(s, pos, out)) return std::nullopt;
    } else {
      out += c;
    }
  }
  return std::nullopt;
}

// strconv.Unquote: `s` must be one whole literal.
std::optional<std::string> unquote(std::string_view s) {
  std::string out;
  auto n = take_quoted(s, out);
  if (!n || *n != s.size()) return std::nullopt;
  return out;
}

// A "build\t" line's `key=value`; nullopt with `why` set when Go would refuse it.
std::optional<GoBuildSetting> parse_setting(std::string_view kv, std::string& why) {
  if (kv.empty()) {
    why = "build line missing '='";
    return std::nullopt;
  }
  GoBuildSetting s;
  std::string_view raw_value;
  if (kv[0] == '=') {
    why = "build line with missing key";
    return std::nullopt;
  }
  if (kv[0] == '"' || kv[0] == '`') {
    auto n = take_quoted(kv, s.key);
    if (!n) {
      why = "invalid quoted key in build line";
      return std::nullopt;
    }
    if (*n == kv.size()) {
      why = "build line missing '=' after quoted key";
      return std::nullopt;
    }
    if (kv[*n] != '=') {
      why = fmt::format("unexpected character after quoted key: {}",
                        go_setting_text(kv.substr(*n, 1), false));
      return std::nullopt;
    }
    raw_value = kv.substr(*n + 1);
  } else {
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) {
      why = "build line missing '=' after key";
      return std::nullopt;
    }
    s.key = kv.substr(0, eq);
    if (key_needs_quotes(s.key)) {
      why = fmt::format("unquoted key {} must be quoted", go_setting_text(s.key, true));
      return std::nullopt;
    }
    raw_value = kv.substr(eq + 1);
  }
  if (!raw_value.empty() && (raw_value[0] == '"' || raw_value[0] == '`')) {
    auto v = unquote(raw_value);
    if (!v) {
      why = "invalid quoted value in build line";
      return std::nullopt;
    }
    s.value = std::move(*v);
  } else {
    if (value_needs_quotes(raw_value)) {
      why = fmt::format("unquoted value {} must be quoted", go_setting_text(raw_value, false));
      return std::nullopt;
    }
    s.value = raw_value;
  }
  return s;
}

// "mod"/"dep" columns: path, version and an optional sum.
std::optional<GoModule> parse_module(std::string_view rest, std::string& why) {
  const auto cols = split_tabs(rest);
  if (cols.size() != 2 && cols.size() != 3) {
    why = fmt::format("expected 2 or 3 columns; got {}", cols.size());
    return std::nullopt;
  }
  GoModule m;
  m.path = cols[0];
  m.version = cols[1];
  if (cols.size() == 3) m.sum = cols[2];
  return m;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

const std::string* GoModInfo::setting(std::string_view key) const {
  for (auto it = settings.rbegin(); it != settings.rend(); ++it) {
    if (it->key == key) return &it->value;
  }
  return nullptr;
}

GoModInfo parse_go_modinfo(std::string_view text) {
  GoModInfo info;
  // The module a "=>" line replaces: that of the line before, if it was "mod" or "dep" (Go
  // allows one replacement per module). Points into `info`, whose deps grow only on "dep" lines,
  // which set it again.
  GoModule* last = nullptr;
  size_t skipped = 0;
  size_t line_no = 0;
  auto problem = [&](const std::string& why) {
    if (++skipped <= GoModInfo::kMaxProblems) {
      info.problems.push_back(fmt::format("line {}: {}", line_no, why));
    }
  };

  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_no;
    std::string why;
    if (starts_with(line, kPathLine)) {
      info.path = line.substr(kPathLine.size());
    } else if (starts_with(line, kModLine)) {
      auto m = parse_module(line.substr(kModLine.size()), why);
      if (!m) {
        problem(why);
        last = nullptr;  // a "=>" next replaces this module, not the one before
        continue;
      }
      info.main = std::move(*m);
      last = &*info.main;
    } else if (starts_with(line, kDepLine)) {
      auto m = parse_module(line.substr(kDepLine.size()), why);
      if (!m) {
        problem(why);
        last = nullptr;  // a "=>" next replaces this module, not the one before
        continue;
      }
      info.deps.push_back(std::move(*m));
      last = &info.deps.back();
    } else if (starts_with(line, kReplaceLine)) {
      const auto cols = split_tabs(line.substr(kReplaceLine.size()));
      if (cols.size() != 3) {
        problem(fmt::format("expected 3 columns for replacement; got {}", cols.size()));
        continue;
      }
      if (!last) {
        problem("replacement with no module on the line before");
        continue;
      }
      last->replace =
          GoModuleVersion{std::string(cols[0]), std::string(cols[1]), std::string(cols[2])};
      last = nullptr;
    } else if (starts_with(line, kBuildLine)) {
      auto s = parse_setting(line.substr(kBuildLine.size()), why);
      if (!s) {
        problem(why);
        continue;
      }
      info.settings.push_back(std::move(*s));
    }
  }
  if (skipped > GoModInfo::kMaxProblems) {
    info.problems.back() =
        fmt::format("{} more lines skipped", skipped - GoModInfo::kMaxProblems + 1);
  }
  return info;
}

std::string go_setting_text(std::string_view s, bool is_key) {
  bool control = false;
  for (unsigned char c : s) control |= c < 0x20 || c == 0x7f;
  if (!control && !(is_key ? key_needs_quotes(s) : value_needs_quotes(s))) return std::string(s);
  // strconv.Quote, for the bytes that occur in practice: the usual escapes, \xHH for other
  // control bytes; UTF-8 is kept as it is.
  std::string out = "\"";
  for (unsigned char c : s) {
    if (const size_t i = kEscapedBytes.find(static_cast<char>(c)); i != std::string_view::npos) {
      out += '\\';
      out += kEscapeLetters[i];
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

}  // namespace uscope
