// libFuzzer target: arbitrary bytes as a `trace` spec and as a `count`/`latency` pattern. Besides
// memory safety and bounded depth it checks what the planner and CLI rely on: errors are one
// "probe spec column N: ...; ..." line with N inside the text, and an accepted spec is well typed
// (one argument per conversion, %s always fed by str(), $comm or a name the planner resolves,
// strings only in comparisons, casts to readable widths).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plan/probe_spec.h"

namespace {

using uscope::Expr;

bool go_list(const uscope::ProbeSpec& spec) {
  return spec.params && uscope::is_go_declared(*spec.params);
}

bool is_string(const Expr& e) {
  return e.op == Expr::Op::Comm || e.op == Expr::Op::Str || e.op == Expr::Op::String;
}

void check_error(std::string_view text, const uscope::Error& e) {
  constexpr std::string_view kPrefix = "probe spec column ";
  const std::string& m = e.message;
  if (m.compare(0, kPrefix.size(), kPrefix) != 0) __builtin_trap();
  if (m.find('\n') != std::string::npos || m.find("; ") == std::string::npos) __builtin_trap();
  size_t column = 0;
  for (size_t i = kPrefix.size(); i < m.size() && m[i] >= '0' && m[i] <= '9'; ++i)
    column = column * 10 + static_cast<size_t>(m[i] - '0');
  if (column < 1 || column > text.size() + 1) __builtin_trap();
  std::string shown = uscope::caret_message(text, 0, m);
  if (shown.find('^') == std::string::npos) __builtin_trap();
}

// Returns the height; traps on anything the planner could not evaluate.
int check_expr(const Expr& e, const uscope::ProbeSpec& spec, int depth) {
  if (depth > 65) __builtin_trap();
  if (e.column < 1 || static_cast<size_t>(e.column) > spec.text.size()) __builtin_trap();
  switch (e.op) {
    case Expr::Op::Arg:
      if (spec.kind == uscope::ProbeKind::Return) __builtin_trap();
      if (e.index < 1 || e.index > (spec.kind == uscope::ProbeKind::Usdt ? 12 : 9))
        __builtin_trap();
      if (go_list(spec) && static_cast<size_t>(e.index) > spec.params->size()) __builtin_trap();
      break;
    case Expr::Op::Retval:
      if (spec.kind != uscope::ProbeKind::Return) __builtin_trap();
      break;
    case Expr::Op::Entry:
      if (spec.kind != uscope::ProbeKind::Return || e.index < 1 || e.index > 9) __builtin_trap();
      if (go_list(spec) && static_cast<size_t>(e.index) > spec.params->size()) __builtin_trap();
      break;
    case Expr::Op::Str:
      if (e.children.empty() || e.children.size() > 2) __builtin_trap();
      for (const Expr& c : e.children)
        if (is_string(c)) __builtin_trap();
      break;
    case Expr::Op::Deref:
      if (e.children.size() != 1 || is_string(e.children[0])) __builtin_trap();
      if (e.width != 1 && e.width != 2 && e.width != 4 && e.width != 8) __builtin_trap();
      break;
    case Expr::Op::Unary:
      if (e.children.size() != 1 || is_string(e.children[0])) __builtin_trap();
      break;
    case Expr::Op::Binary: {
      if (e.children.size() != 2) __builtin_trap();
      const Expr& l = e.children[0];
      const Expr& r = e.children[1];
      if (is_string(l) || is_string(r)) {
        bool eq = e.op_text == "==" || e.op_text == "!=";
        bool literal_vs_runtime =
            (l.op == Expr::Op::String && (r.op == Expr::Op::Comm || r.op == Expr::Op::Str)) ||
            (r.op == Expr::Op::String && (l.op == Expr::Op::Comm || l.op == Expr::Op::Str));
        if (!eq || !literal_vs_runtime) __builtin_trap();
      }
      break;
    }
    case Expr::Op::Cast:
      if (e.children.size() != 1 || is_string(e.children[0]) || !e.type) __builtin_trap();
      if (e.width != 1 && e.width != 2 && e.width != 4 && e.width != 8) __builtin_trap();
      if (e.type->pointers > 0 && (e.width != 8 || e.is_signed)) __builtin_trap();
      break;
    case Expr::Op::Member:
      if (e.children.size() != 1 || is_string(e.children[0]) || e.text.empty()) __builtin_trap();
      break;
    case Expr::Op::Name:
      if (!e.children.empty() || e.text.empty() || e.text[0] == '$') __builtin_trap();
      break;
    case Expr::Op::Reg:
      if (!e.children.empty() || e.text.size() < 2 || e.text[0] != 'r') __builtin_trap();
      break;
    default:
      if (!e.children.empty()) __builtin_trap();
  }
  int below = 0;
  for (const Expr& c : e.children) {
    int h = check_expr(c, spec, depth + 1);
    if (h > below) below = h;
  }
  return below + 1;
}

void check_spec(const uscope::ProbeSpec& spec) {
  if (spec.args.size() != spec.conversions.size()) __builtin_trap();
  if (spec.offset != 0 && spec.kind != uscope::ProbeKind::Entry) __builtin_trap();
  if (spec.function.empty()) __builtin_trap();
  if (spec.params) {
    // C's lists: the six SysV registers; Go's: names and types, `_` for a parameter not named.
    const bool go = go_list(spec);
    if (spec.kind == uscope::ProbeKind::Usdt || spec.params->size() > (go ? 32 : 6))
      __builtin_trap();
    for (size_t i = 0; i < spec.params->size(); ++i) {
      const uscope::DeclaredParam& p = (*spec.params)[i];
      if (go && (p.name.empty() || p.go_type.empty())) __builtin_trap();
      for (size_t j = 0; j < i; ++j)
        if (!p.name.empty() && p.name != "_" && p.name == (*spec.params)[j].name)
          __builtin_trap();
    }
  }
  if (spec.predicate) {
    if (is_string(*spec.predicate)) __builtin_trap();
    if (check_expr(*spec.predicate, spec, 1) > 64) __builtin_trap();
  }
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const Expr& a = spec.args[i];
    const uscope::FormatConversion& c = spec.conversions[i];
    if (a.op == Expr::Op::String) __builtin_trap();
    // A name or member is typed when the planner resolves it; anything else is checked here.
    bool untyped = a.op == Expr::Op::Name || a.op == Expr::Op::Member;
    if (!untyped && (c.conv == 's' ? !is_string(a) : is_string(a))) __builtin_trap();
    if (check_expr(a, spec, 1) > 64) __builtin_trap();
    if (c.format_pos + c.format_len > spec.format.size() || spec.format[c.format_pos] != '%')
      __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto spec = uscope::parse_probe_spec(text))
    check_spec(*spec);
  else
    check_error(text, spec.error());
  if (auto pattern = uscope::parse_probe_pattern(text)) {
    if (pattern->predicate || !pattern->args.empty() || pattern->offset != 0 ||
        pattern->kind == uscope::ProbeKind::Return)
      __builtin_trap();
  } else {
    check_error(text, pattern.error());
  }
  return 0;
}
