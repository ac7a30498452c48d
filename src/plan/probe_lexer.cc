// Tokens of the probe language's expressions and strings.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "plan/probe_parse.h"

namespace uscope::probe_detail {

namespace {

// The escapes of string and character literals alike.
constexpr std::string_view kEscapes = "use \\n, \\t, \\0, \\\\, \\\" or \\'";

std::optional<char> escaped_char(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case '0':
      return '\0';
    case '\\':
    case '"':
    case '\'':
      return c;
    default:
      return std::nullopt;
  }
}

}  // namespace

tl::unexpected<Error> spec_error(int column, std::string_view what, std::string_view fix) {
  return fail("probe spec column {}: {}; {}", column, what, fix);
}

std::string printable(std::string_view s) {
  constexpr size_t kMaxShown = 40;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  if (s.size() > kMaxShown) out += "...";
  return out;
}

std::string describe(const Token& tok) {
  switch (tok.kind) {
    case Token::Kind::End:
      return "the end of the spec";
    case Token::Kind::String:
      return "a string";
    default:
      return fmt::format("'{}'", printable(tok.text));
  }
}

namespace {

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<Token> Lexer::next() {
  while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  Token tok;
  tok.column = column_of(pos_);
  if (pos_ >= text_.size()) return tok;
  char c = text_[pos_];
  if (is_digit(c)) return number(std::move(tok));
  if (is_ident_start(c) || c == '$') return identifier(std::move(tok));
  if (c == '"') return string_literal(std::move(tok));
  if (c == '\'') return char_literal(std::move(tok));
  return punctuator(std::move(tok));
}

Result<Token> Lexer::number(Token tok) {
  size_t start = pos_;
  uint64_t value = 0;
  bool overflow = false;
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() &&
      (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
    pos_ += 2;
    size_t digits = pos_;
    for (; pos_ < text_.size() && hex_value(text_[pos_]) >= 0; ++pos_) {
      if (value > (std::numeric_limits<uint64_t>::max() >> 4)) overflow = true;
      value = (value << 4) | static_cast<uint64_t>(hex_value(text_[pos_]));
    }
    if (pos_ == digits)
      return spec_error(tok.column, "'0x' is not followed by hex digits", "write e.g. 0x10");
  } else {
    // C would read 010 as octal; refusing it beats silently disagreeing with C or with the user.
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))
      return spec_error(tok.column, "octal literals (leading 0) are not supported",
                        "write the number in decimal or as 0x...");
    for (; pos_ < text_.size() && is_digit(text_[pos_]); ++pos_) {
      auto d = static_cast<uint64_t>(text_[pos_] - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - d) / 10) overflow = true;
      value = value * 10 + d;
    }
  }
  tok.text = std::string(text_.substr(start, pos_ - start));
  if (overflow)
    return spec_error(
        tok.column, fmt::format("integer literal {} does not fit in 64 bits", printable(tok.text)),
        "use a smaller number");
  if (pos_ < text_.size() && is_ident_char(text_[pos_]))
    return spec_error(
        column_of(pos_),
        fmt::format("unexpected '{}' right after the number {}", printable(text_.substr(pos_, 1)),
                    printable(tok.text)),
        "integer literals take no suffix; separate names and numbers with an operator");
  tok.kind = Token::Kind::Int;
  tok.value = value;
  return tok;
}

Result<Token> Lexer::identifier(Token tok) {
  size_t start = pos_;
  if (text_[pos_] == '$') ++pos_;
  size_t name = pos_;
  while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
  if (text_[start] == '$' && (pos_ == name || !is_ident_start(text_[name])))
    return spec_error(tok.column, "expected a variable name after '$'",
                      "use $pid, $tid, $cpu, $comm, $uid or $entry(argN)");
  tok.kind = Token::Kind::Ident;
  tok.text = std::string(text_.substr(start, pos_ - start));
  // bcc's arg2@user asks for a user-space read; every read of a uprobe is one, so it is accepted
  // and means plain arg2.
  constexpr std::string_view kUser = "@user";
  if (tok.text.starts_with("arg") && text_.substr(pos_, kUser.size()) == kUser)
    pos_ += kUser.size();
  return tok;
}

Result<Token> Lexer::string_literal(Token tok) {
  ++pos_;  // the opening quote
  for (;;) {
    if (pos_ >= text_.size())
      return spec_error(tok.column, "this string has no closing '\"'", "close it with '\"'");
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      break;
    }
    int column = column_of(pos_);
    if (c == '\\') {
      if (pos_ + 1 >= text_.size())
        return spec_error(tok.column, "this string has no closing '\"'", "close it with '\"'");
      auto decoded = escaped_char(text_[pos_ + 1]);
      if (!decoded)
        return spec_error(
            column, fmt::format("unknown escape '\\{}'", printable(text_.substr(pos_ + 1, 1))),
            kEscapes);
      c = *decoded;
      pos_ += 2;
    } else {
      ++pos_;
    }
    tok.text += c;
    tok.columns.push_back(column);
  }
  tok.kind = Token::Kind::String;
  return tok;
}

Result<Token> Lexer::char_literal(Token tok) {
  size_t start = pos_;
  auto bad = [&] {
    return spec_error(tok.column, "a character literal holds exactly one character",
                      "write e.g. 'a' or '\\n'");
  };
  ++pos_;
  if (pos_ >= text_.size()) return bad();
  char c = text_[pos_];
  if (c == '\'') return bad();
  if (c == '\\') {
    if (pos_ + 1 >= text_.size()) return bad();
    auto decoded = escaped_char(text_[pos_ + 1]);
    if (!decoded)
      return spec_error(column_of(pos_),
                        fmt::format("unknown escape '\\{}'", printable(text_.substr(pos_ + 1, 1))),
                        kEscapes);
    c = *decoded;
    ++pos_;
  }
  ++pos_;
  if (pos_ >= text_.size() || text_[pos_] != '\'') return bad();
  ++pos_;
  tok.kind = Token::Kind::Int;
  tok.value = static_cast<unsigned char>(c);
  tok.text = std::string(text_.substr(start, pos_ - start));
  return tok;
}

Result<Token> Lexer::punctuator(Token tok) {
  static constexpr std::string_view kTwo[] = {"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "->"};
  static constexpr std::string_view kOne = "+-*/%&|^~!<>(),.";
  for (std::string_view op : kTwo) {
    if (text_.substr(pos_, 2) == op) {
      tok.kind = Token::Kind::Punct;
      tok.text = std::string(op);
      pos_ += 2;
      return tok;
    }
  }
  char c = text_[pos_];
  if (kOne.find(c) != std::string_view::npos) {
    tok.kind = Token::Kind::Punct;
    tok.text = std::string(1, c);
    ++pos_;
    return tok;
  }
  if (c == '=') return spec_error(tok.column, "'=' is assignment", "compare with '=='");
  return spec_error(tok.column,
                    fmt::format("unexpected character '{}'", printable(text_.substr(pos_, 1))),
                    "expressions are made of numbers, argN, retval, $variables, str(...) and C "
                    "operators");
}

}  // namespace uscope::probe_detail
