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
    case Expr::Op::GoValue:
      return fmt::format("a Go {}", e.text);
    case Expr::Op::AtEnd:
      return describe(e.children[0]);
  }
  return "an expression";
}

namespace {

using Kind = Token::Kind;

// argN of a function: SysV has six integer argument registers, Go's register ABI nine (the
// recipe compiler holds each function to its own convention).
constexpr int kMaxFunctionArg = 9;

// Kernel TASK_COMM_LEN is 16 including the NUL, so $comm never holds more than this.
constexpr size_t kCommChars = 15;

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

  // A C type: qualifiers, base words, '*'s. `typedef_ok`: an unknown one-word type is a typedef.
  Result<CType> type(bool typedef_ok);
  // Does the token after the current '(' start a cast, as in (int)retval or (struct foo *)arg1?
  bool cast_ahead() const;
  // Does the current '(' open a declared parameter list rather than a predicate?
  bool params_ahead() const;
  Result<std::vector<DeclaredParam>> params();

 private:
  Result<Expr> binary(int min_prec);
  Result<Expr> make_binary(const Token& op, Expr lhs, Expr rhs);
  Result<Expr> unary();
  Result<Expr> unary_operand();
  Result<Expr> deref();
  Result<Expr> cast();
  Result<Expr> postfix();
  Result<Expr> member(Expr base);
  Result<Expr> primary();
  Result<Expr> identifier();
  Result<Expr> arg(int n);
  Result<Expr> entry_arg();
  Result<Expr> str_call();
  Result<Expr> strcmp_call();
  bool declared(std::string_view name) const;

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
  if (at("(") && cast_ahead()) return cast();
  if (!at("-") && !at("!") && !at("~")) return postfix();
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
  if (at("(") && cast_ahead()) {
    // *(u32*)p reads a u32: the cast only says how wide the read is.
    USCOPE_TRY(advance());
    int type_column = cur_.column;
    std::string first = cur_.text;
    auto t = type(false);
    if (!t) return tl::unexpected(t.error());
    std::string example = fmt::format("write *({}*)ptr", t->width ? first : "void*");
    if (t->pointers == 0)
      return spec_error(cur_.column, fmt::format("expected '*' after '{}' in the cast", first),
                        example);
    if (!at(")"))
      return spec_error(cur_.column,
                        fmt::format("expected ')' to close the cast but found {}", describe(cur_)),
                        example);
    USCOPE_TRY(advance());
    if (t->pointers >= 2) {
      e.width = 8;  // reading a pointer
      e.is_signed = false;
    } else if (t->width == 0) {
      bool aggregate = t->name != "void";
      return spec_error(type_column,
                        aggregate ? fmt::format("can't read a whole {}", t->name)
                                  : std::string("can't read a void"),
                        aggregate ? "read one member with ->, e.g. ((struct foo *)arg1)->len"
                                  : "use *(void**)ptr for a pointer or *(u8*)ptr for a byte");
    } else {
      e.width = t->width;
      e.is_signed = t->is_signed;
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

Result<CType> ExprParser::type(bool typedef_ok) {
  int column = cur_.column;
  std::vector<std::string> words;
  auto qualifier = [&] {
    return cur_.kind == Kind::Ident && (cur_.text == "const" || cur_.text == "volatile");
  };
  while (qualifier()) USCOPE_TRY(advance());
  if (cur_.kind != Kind::Ident || cur_.text[0] == '$')
    return spec_error(cur_.column, fmt::format("expected a type but found {}", describe(cur_)),
                      "write e.g. int, char * or struct NAME *");
  if (cur_.text == "struct" || cur_.text == "union" || cur_.text == "enum") {
    words.push_back(cur_.text);
    USCOPE_TRY(advance());
    if (cur_.kind != Kind::Ident)
      return spec_error(
          cur_.column,
          fmt::format("expected a name after '{}' but found {}", words[0], describe(cur_)),
          fmt::format("write e.g. {} timespec *", words[0]));
    words.push_back(cur_.text);
    USCOPE_TRY(advance());
  } else {
    static constexpr std::string_view kInteger[] = {"signed", "unsigned", "char",
                                                    "short",  "int",      "long"};
    auto integer_word = [&] {
      return cur_.kind == Kind::Ident &&
             std::find(std::begin(kInteger), std::end(kInteger), cur_.text) != std::end(kInteger);
    };
    if (integer_word()) {
      while (integer_word() || qualifier()) {
        if (!qualifier()) words.push_back(cur_.text);
        USCOPE_TRY(advance());
      }
    } else {
      words.push_back(cur_.text);
      USCOPE_TRY(advance());
    }
  }
  while (qualifier()) USCOPE_TRY(advance());
  int pointers = 0;
  while (at("*")) {
    ++pointers;
    USCOPE_TRY(advance());
    while (qualifier()) USCOPE_TRY(advance());
  }
  return make_ctype(words, pointers, column, typedef_ok);
}

bool ExprParser::cast_ahead() const {
  Lexer ahead = lexer_;
  auto first = ahead.next();
  if (!first || first->kind != Kind::Ident || first->text[0] == '$') return false;
  if (is_type_word(first->text)) return !declared(first->text);
  if (arg_number(first->text) || first->text == "retval" || declared(first->text)) return false;
  // (uint32)retval and (foo *)arg1 are casts to a type this language does not know: read them as
  // casts so that the error names the type, not the syntax.
  auto next = ahead.next();
  if (!next || next->kind != Kind::Punct) return false;
  if (next->text == "*") {
    while (next && next->kind == Kind::Punct && next->text == "*") next = ahead.next();
    return next && next->kind == Kind::Punct && next->text == ")";
  }
  if (next->text != ")") return false;
  auto after = ahead.next();
  return after && (after->kind == Kind::Ident || after->kind == Kind::Int ||
                   (after->kind == Kind::Punct && after->text == "("));
}

Result<Expr> ExprParser::cast() {
  Expr e;
  e.op = Expr::Op::Cast;
  e.column = cur_.column;
  USCOPE_TRY(advance());
  int type_column = cur_.column;
  auto t = type(false);
  if (!t) return tl::unexpected(t.error());
  if (!at(")"))
    return spec_error(cur_.column,
                      fmt::format("expected ')' to close the cast to {} but found {}",
                                  type_text(*t), describe(cur_)),
                      "write e.g. (int)retval or (struct foo *)arg1");
  USCOPE_TRY(advance());
  if (t->pointers > 0) {
    e.width = 8;  // an address: only its type changes, for -> and %s
    e.is_signed = false;
  } else if (t->width == 0) {
    return spec_error(type_column, fmt::format("can't cast a value to {}", t->name),
                      t->name == "void" ? "cast to a pointer such as (void *) or to an integer"
                                        : fmt::format("cast to a pointer: ({} *)", t->name));
  } else {
    e.width = t->width;
    e.is_signed = t->is_signed;
  }
  e.type = std::move(*t);
  auto operand = unary();
  if (!operand) return operand;
  if (is_string(*operand))
    return spec_error(
        operand->column,
        fmt::format("can't cast {}, a string, to {}", describe(*operand), type_text(*e.type)),
        "cast numbers and pointers such as arg1 or retval");
  e.children.push_back(std::move(*operand));
  return finish(std::move(e));
}

Result<Expr> ExprParser::postfix() {
  auto e = primary();
  while (e && (at("->") || at("."))) e = member(std::move(*e));
  return e;
}

Result<Expr> ExprParser::member(Expr base) {
  bool arrow = at("->");
  USCOPE_TRY(advance());
  if (cur_.kind != Kind::Ident || cur_.text[0] == '$')
    return spec_error(cur_.column,
                      fmt::format("expected a member name after '{}' but found {}",
                                  arrow ? "->" : ".", describe(cur_)),
                      arrow ? "write e.g. req->len" : "write e.g. ts.tv_nsec");
  if (is_string(base))
    return spec_error(base.column, fmt::format("{} is a string and has no members", describe(base)),
                      "read members of a struct pointer, e.g. req->len");
  // bcc's ctx is the probe's pt_regs, unless the probe names a parameter ctx itself.
  if (arrow && base.op == Expr::Op::Name && base.text == "ctx" && !declared("ctx")) {
    auto reg = register_of(cur_.text);
    if (!reg)
      return spec_error(cur_.column, fmt::format("ctx has no register '{}'", printable(cur_.text)),
                        "use ctx->ax, bx, cx, dx, si, di, bp, sp, ip or r8..r15");
    Expr e;
    e.op = Expr::Op::Reg;
    e.text = *reg;
    e.column = base.column;
    USCOPE_TRY(advance());
    return e;
  }
  Expr e;
  e.op = Expr::Op::Member;
  e.index = arrow ? 1 : 0;
  e.text = cur_.text;
  e.column = base.column;
  e.children.push_back(std::move(base));
  USCOPE_TRY(advance());
  return finish(std::move(e));
}

bool ExprParser::declared(std::string_view name) const {
  if (!spec_.params) return false;
  return std::any_of(spec_.params->begin(), spec_.params->end(),
                     [&](const DeclaredParam& p) { return p.name == name; });
}

bool ExprParser::params_ahead() const {
  Lexer ahead = lexer_;
  auto first = ahead.next();
  if (!first) return false;
  if (first->kind == Kind::Punct) return first->text == ")";  // f(): no parameters
  if (first->kind != Kind::Ident || first->text[0] == '$') return false;
  if (is_type_word(first->text)) return true;
  // A typedef bcc would take from a header: FILE *f, my_len n.
  if (arg_number(first->text) || first->text == "retval" || first->text == "str" ||
      first->text == "STRCMP")
    return false;
  auto next = ahead.next();
  while (next && next->kind == Kind::Punct && next->text == "*") next = ahead.next();
  return next && next->kind == Kind::Ident;
}

Result<std::vector<DeclaredParam>> ExprParser::params() {
  int open = cur_.column;
  USCOPE_TRY(advance());
  std::vector<DeclaredParam> out;
  if (at(")")) {
    USCOPE_TRY(advance());
    return out;
  }
  // f(void): C's way of saying "no parameters".
  Lexer ahead = lexer_;
  if (cur_.kind == Kind::Ident && cur_.text == "void") {
    auto next = ahead.next();
    if (next && next->kind == Kind::Punct && next->text == ")") {
      USCOPE_TRY(advance());
      USCOPE_TRY(advance());
      return out;
    }
  }
  for (;;) {
    DeclaredParam p;
    p.column = cur_.column;
    auto t = type(true);
    if (!t) return tl::unexpected(t.error());
    if (t->pointers == 0 && t->width == 0 && t->name.find(' ') != std::string::npos &&
        !t->name.starts_with("enum "))
      return spec_error(p.column,
                        fmt::format("a {} is passed by value here; only pointers to it can be "
                                    "read",
                                    t->name),
                        fmt::format("declare it as {} *name", t->name));
    p.type = std::move(*t);
    if (cur_.kind == Kind::Ident && cur_.text[0] != '$') {
      if (is_type_word(cur_.text) || cur_.text == "retval" || arg_number(cur_.text))
        return spec_error(cur_.column,
                          fmt::format("'{}' can't name a parameter: {}", printable(cur_.text),
                                      why_not_a_parameter_name(cur_.text).value_or("")),
                          "give it another name, e.g. (int fd, char *path)");
      p.name = cur_.text;
      for (const DeclaredParam& q : out)
        if (q.name == p.name)
          return spec_error(cur_.column,
                            fmt::format("parameter '{}' is declared twice", printable(p.name)),
                            "give each parameter its own name");
      USCOPE_TRY(advance());
    }
    out.push_back(std::move(p));
    if (at(")")) break;
    if (!at(","))
      return spec_error(cur_.column,
                        fmt::format("expected ',' or ')' in the parameter list opened at column "
                                    "{} but found {}",
                                    open, describe(cur_)),
                        "declare parameters as in C: (int fd, const char *path)");
    USCOPE_TRY(advance());
  }
  constexpr size_t kMaxParams = 6;
  if (out.size() > kMaxParams)
    return spec_error(
        out[kMaxParams].column,
        fmt::format("{} parameters declared; uprobes read the first {}", out.size(), kMaxParams),
        "declare only the first six (the SysV integer argument registers)");
  USCOPE_TRY(advance());
  return out;
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
  if (name == "STRCMP") return strcmp_call();
  if (name[0] != '$') {
    if (is_type_word(name) && !declared(name))
      return spec_error(
          e.column, fmt::format("'{}' is a type, not a value", name),
          fmt::format("cast a value with ({})retval or read memory with *({}*)ptr", name, name));
    // A declared parameter, one DWARF names, or `this`: the planner resolves it or says why not.
    e.op = Expr::Op::Name;
    e.text = name;
    USCOPE_TRY(advance());
    return e;
  }
  static const std::string kKnown[] = {"$entry", "$pid", "$tid", "$cpu", "$comm", "$uid"};
  auto close = closest_names(name, kKnown, 1);
  return spec_error(e.column, fmt::format("unknown variable '{}'", printable(name)),
                    close.empty() ? "use $pid, $tid, $cpu, $comm, $uid or $entry(argN)"
                                  : fmt::format("did you mean {}?", close[0]));
}

// A Go list makes argN its Nth parameter: N must be one of them.
Result<void> check_declared_arg(const ProbeSpec& spec, int n, int column, std::string_view text) {
  if (!spec.params || !is_go_declared(*spec.params) || n <= static_cast<int>(spec.params->size()))
    return {};
  std::vector<std::string> names;
  for (const auto& p : *spec.params) names.push_back(p.name + " " + printable(p.go_type));
  return spec_error(column,
                    fmt::format("{} is out of range: {} declares {} parameters ({})",
                                printable(text), spec.function, spec.params->size(), join(names)),
                    "with a Go declared list, argN is its Nth parameter; read a register with "
                    "ctx->REG");
}

Result<Expr> ExprParser::arg(int n) {
  int max = spec_.kind == ProbeKind::Usdt ? 12 : kMaxFunctionArg;
  if (n < 1 || n > max)
    return spec_error(cur_.column, fmt::format("{} is out of range", printable(cur_.text)),
                      spec_.kind == ProbeKind::Usdt
                          ? "USDT probes have arg1..arg12 (at most as many as the probe declares)"
                          : "entry and return probes can read arg1..arg9 (C: arg1..arg6, the "
                            "SysV integer argument registers; Go: its nine registers, or its "
                            "Nth parameter when DWARF or a declared list names them)");
  USCOPE_TRY(check_declared_arg(spec_, n, cur_.column, cur_.text));
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
  if (*n < 1 || *n > kMaxFunctionArg)
    return spec_error(cur_.column, fmt::format("{} is out of range", printable(cur_.text)),
                      "$entry can save arg1..arg9 (C: arg1..arg6, the SysV integer argument "
                      "registers; Go: its nine registers or parameters)");
  USCOPE_TRY(check_declared_arg(spec_, *n, cur_.column, cur_.text));
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

// bcc's STRCMP("literal", expr) is uscope's str(expr) == "literal".
Result<Expr> ExprParser::strcmp_call() {
  int column = cur_.column;
  constexpr std::string_view kUsage = "write STRCMP(\"text\", arg1), or str(arg1) == \"text\"";
  USCOPE_TRY(advance());
  if (!at("("))
    return spec_error(
        cur_.column, fmt::format("expected '(' after STRCMP but found {}", describe(cur_)), kUsage);
  USCOPE_TRY(advance());
  auto first = expression();
  if (!first) return first;
  if (!at(","))
    return spec_error(cur_.column,
                      fmt::format("expected ',' in STRCMP but found {}", describe(cur_)), kUsage);
  USCOPE_TRY(advance());
  auto second = expression();
  if (!second) return second;
  if (!at(")"))
    return spec_error(cur_.column,
                      fmt::format("expected ')' to close the STRCMP( at column {} but found {}",
                                  column, describe(cur_)),
                      kUsage);
  bool first_literal = first->op == Expr::Op::String;
  Expr literal = std::move(first_literal ? *first : *second);
  Expr other = std::move(first_literal ? *second : *first);
  if (literal.op != Expr::Op::String)
    return spec_error(literal.column, "STRCMP compares with a \"string literal\"", kUsage);
  if (other.op == Expr::Op::String)
    return spec_error(other.column, "STRCMP of two string literals", kUsage);
  if (!is_string(other)) {
    // A pointer: the string it points to, as bcc reads it.
    Expr str;
    str.op = Expr::Op::Str;
    str.column = other.column;
    str.children.push_back(std::move(other));
    other = std::move(str);
  }
  USCOPE_TRY(check_string_compare(other, literal));
  USCOPE_TRY(advance());
  Expr e;
  e.op = Expr::Op::Binary;
  e.op_text = "==";
  e.column = column;
  e.children.push_back(std::move(other));
  e.children.push_back(std::move(literal));
  return finish(std::move(e));
}

}  // namespace

Result<void> parse_probe_body(std::string_view text, size_t pos, ProbeSpec& spec) {
  bool attached = pos < text.size() && text[pos] == '(';
  if (attached && go_params_ahead(text, pos, spec.function)) {
    if (spec.kind == ProbeKind::Usdt)
      return spec_error(column_of(pos), "USDT probes have no parameter list",
                        "read their arguments as arg1, arg2, ...");
    size_t end = pos;
    auto params = parse_go_params(text, pos, end);
    if (!params) return tl::unexpected(params.error());
    spec.params = std::move(*params);
    pos = end;
    attached = false;
  }
  ExprParser p(text, pos, spec);
  USCOPE_TRY(p.advance());
  if (attached && p.params_ahead()) {
    if (spec.kind == ProbeKind::Usdt)
      return spec_error(p.cur().column, "USDT probes have no parameter list",
                        "read their arguments as arg1, arg2, ...");
    auto params = p.params();
    if (!params) return tl::unexpected(params.error());
    spec.params = std::move(*params);
  }
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
  // bcc's trace takes the first argument with or without a ',' after the format ("%s" arg1, as
  // its own examples write it); a string there is a second format, not an argument.
  bool first_without_comma =
      p.cur().kind != Token::Kind::End && p.cur().kind != Token::Kind::String && !p.at(",");
  while (first_without_comma || p.at(",")) {
    if (!first_without_comma) USCOPE_TRY(p.advance());
    first_without_comma = false;
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
