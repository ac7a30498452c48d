// Expressions of the probe language (predicates and format arguments), C precedence, with the
// type and probe-kind checks that make a bad spec fail here rather than in the planner.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "plan/probe_parse.h"
#include "util/names.h"

namespace uscope::probe_detail {

bool is_string(const Expr& e) {
  return e.op == Expr::Op::Comm || e.op == Expr::Op::Str || e.op == Expr::Op::String;
}

int expr_height(const Expr& e) {
  int below = 0;
  for (const Expr& c : e.children) below = std::max(below, expr_height(c));
  return below + 1;
}

std::string describe(const Expr& e) {
  switch (e.op) {
    case Expr::Op::Arg:
      return fmt::format("arg{}", e.index);
    case Expr::Op::Retval:
      return "retval";
    case Expr::Op::Entry:
      return fmt::format("$entry(arg{})", e.index);
    case Expr::Op::Pid:
      return "$pid";
    case Expr::Op::Tid:
      return "$tid";
    case Expr::Op::Cpu:
      return "$cpu";
    case Expr::Op::Comm:
      return "$comm";
    case Expr::Op::Uid:
      return "$uid";
    case Expr::Op::Int:
      return fmt::format("the number {}", e.value);
    case Expr::Op::String:
      return "a string literal";
    case Expr::Op::Str:
      return "str(...)";
    case Expr::Op::Deref:
      return "a dereference";
    case Expr::Op::Unary:
      return fmt::format("a '{}' expression", e.op_text);
    case Expr::Op::Binary:
      return fmt::format("an expression with '{}'", e.op_text);
    case Expr::Op::Cast:
      return fmt::format("a cast to {}", e.type ? e.type->name + std::string(e.type->pointers, '*')
                                                : std::string("a type"));
    case Expr::Op::Name:
      return fmt::format("'{}'", e.text);
    case Expr::Op::Member:
      return fmt::format("the member {}", e.text);
    case Expr::Op::Reg:
      return fmt::format("ctx->{}", e.text);
  }
  return "an expression";
}

namespace {

using Kind = Token::Kind;

// Kernel TASK_COMM_LEN is 16 including the NUL, so $comm never holds more than this.
constexpr size_t kCommChars = 15;

struct CastType {
  std::string_view name;
  int width;  // 0: void, only readable through a pointer cast
  bool is_signed;
};

constexpr CastType kCastTypes[] = {
    {"u8", 1, false}, {"u16", 2, false}, {"u32", 4, false},  {"u64", 8, false}, {"s8", 1, true},
    {"s16", 2, true}, {"s32", 4, true},  {"s64", 8, true},   {"char", 1, true}, {"short", 2, true},
    {"int", 4, true}, {"long", 8, true}, {"void", 0, false},
};

const CastType* cast_type(std::string_view name) {
  for (const CastType& t : kCastTypes)
    if (t.name == name) return &t;
  return nullptr;
}

// argN -> N; 0 for a malformed number (arg0, arg01) so it lands in the range error.
std::optional<int> arg_number(std::string_view name) {
  if (name.size() < 4 || name.substr(0, 3) != "arg") return std::nullopt;
  std::string_view digits = name.substr(3);
  if (!std::all_of(digits.begin(), digits.end(), is_digit)) return std::nullopt;
  if (digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) return 0;
  int n = 0;
  for (char c : digits) n = n * 10 + (c - '0');
  return n;
}

int precedence(const Token& t) {
  static constexpr std::pair<std::string_view, int> kTable[] = {
      {"||", 1}, {"&&", 2}, {"|", 3},  {"^", 4},  {"&", 5},  {"==", 6},
      {"!=", 6}, {"<", 7},  {"<=", 7}, {">", 7},  {">=", 7}, {"<<", 8},
      {">>", 8}, {"+", 9},  {"-", 9},  {"*", 10}, {"/", 10}, {"%", 10},
  };
  if (t.kind != Kind::Punct) return 0;
  for (const auto& [op, prec] : kTable)
    if (op == t.text) return prec;
  return 0;
}

Result<Expr> finish(Expr e) {
  if (expr_height(e) > kMaxDepth)
    return spec_error(e.column, fmt::format("expression nests more than {} levels", kMaxDepth),
                      "split it into simpler conditions");
  return e;
}

Result<void> require_number(const Expr& e, std::string_view op) {
  if (e.op == Expr::Op::String)
    return spec_error(e.column, fmt::format("a string literal can't be an operand of '{}'", op),
                      "string literals only go in == or != against $comm or str(...)");
  if (is_string(e))
    return spec_error(
        e.column, fmt::format("{} is a string and can't be an operand of '{}'", describe(e), op),
        "compare it with == or != against a string literal");
  return {};
}

// `==`/`!=` with a string on either side: only run-time string vs literal is evaluable.
Result<void> check_string_compare(const Expr& lhs, const Expr& rhs) {
  bool lhs_literal = lhs.op == Expr::Op::String;
  const Expr& literal = lhs_literal ? lhs : rhs;
  const Expr& other = lhs_literal ? rhs : lhs;
  if (literal.op != Expr::Op::String) {
    if (is_string(lhs) && is_string(rhs))
      return spec_error(rhs.column, "comparing two run-time strings is not supported",
                        "compare $comm or str(...) against a string literal");
    const Expr& number = is_string(lhs) ? rhs : lhs;
    return spec_error(number.column,
                      fmt::format("{} is a number and can't be compared with {}", describe(number),
                                  describe(is_string(lhs) ? lhs : rhs)),
                      "compare strings against a string literal, e.g. $comm == \"nginx\"");
  }
  if (other.op == Expr::Op::String)
    return spec_error(rhs.column, "comparing two string literals",
                      "compare $comm or str(...) against a string literal");
  if (!is_string(other))
    return spec_error(other.column, fmt::format("{} is a number, not a string", describe(other)),
                      "compare the string it points to with str(...), e.g. str(arg1) == \"GET\"");
  if (other.op == Expr::Op::Comm && literal.text.size() > kCommChars)
    return spec_error(literal.column,
                      fmt::format("$comm holds at most {} characters, so it never equals this "
                                  "{}-character string",
                                  kCommChars, literal.text.size()),
                      fmt::format("compare with its first {} characters, as the kernel truncates "
                                  "command names",
                                  kCommChars));
  return {};
}

class ExprParser {
 public:
  ExprParser(std::string_view text, size_t pos, const ProbeSpec& spec)
      : lexer_(text, pos), spec_(spec) {}

