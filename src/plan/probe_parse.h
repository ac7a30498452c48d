#pragma once
// Internals of the probe-spec parser shared by its lexer, expression parser and format checker.
// Not part of the planner's contract: that is probe_spec.h.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/probe_spec.h"
#include "util/result.h"

namespace uscope::probe_detail {

// Specs come from the command line and from fuzzers alike; these bounds keep a hostile one from
// costing a deep stack (the planner and Expr's destructor recurse too) or unbounded work.
inline constexpr int kMaxDepth = 64;
inline constexpr size_t kMaxSpecBytes = 4096;
inline constexpr int kMaxFormatWidth = 1024;

// "probe spec column N: <what>; <fix>".
tl::unexpected<Error> spec_error(int column, std::string_view what, std::string_view fix);

// User text fit for a one-line message: control bytes escaped, long text cut short.
std::string printable(std::string_view s);

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
inline int column_of(size_t pos) {
  return static_cast<int>(pos) + 1;
}

struct Token {
  enum class Kind { End, Int, String, Ident, Punct };
  Kind kind = Kind::End;
  std::string text;          // identifier ("$pid" keeps its '$'), punctuator, decoded string,
                             // or an integer literal as written
  uint64_t value = 0;        // Int (character literals too)
  int column = 0;            // where the token starts
  std::vector<int> columns;  // String: source column of each decoded byte, for format errors
};

// Lexes on demand, so a syntax error is reported before a lexical one further right. Copyable:
// copying is how the parser looks one token ahead.
class Lexer {
 public:
  Lexer(std::string_view text, size_t pos) : text_(text), pos_(pos) {}
  Result<Token> next();

 private:
  Result<Token> number(Token tok);
  Result<Token> identifier(Token tok);
  Result<Token> string_literal(Token tok);
  Result<Token> char_literal(Token tok);
  Result<Token> punctuator(Token tok);

  std::string_view text_;
  size_t pos_;
};

// "'x'" or "the end of the spec", for "expected ... but found ..." messages.
std::string describe(const Token& tok);
// "arg1", "$comm", "an expression with '+'", for type errors.
std::string describe(const Expr& e);
bool is_string(const Expr& e);
int expr_height(const Expr& e);

// Everything after the function: [(declared parameters)][(predicate)] ["format"[, arg, ...]]
// starting at `pos`. A '(' right at `pos` (no space) opens a parameter list when its first tokens
// read as a C declaration, as in bcc, or as Go's (go_params_ahead); otherwise it is the
// predicate, as before.
Result<void> parse_probe_body(std::string_view text, size_t pos, ProbeSpec& spec);

// Go's form of a declared list (probe_go_params.cc), name then type: `main.work(i int, tag
// string)`. Decided by form at the '(' at `open`: a name (or names: `a, b int`) followed by a Go
// type C never writes (a predeclared Go type, []T, *pkg.T, map[K]V, ...T); two plain names,
// `(a b)`, read Go's way when `function` has a Go name (a '.', no "::"), else as C's typedef and
// name.
bool go_params_ahead(std::string_view text, size_t open, std::string_view function);
// Why `name` cannot name a declared parameter (C's or Go's list): it means something else in a
// spec (retval, argN, str, STRCMP) or is a C type's name; nullopt for a name that can. `ctx` can:
// a declared ctx is the parameter, and bcc's ctx->REG reads registers only where none is declared.
std::optional<std::string> why_not_a_parameter_name(std::string_view name);
// Reads the list at `open`; `end` is then just past its ')'.
Result<std::vector<DeclaredParam>> parse_go_params(std::string_view text, size_t open, size_t& end);

// C type names of casts and declared parameter lists (probe_ctype.cc).
// Does `word` start a C type: a builtin (int, unsigned, u32, size_t, ...), a qualifier, or
// struct/union/enum?
bool is_type_word(std::string_view word);
// The type spelled by `words` (qualifiers already dropped) and `pointers` stars. A single word
// that is no known type is a typedef DWARF may know when `typedef_ok` (parameter lists); in a cast
// it is an error naming the known types closest to it.
Result<CType> make_ctype(const std::vector<std::string>& words, int pointers, int column,
                         bool typedef_ok);
// "int", "char *", "struct timespec *": for messages.
std::string type_text(const CType& t);

// bcc's pt_regs field names (ax, di, ip, r8, ...) and uscope's (rax, rdi, rip) to the canonical
// register name trace_register() knows; nullopt for anything else.
std::optional<std::string> register_of(std::string_view field);

// Conversions of a decoded format string token.
Result<std::vector<FormatConversion>> parse_format(const Token& format);

// Matches spec.args against spec.conversions (count and types); wraps pointers printed with %s
// into str() so the planner sees Op::Str for every %s.
Result<void> check_format_args(ProbeSpec& spec);

}  // namespace uscope::probe_detail
