// The probe head, [kind:][target:][provider:]function[+offset], and the public entry points.
#include "plan/probe_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/probe_parse.h"

namespace uscope {

namespace {

using probe_detail::column_of;
using probe_detail::is_digit;
using probe_detail::is_ident_char;
using probe_detail::is_space;
using probe_detail::printable;
using probe_detail::spec_error;

enum class Mode { Trace, Pattern };

// One ':'-separated field of the head. Inside a field "::" is C++/Rust scope, not a separator,
// and a field in double quotes is taken literally: "ns::C::operator()(int)".
struct Field {
  std::string_view text;
  size_t pos;  // offset in the whole spec
  bool quoted = false;
  std::string_view offset{};  // a quoted function's "+0x10", written after the closing quote
  size_t offset_pos = 0;
};

bool is_kind(std::string_view f) {
  return f == "p" || f == "r" || f == "u";
}

// fnmatch's syntax, brackets' '!', '^' and '-' included.
bool is_glob_char(char c) {
  return std::string_view("*?[]!^-").find(c) != std::string_view::npos;
}

Result<uint64_t> parse_offset(std::string_view text, size_t pos) {
  if (text.empty())
    return spec_error(column_of(pos), "expected an offset after '+'", "write e.g. +0x10 or +16");
  bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  uint64_t base = hex ? 16 : 10;
  uint64_t value = 0;
  for (size_t i = hex ? 2 : 0; i < text.size(); ++i) {
    char c = text[i];
    uint64_t d = 0;
    if (is_digit(c))
      d = static_cast<uint64_t>(c - '0');
    else if (hex && c >= 'a' && c <= 'f')
      d = static_cast<uint64_t>(c - 'a' + 10);
    else if (hex && c >= 'A' && c <= 'F')
      d = static_cast<uint64_t>(c - 'A' + 10);
    else
      return spec_error(column_of(pos + i),
                        fmt::format("unexpected '{}' in the offset", printable(text.substr(i, 1))),
                        "write the offset in decimal (+16) or hex (+0x10)");
    if (value > (std::numeric_limits<uint64_t>::max() - d) / base)
      return spec_error(column_of(pos), "the offset does not fit in 64 bits",
                        "use an offset inside the function");
    value = value * base + d;
  }
  return value;
}

// Characters of unquoted C++ and Rust names beyond C's: scope, templates, destructors.
bool is_cxx_name_char(char c) {
  return c == ':' || c == '<' || c == '>' || c == ',' || c == '~';
}

// The end of a Go method receiver starting at `text[i]` == '(': "(*Store)" or "(Store)" in
// "main.(*Store).Get", "(*List[...])" for a generic type: right after a '.', closed before
// another '.'. npos when `text[i]` opens something else (a parameter list, a predicate).
size_t go_receiver_end(std::string_view text, size_t i) {
  if (i == 0 || text[i - 1] != '.' || i >= text.size() || text[i] != '(')
    return std::string_view::npos;
  size_t j = i + 1;
  if (j < text.size() && text[j] == '*') ++j;
  if (j >= text.size() ||
      !(is_ident_char(text[j]) && !std::isdigit(static_cast<unsigned char>(text[j]))))
    return std::string_view::npos;
  while (j < text.size() && (is_ident_char(text[j]) || text[j] == '[' || text[j] == ']' ||
                             text[j] == '.' || text[j] == ','))
    ++j;
  if (j + 1 < text.size() && text[j] == ')' && text[j + 1] == '.') return j + 1;
  return std::string_view::npos;
}

Result<void> check_name(const Field& f, std::string_view name, ProbeKind kind) {
  bool usdt = kind == ProbeKind::Usdt;
  size_t pos = f.pos;
  if (name.empty())
    return spec_error(
        column_of(pos), usdt ? "expected a USDT probe name" : "expected a function name",
        usdt ? "write e.g. u:/usr/bin/python3:python:function__entry" : "write e.g. p:c:malloc");
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    auto u = static_cast<unsigned char>(c);
    if (f.quoted && !usdt && u >= 0x20 && u != 0x7f) continue;  // a demangled signature
    // '.', '$' and '@' occur in real symbols: foo.cold, memcpy@GLIBC_2.14; '/' in Go's
    // package paths: net/http.Get.
    if (is_ident_char(c) ||
        (!usdt && (c == '.' || c == '$' || c == '@' || c == '/' || is_cxx_name_char(c))))
      continue;
    if (!usdt && c == '(') {  // a Go receiver: main.(*Store).Get
      if (size_t end = go_receiver_end(name, i); end != std::string_view::npos) {
        i = end - 1;
        continue;
      }
    }
    // trace takes globs too (bpftrace's uprobe:libc:str*): each function matched is a probe.
    if (is_glob_char(c)) continue;
    return spec_error(
        column_of(pos + i),
        fmt::format("unexpected '{}' in the {} name", printable(name.substr(i, 1)),
                    usdt ? "probe" : "function"),
        usdt ? "USDT probe names are letters, digits and '_'"
             : "symbol names are letters, digits, '_', '.', '$', '@' and C++'s "
               "'::', '<>'; quote other C++ names, e.g. p:./app:\"ns::C::operator()\"");
  }
  // "ns::C::operator()" unquoted stops at its '(' (a parameter list may follow a name).
  constexpr std::string_view kOperator = "operator";
  if (!usdt && !f.quoted && name.ends_with(kOperator) &&
      (name.size() == kOperator.size() || name.ends_with("::" + std::string(kOperator))))
    return spec_error(column_of(pos + name.size()), "quote C++ operator names",
                      fmt::format("write p:target:\"{}()\" or the operator with its parameters",
                                  printable(name)));
  return {};
}

// Splits what follows the probe kind into fields; returns where the head ends (a space, the '(' of
// a parameter list or predicate, or the '"' of a format).
Result<size_t> split_fields(std::string_view text, size_t p, std::vector<Field>& fields) {
  for (;;) {
    if (p < text.size() && text[p] == '"') {
      size_t close = text.find('"', p + 1);
      if (close == std::string_view::npos)
        return spec_error(column_of(p), "this quoted function name has no closing '\"'",
                          "close it: p:./app:\"ns::f(int)\"");
      Field f{text.substr(p + 1, close - p - 1), p + 1, true};
      p = close + 1;
      if (p < text.size() && text[p] == ':')
        return spec_error(column_of(p), "only the function name can be quoted",
                          "write kind:target:\"function\", e.g. p:./app:\"ns::f(int)\"");
      if (p < text.size() && text[p] == '+') {
        size_t q = p + 1;
        while (q < text.size() && !is_space(text[q]) && text[q] != '(' && text[q] != '"') ++q;
        f.offset = text.substr(p + 1, q - p - 1);
        f.offset_pos = p + 1;
        p = q;
        if (f.offset.empty())
          return spec_error(column_of(p), "expected an offset after '+'",
                            "write e.g. +0x10 or +16");
      }
      fields.push_back(f);
      return p;
    }
    size_t q = p;
    while (q < text.size() && !is_space(text[q]) && text[q] != '"') {
      if (text[q] == '(') {
        size_t end = go_receiver_end(text, q);
        if (end == std::string_view::npos) break;  // a parameter list or a predicate
        q = end;
        continue;
      }
      if (text[q] == ':') {
        if (q + 1 < text.size() && text[q + 1] == ':') {
          q += 2;
          continue;
        }
        break;
      }
      ++q;
    }
    fields.push_back({text.substr(p, q - p), p});
    if (q < text.size() && text[q] == ':') {
      p = q + 1;
      continue;
    }
    return q;
  }
}

// Fills kind, target, provider, function and offset; returns where the head ends.
Result<size_t> parse_head(std::string_view text, Mode mode, ProbeSpec& spec) {
  size_t start = 0;
  while (start < text.size() && is_space(text[start])) ++start;
  if (start == text.size())
    return spec_error(1, "the probe spec is empty",
                      mode == Mode::Trace ? "write one such as p:c:malloc \"%d\", arg1"
                                          : "write a pattern such as c:str*");
  if (text[start] == '(')
    return spec_error(column_of(start), "expected a probe before '('",
                      "start with the probe, e.g. p:c:malloc (arg1 > 0)");

  // The kind is read first because "p::ns::f" is kind, empty target, then a C++ name. bcc's
  // shorthands: "func" and "lib:func" are entry probes; "p:func" is kind:function (main binary)
  // rather than bcc's library "p", which no one means.
  std::optional<Field> kind;
  bool empty_target = false;
  size_t p = start;
  auto kind_letter = [&](size_t i) { return i < text.size() && is_kind(text.substr(i, 1)); };
  if (kind_letter(p) && p + 1 < text.size() && text[p + 1] == ':') {
    kind = Field{text.substr(p, 1), p};
    p += 2;
  } else if (text[p] == ':' && !(p + 1 < text.size() && text[p + 1] == ':')) {
    kind = Field{text.substr(p, 0), p};  // bcc's ":lib:func", an entry probe
    p += 1;
  }
  if (kind && p < text.size() && text[p] == ':' && !(p + 1 < text.size() && text[p + 1] == ':')) {
    empty_target = true;
    p += 1;
  } else if (kind && text.substr(p, 3) == ":::") {
    empty_target = true;  // p:::f is p::(empty target) then ":f", reported as a bad name
    p += 1;
  }
  std::vector<Field> fields;
  auto end = split_fields(text, p, fields);
  if (!end) return tl::unexpected(end.error());

  const Field* target = nullptr;
  const Field* provider = nullptr;
  const Field* function = &fields.back();
  if (!kind) {
    if (fields.size() >= 3)
      return spec_error(column_of(fields[0].pos),
                        fmt::format("unknown probe type '{}'", printable(fields[0].text)),
                        "use p: (entry), r: (return) or u: (USDT)");
    if (fields.size() == 2) target = &fields[0];
  } else {
    bool usdt = kind->text == "u";
    size_t max_fields = (usdt ? 3 : 2) - (empty_target ? 1 : 0);
    if (fields.size() > max_fields)
      return spec_error(column_of(fields[max_fields].pos - 1), "too many ':'-separated fields",
                        usdt ? "write u:target:[provider:]name"
                             : "write p:target:function, e.g. p:/usr/bin/x:main");
    size_t first = 0;
    if (!empty_target && fields.size() >= 2) target = &fields[first++];
    if (usdt && fields.size() - first == 2) provider = &fields[first];
  }

  if (kind && kind->text == "r") spec.kind = ProbeKind::Return;
  if (kind && kind->text == "u") spec.kind = ProbeKind::Usdt;
  if (mode == Mode::Pattern && spec.kind == ProbeKind::Return)
    return spec_error(column_of(kind->pos), "count and latency patterns can't be return probes",
                      "write p:target:glob or target:glob; latency times the return itself");
  if (target) spec.target = std::string(target->text);
  if (provider) {
    for (size_t i = 0; i < provider->text.size(); ++i) {
      if (!is_ident_char(provider->text[i]))
        return spec_error(column_of(provider->pos + i),
                          fmt::format("unexpected '{}' in the USDT provider",
                                      printable(provider->text.substr(i, 1))),
                          "providers are names such as python, or leave the provider out");
    }
    spec.provider = std::string(provider->text);
  }

  std::string_view name = function->text;
  std::string_view offset_text = function->offset;
  size_t plus_pos = function->offset_pos - 1;
  bool has_offset = !offset_text.empty();
  if (!function->quoted) {
    size_t plus = name.find('+');
    if (plus != std::string_view::npos) {
      has_offset = true;
      plus_pos = function->pos + plus;
      offset_text = name.substr(plus + 1);
      name = name.substr(0, plus);
    }
  }
  if (has_offset) {
    if (mode == Mode::Pattern)
      return spec_error(column_of(plus_pos), "count and latency patterns take no +offset",
                        "drop the offset; trace takes p:target:function+offset");
    if (spec.kind != ProbeKind::Entry)
      return spec_error(column_of(plus_pos),
                        fmt::format("an offset only works with entry probes (p:), not {} probes",
                                    spec.kind == ProbeKind::Return ? "return" : "USDT"),
                        "drop the offset or use p:target:function+offset");
    auto offset = parse_offset(offset_text, plus_pos + 1);
    if (!offset) return tl::unexpected(offset.error());
    spec.offset = *offset;
  }
  if (auto r = check_name(*function, name, spec.kind); !r) return tl::unexpected(r.error());
  spec.function = std::string(name);
  spec.function_column = column_of(function->pos);
  return *end;
}

Result<void> check_length(std::string_view text) {
  if (text.size() > probe_detail::kMaxSpecBytes)
    return spec_error(static_cast<int>(probe_detail::kMaxSpecBytes) + 1,
                      fmt::format("the probe spec is {} bytes long", text.size()),
                      fmt::format("keep it under {} bytes", probe_detail::kMaxSpecBytes));
  return {};
}

}  // namespace