  const Token& cur() const { return cur_; }
  bool at(std::string_view punct) const { return cur_.kind == Kind::Punct && cur_.text == punct; }

  Result<void> advance() {
    auto tok = lexer_.next();
    if (!tok) return tl::unexpected(tok.error());
    cur_ = std::move(*tok);
    return {};
  }

  Result<Expr> expression() { return binary(1); }

 private:
  Result<Expr> binary(int min_prec);
  Result<Expr> make_binary(const Token& op, Expr lhs, Expr rhs);
  Result<Expr> unary();
  Result<Expr> unary_operand();
  Result<Expr> deref();
  Result<Expr> primary();
  Result<Expr> identifier();
  Result<Expr> arg(int n);
  Result<Expr> entry_arg();
  Result<Expr> str_call();

  Lexer lexer_;
  const ProbeSpec& spec_;
  Token cur_;
  int depth_ = 0;
};

#define USCOPE_TRY(expr)                                                                       \
  do {                                                                                         \
    if (auto uscope_r = (expr); !uscope_r) return tl::unexpected(std::move(uscope_r).error()); \
  } while (0)

Result<Expr> ExprParser::binary(int min_prec) {
  auto lhs = unary();
  if (!lhs) return lhs;
  for (;;) {
    int prec = precedence(cur_);
    if (prec == 0 || prec < min_prec) return lhs;
    Token op = cur_;
    USCOPE_TRY(advance());
    auto rhs = binary(prec + 1);
    if (!rhs) return rhs;
    lhs = make_binary(op, std::move(*lhs), std::move(*rhs));
    if (!lhs) return lhs;
  }
}

Result<Expr> ExprParser::make_binary(const Token& op, Expr lhs, Expr rhs) {
  bool equality = op.text == "==" || op.text == "!=";
  if (equality && (is_string(lhs) || is_string(rhs))) {
    USCOPE_TRY(check_string_compare(lhs, rhs));
  } else {
    USCOPE_TRY(require_number(lhs, op.text));
    USCOPE_TRY(require_number(rhs, op.text));
  }
  // Caught here because BPF would quietly yield 0 or a masked shift at run time.
  bool literal = rhs.op == Expr::Op::Int;
  if ((op.text == "/" || op.text == "%") && literal && rhs.value == 0)
    return spec_error(rhs.column, "division by zero", "divide by a non-zero number");
  if ((op.text == "<<" || op.text == ">>") && literal && (rhs.value < 0 || rhs.value > 63))
    return spec_error(rhs.column, fmt::format("shift by {} is outside 0..63", rhs.value),
                      "shift 64-bit values by 0 to 63 bits");
  Expr e;
  e.op = Expr::Op::Binary;
  e.op_text = op.text;
  e.column = lhs.column;
  e.children.push_back(std::move(lhs));
  e.children.push_back(std::move(rhs));
  return finish(std::move(e));
}

Result<Expr> ExprParser::unary() {
  if (depth_ >= kMaxDepth)
    return spec_error(cur_.column, fmt::format("expression nests more than {} levels", kMaxDepth),
                      "split it into simpler conditions");
  ++depth_;
  auto e = unary_operand();
  --depth_;
  return e;
}

Result<Expr> ExprParser::unary_operand() {
  if (at("*")) return deref();
  if (!at("-") && !at("!") && !at("~")) return primary();
  Token op = cur_;
  USCOPE_TRY(advance());
  auto operand = unary();
  if (!operand) return operand;
  USCOPE_TRY(require_number(*operand, op.text));
  if (op.text == "-" && operand->op == Expr::Op::Int) {
    // Folded so that "-1" is the literal the grammar promises; unsigned math avoids the
    // overflow of negating INT64_MIN.
    operand->value = static_cast<int64_t>(0 - static_cast<uint64_t>(operand->value));
    operand->column = op.column;
    return operand;
  }
  Expr e;
  e.op = Expr::Op::Unary;
  e.op_text = op.text;
  e.column = op.column;
  e.children.push_back(std::move(*operand));
  return finish(std::move(e));
}

Result<Expr> ExprParser::deref() {
  Expr e;
  e.op = Expr::Op::Deref;
  e.column = cur_.column;
  USCOPE_TRY(advance());
  if (at("(")) {
    // One token of lookahead tells `*(u32*)p` from `*(p + 8)`; a lexical error in it is left
    // for the ordinary path to report.
    Lexer ahead = lexer_;
    auto next = ahead.next();
    const CastType* type = next && next->kind == Kind::Ident ? cast_type(next->text) : nullptr;
    if (type) {
      USCOPE_TRY(advance());
      Token type_tok = cur_;
      USCOPE_TRY(advance());
      int stars = 0;
      for (; at("*"); ++stars) USCOPE_TRY(advance());
      std::string example = fmt::format("write *({}*)ptr", type->width ? type->name : "void*");
      if (stars == 0)
        return spec_error(cur_.column,
                          fmt::format("expected '*' after '{}' in the cast", type->name), example);
      if (!at(")"))
        return spec_error(
            cur_.column, fmt::format("expected ')' to close the cast but found {}", describe(cur_)),
            example);
      USCOPE_TRY(advance());
      if (stars >= 2) {
        e.width = 8;  // reading a pointer
        e.is_signed = false;
      } else if (type->width == 0) {
        return spec_error(type_tok.column, "can't read a void",
                          "use *(void**)ptr for a pointer or *(u8*)ptr for a byte");
      } else {
        e.width = type->width;
        e.is_signed = type->is_signed;
      }
    }
  }
  auto operand = unary();
  if (!operand) return operand;
  if (is_string(*operand))
    return spec_error(operand->column, fmt::format("can't dereference {}", describe(*operand)),
                      "dereference a pointer such as arg1 or *(u64*)arg1");
  e.children.push_back(std::move(*operand));
  return finish(std::move(e));
}

Result<Expr> ExprParser::primary() {
  Expr e;
  e.column = cur_.column;
  switch (cur_.kind) {
    case Kind::Int:
      e.op = Expr::Op::Int;
      e.value = static_cast<int64_t>(cur_.value);
      USCOPE_TRY(advance());
      return e;
    case Kind::String:
      e.op = Expr::Op::String;
      e.text = cur_.text;
      USCOPE_TRY(advance());
      return e;
    case Kind::Ident:
      return identifier();
    case Kind::Punct:
      if (at("(")) {
        int open = cur_.column;
        USCOPE_TRY(advance());
        auto inner = expression();
        if (!inner) return inner;
        if (!at(")"))
          return spec_error(cur_.column,
                            fmt::format("expected ')' to match the '(' at column {} but found {}",
                                        open, describe(cur_)),
                            "close the parenthesis");
        USCOPE_TRY(advance());
        return inner;
      }
      break;
    case Kind::End:
      break;
  }
  return spec_error(cur_.column, fmt::format("expected an expression but found {}", describe(cur_)),
                    "write a number, argN, retval, a $variable or str(ptr) here");
}

Result<Expr> ExprParser::identifier() {
  static constexpr std::pair<std::string_view, Expr::Op> kVariables[] = {
      {"$pid", Expr::Op::Pid},   {"$tid", Expr::Op::Tid}, {"$cpu", Expr::Op::Cpu},
      {"$comm", Expr::Op::Comm}, {"$uid", Expr::Op::Uid},
  };
  const std::string& name = cur_.text;
  Expr e;
  e.column = cur_.column;
  if (name == "retval") {
    if (spec_.kind != ProbeKind::Return)
      return spec_error(e.column, "retval is only available in return probes (r:)",
                        fmt::format("use r:{}:{} to see what it returns", printable(spec_.target),
                                    printable(spec_.function)));
    e.op = Expr::Op::Retval;
    USCOPE_TRY(advance());
    return e;
  }
  if (auto n = arg_number(name)) return arg(*n);
  if (name == "$entry") return entry_arg();
  if (name == "str") return str_call();
  for (const auto& [var, op] : kVariables) {
    if (name == var) {
      e.op = op;
      USCOPE_TRY(advance());
      return e;
    }
  }
  if (cast_type(name))
    return spec_error(e.column,
                      fmt::format("'{}' is a type, and casts only go with a dereference", name),
                      fmt::format("write *({}*)ptr to read a {} at ptr", name, name));
  static const std::string kKnown[] = {"arg1", "arg2",   "arg3", "arg4", "arg5", "arg6",  "retval",
                                       "str",  "$entry", "$pid", "$tid", "$cpu", "$comm", "$uid"};
  auto close = closest_names(name, kKnown, 1);
  return spec_error(
      e.column,
      fmt::format("unknown {} '{}'", name[0] == '$' ? "variable" : "name", printable(name)),
      close.empty() ? "use argN, retval, $pid, $tid, $cpu, $comm, $uid, $entry(argN) or str(ptr)"
                    : fmt::format("did you mean {}?", close[0]));
}

Result<Expr> ExprParser::arg(int n) {
  int max = spec_.kind == ProbeKind::Usdt ? 12 : 6;
  if (n < 1 || n > max)
    return spec_error(cur_.column, fmt::format("{} is out of range", printable(cur_.text)),
                      spec_.kind == ProbeKind::Usdt
                          ? "USDT probes have arg1..arg12 (at most as many as the probe declares)"
                          : "entry and return probes can read arg1..arg6 (the SysV integer "
                            "argument registers)");
  if (spec_.kind == ProbeKind::Return)
    return spec_error(cur_.column,
                      fmt::format("arg{} is not available in return probes, as its register is "
                                  "reused by then",
                                  n),
                      fmt::format("use $entry(arg{}) for the value it had at entry", n));
  Expr e;
  e.op = Expr::Op::Arg;
  e.index = n;
  e.column = cur_.column;
  USCOPE_TRY(advance());
  return e;
}

Result<Expr> ExprParser::entry_arg() {
  Expr e;
  e.op = Expr::Op::Entry;
  e.column = cur_.column;
  if (spec_.kind != ProbeKind::Return)
    return spec_error(e.column, "$entry(argN) is only available in return probes (r:)",
                      spec_.kind == ProbeKind::Entry ? "an entry probe reads argN directly"
                                                     : "a USDT probe reads argN directly");
  USCOPE_TRY(advance());
  if (!at("("))
    return spec_error(cur_.column,
                      fmt::format("expected '(' after $entry but found {}", describe(cur_)),
                      "write $entry(arg1)");
  USCOPE_TRY(advance());
  auto n = cur_.kind == Kind::Ident ? arg_number(cur_.text) : std::nullopt;
  if (!n)
    return spec_error(cur_.column,
                      fmt::format("$entry takes an argument name but found {}", describe(cur_)),
                      "write $entry(arg1) .. $entry(arg6)");
  if (*n < 1 || *n > 6)
    return spec_error(cur_.column, fmt::format("{} is out of range", printable(cur_.text)),
                      "$entry can save arg1..arg6 (the SysV integer argument registers)");
  e.index = *n;
  USCOPE_TRY(advance());
  if (!at(")"))
    return spec_error(cur_.column,
                      fmt::format("expected ')' to close $entry( but found {}", describe(cur_)),
                      fmt::format("write $entry(arg{})", e.index));
  USCOPE_TRY(advance());
  return e;
}

Result<Expr> ExprParser::str_call() {
  Expr e;
  e.op = Expr::Op::Str;
  e.column = cur_.column;
  USCOPE_TRY(advance());
  if (!at("("))
    return spec_error(cur_.column,
                      fmt::format("expected '(' after str but found {}", describe(cur_)),
                      "write str(ptr) or str(ptr, len)");
  USCOPE_TRY(advance());
  auto ptr = expression();
  if (!ptr) return ptr;
  if (is_string(*ptr))
    return spec_error(ptr->column,
                      fmt::format("str() needs a pointer but {} is a string", describe(*ptr)),
                      "pass a pointer such as arg1");
  e.children.push_back(std::move(*ptr));
  if (at(",")) {
    USCOPE_TRY(advance());
    auto len = expression();
    if (!len) return len;
    if (is_string(*len))
      return spec_error(len->column, "the length of str() must be a number",
                        "write e.g. str(arg1, arg2) or str(arg1, 64)");
    if (len->op == Expr::Op::Int && len->value <= 0)
      return spec_error(len->column, "the length of str() must be positive",
                        "write e.g. str(arg1, 64)");
    e.children.push_back(std::move(*len));
  }
  if (!at(")"))
    return spec_error(cur_.column,
                      fmt::format("expected ')' to close the str( at column {} but found {}",
                                  e.column, describe(cur_)),
                      "write str(ptr) or str(ptr, len)");
  USCOPE_TRY(advance());
  return finish(std::move(e));
}

}  // namespace

Result<void> parse_probe_body(std::string_view text, size_t pos, ProbeSpec& spec) {
  ExprParser p(text, pos, spec);
  USCOPE_TRY(p.advance());
  if (p.at("(")) {
    int open = p.cur().column;
    USCOPE_TRY(p.advance());
    if (p.at(")"))
      return spec_error(p.cur().column, "the predicate is empty",
                        "write a condition such as (arg1 > 0) or drop the parentheses");
    auto pred = p.expression();
    if (!pred) return tl::unexpected(pred.error());
    if (!p.at(")"))
      return spec_error(p.cur().column,
                        fmt::format("expected ')' to close the predicate at column {} but found {}",
                                    open, describe(p.cur())),
                        "close the predicate with ')'");
    if (is_string(*pred))
      return spec_error(pred->column,
                        pred->op == Expr::Op::String
                            ? std::string("the predicate is a string literal")
                            : fmt::format("the predicate is {}, a string", describe(*pred)),
                        "compare it, e.g. ($comm == \"nginx\")");
    spec.predicate = std::move(*pred);
    USCOPE_TRY(p.advance());
    if (p.at("("))
      return spec_error(p.cur().column, "a probe takes one predicate",
                        "combine conditions with && or ||");
  }
  if (p.cur().kind == Token::Kind::End) return {};
  if (p.cur().kind != Token::Kind::String)
    return spec_error(
        p.cur().column, fmt::format("expected a \"format\" string but found {}", describe(p.cur())),
        spec.predicate ? "arguments follow a format, e.g. \"%d\", arg1"
                       : "write (predicate) and/or \"format\", args after the function");
  auto conversions = parse_format(p.cur());
  if (!conversions) return tl::unexpected(conversions.error());
  spec.format = p.cur().text;
  spec.conversions = std::move(*conversions);
  USCOPE_TRY(p.advance());
  while (p.at(",")) {
    USCOPE_TRY(p.advance());
    auto arg = p.expression();
    if (!arg) return tl::unexpected(arg.error());
    spec.args.push_back(std::move(*arg));
  }
  if (p.cur().kind != Token::Kind::End)
    return spec_error(p.cur().column,
                      fmt::format("found {} after {}", describe(p.cur()),
                                  spec.args.empty() ? "the format string"
                                                    : fmt::format("argument {}", spec.args.size())),
                      "separate arguments with ','");
  return check_format_args(spec);
}

}  // namespace uscope::probe_detail

namespace uscope {

Result<Expr> parse_probe_expression(std::string_view text, ProbeKind kind) {
  using namespace probe_detail;
  if (text.size() > kMaxSpecBytes)
    return spec_error(1, fmt::format("the expression is {} bytes long", text.size()),
                      fmt::format("keep it under {} bytes", kMaxSpecBytes));
  ProbeSpec spec;
  spec.kind = kind;
  ExprParser p(text, 0, spec);
  USCOPE_TRY(p.advance());
  auto e = p.expression();
  if (!e) return e;
  if (p.cur().kind != Token::Kind::End)
    return spec_error(p.cur().column,
                      fmt::format("found {} after the expression", describe(p.cur())),
                      "write one expression");
  return e;
}

}  // namespace uscope
