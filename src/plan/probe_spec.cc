// The probe head, [kind:][target:][provider:]function[+offset], and the public entry points.
#include "plan/probe_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
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

struct Field {
  std::string_view text;
  size_t pos;  // offset in the whole spec
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

Result<void> check_name(std::string_view name, size_t pos, ProbeKind kind) {
  bool usdt = kind == ProbeKind::Usdt;
  if (name.empty())
    return spec_error(
        column_of(pos), usdt ? "expected a USDT probe name" : "expected a function name",
        usdt ? "write e.g. u:/usr/bin/python3:python:function__entry" : "write e.g. p:c:malloc");
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    // '.', '$' and '@' occur in real symbols: foo.cold, memcpy@GLIBC_2.14.
    if (is_ident_char(c) || (!usdt && (c == '.' || c == '$' || c == '@'))) continue;
    // trace takes globs too (bpftrace's uprobe:libc:str*): each function matched is a probe.
    if (is_glob_char(c)) continue;
    return spec_error(column_of(pos + i),
                      fmt::format("unexpected '{}' in the {} name", printable(name.substr(i, 1)),
                                  usdt ? "probe" : "function"),
                      usdt ? "USDT probe names are letters, digits and '_'"
                           : "symbol names are letters, digits, '_', '.', '$' and '@'");
  }
  return {};
}

// Fills kind, target, provider, function and offset; returns where the head ends.
Result<size_t> parse_head(std::string_view text, Mode mode, ProbeSpec& spec) {
  size_t start = 0;
  while (start < text.size() && is_space(text[start])) ++start;
  if (start == text.size())
    return spec_error(1, "the probe spec is empty",
                      mode == Mode::Trace ? "write one such as p:c:malloc \"%d\", arg1"
                                          : "write a pattern such as c:str*");
  size_t end = start;
  while (end < text.size() && !is_space(text[end]) && text[end] != '(' && text[end] != '"') ++end;
  if (end == start)
    return spec_error(column_of(start), fmt::format("expected a probe before '{}'", text[start]),
                      "start with the probe, e.g. p:c:malloc (arg1 > 0)");

  std::vector<Field> fields;
  for (size_t p = start;;) {
    size_t colon = text.find(':', p);
    if (colon == std::string_view::npos || colon >= end) {
      fields.push_back({text.substr(p, end - p), p});
      break;
    }
    fields.push_back({text.substr(p, colon - p), p});
    p = colon + 1;
  }

  // bcc's shorthands: "func" and "lib:func" are entry probes. "p:func" is taken as kind:function
  // (main binary) rather than bcc's library "p", which no one means.
  const Field* kind = nullptr;
  const Field* target = nullptr;
  const Field* provider = nullptr;
  const Field* function = &fields.back();
  if (fields.size() == 2) {
    (is_kind(fields[0].text) ? kind : target) = &fields[0];
  } else if (fields.size() >= 3) {
    kind = &fields[0];
    if (!kind->text.empty() && !is_kind(kind->text))
      return spec_error(column_of(kind->pos),
                        fmt::format("unknown probe type '{}'", printable(kind->text)),
                        "use p: (entry), r: (return) or u: (USDT)");
    target = &fields[1];
    size_t max_fields = kind->text == "u" ? 4 : 3;
    if (fields.size() > max_fields)
      return spec_error(column_of(fields[max_fields].pos - 1), "too many ':'-separated fields",
                        kind->text == "u" ? "write u:target:[provider:]name"
                                          : "write p:target:function, e.g. p:/usr/bin/x:main");
    if (fields.size() == 4) provider = &fields[2];
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
  size_t plus = name.find('+');
  if (plus != std::string_view::npos) {
    size_t plus_pos = function->pos + plus;
    if (mode == Mode::Pattern)
      return spec_error(column_of(plus_pos), "count and latency patterns take no +offset",
                        "drop the offset; trace takes p:target:function+offset");
    if (spec.kind != ProbeKind::Entry)
      return spec_error(column_of(plus_pos),
                        fmt::format("an offset only works with entry probes (p:), not {} probes",
                                    spec.kind == ProbeKind::Return ? "return" : "USDT"),
                        "drop the offset or use p:target:function+offset");
    auto offset = parse_offset(name.substr(plus + 1), plus_pos + 1);
    if (!offset) return tl::unexpected(offset.error());
    spec.offset = *offset;
    name = name.substr(0, plus);
  }
  if (auto r = check_name(name, function->pos, spec.kind); !r) return tl::unexpected(r.error());
  spec.function = std::string(name);
  spec.function_column = column_of(function->pos);
  return end;
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