Result<ProbeSpec> parse_probe_spec(std::string_view text) {
  if (auto r = check_length(text); !r) return tl::unexpected(r.error());
  ProbeSpec spec;
  spec.text = std::string(text);
  auto end = parse_head(text, Mode::Trace, spec);
  if (!end) return tl::unexpected(end.error());
  if (auto r = probe_detail::parse_probe_body(text, *end, spec); !r)
    return tl::unexpected(r.error());
  return spec;
}

Result<ProbeSpec> parse_probe_pattern(std::string_view text) {
  if (auto r = check_length(text); !r) return tl::unexpected(r.error());
  ProbeSpec spec;
  spec.text = std::string(text);
  auto end = parse_head(text, Mode::Pattern, spec);
  if (!end) return tl::unexpected(end.error());
  size_t p = *end;
  while (p < text.size() && is_space(text[p])) ++p;
  if (p < text.size())
    return spec_error(
        column_of(p),
        fmt::format("unexpected '{}' after the pattern", printable(text.substr(p, 1))),
        "count and latency take only [p:|u:]target:glob; predicates and formats "
        "belong to trace");
  return spec;
}

std::string caret_message(std::string_view text, int column, std::string_view message) {
  // The CLI only has the Error, so a column of 0 means "read it from the message".
  constexpr std::string_view kPrefix = "probe spec column ";
  if (column <= 0 && message.substr(0, kPrefix.size()) == kPrefix) {
    column = 0;
    for (size_t i = kPrefix.size(); i < message.size() && is_digit(message[i]) && column < 100000;
         ++i)
      column = column * 10 + (message[i] - '0');
  }
  if (column <= 0) return std::string(message);
  size_t caret = std::min(static_cast<size_t>(column - 1), text.size());
  std::string out;
  out.reserve(2 * text.size() + message.size() + 4);
  // Control bytes would break the two-line picture; tabs are mirrored so the caret still lines
  // up, and UTF-8 continuation bytes take no column of their own.
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    out += c == '\t' || (u >= 0x20 && u != 0x7f) ? c : '?';
  }
  out += '\n';
  for (size_t i = 0; i < caret; ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (text[i] == '\t')
      out += '\t';
    else if ((u & 0xC0) != 0x80)
      out += ' ';
  }
  out += "^ ";
  out += message;
  return out;
}

}  // namespace uscope
