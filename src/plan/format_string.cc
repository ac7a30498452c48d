// printf-style format strings of `trace` and the match between conversions and arguments.
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/probe_parse.h"

namespace uscope::probe_detail {

namespace {

// U and K are bcc's: a user (kernel) address printed as its symbol.
constexpr std::string_view kConversions = "diuxXpscUKv";
constexpr std::string_view kFlags = "-+ #0";
constexpr std::string_view kSupported =
    "use %d %i %u %x %X %p %s %c %U %K %v, or %% for a literal %";

// Parses the digits of a width or precision at `j`; false if too large to be meant.
bool read_number(const std::string& s, size_t& j) {
  int value = 0;
  for (; j < s.size() && is_digit(s[j]); ++j) {
    value = value * 10 + (s[j] - '0');
    if (value > kMaxFormatWidth) return false;
  }
  return true;
}

std::string plural(size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// What %s accepts beyond strings: anything that can hold an address.
bool is_pointer_like(const Expr& e) {
  if (e.type && e.type->pointers > 0) return true;  // a char * or char array resolved by name
  switch (e.op) {
    case Expr::Op::Arg:
    case Expr::Op::Retval:
    case Expr::Op::Entry:
      return true;
    case Expr::Op::Reg:
      return true;
    case Expr::Op::Deref:
      return e.width == 8;
    case Expr::Op::Cast:  // (char *)arg2; a scalar cast says it holds a number
      return e.type && e.type->pointers > 0;
    default:
      return false;
  }
}

Result<void> check_arg(const FormatConversion& conv, Expr& arg) {
  if (arg.op == Expr::Op::String)
    return spec_error(arg.column, "a string literal can't be printed as an argument",
                      "put fixed text in the format string itself");
  // A name or member has no type until the planner resolves it, and check_format_args runs again
  // on what it resolves to (a char array is then read in place, a char * through str()).
  if (arg.op == Expr::Op::Name || arg.op == Expr::Op::Member) return {};
  if (conv.conv == 'v') return {};  // a value as Go prints it: a number, a string, a Go value
  if (arg.op == Expr::Op::GoValue)
    return spec_error(arg.column, fmt::format("{} is a Go {}", describe(arg), arg.text),
                      "print it with %v");
  if (conv.conv == 's') {
    if (arg.op == Expr::Op::Str || arg.op == Expr::Op::Comm) return {};
    if (!is_pointer_like(arg))
      return spec_error(arg.column,
                        fmt::format("%s needs a string but {} is a number", describe(arg)),
                        "use str(ptr) for a string in memory, $comm, or %d for the number");
    if (expr_height(arg) >= kMaxDepth)
      return spec_error(arg.column, fmt::format("expression nests more than {} levels", kMaxDepth),
                        "split it into simpler conditions");
    Expr str;
    str.op = Expr::Op::Str;
    str.column = arg.column;
    str.children.push_back(std::move(arg));
    arg = std::move(str);
    return {};
  }
  if (is_string(arg))
    return spec_error(arg.column,
                      fmt::format("%{}{} needs a number but {} is a string", conv.length, conv.conv,
                                  describe(arg)),
                      "print strings with %s");
  return {};
}

}  // namespace

Result<std::vector<FormatConversion>> parse_format(const Token& format) {
  const std::string& s = format.text;
  std::vector<FormatConversion> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') continue;
    FormatConversion conv;
    conv.column = format.columns[i];
    size_t j = i + 1;
    if (j < s.size() && s[j] == '%') {
      i = j;
      continue;
    }
    size_t flags_start = j;
    while (j < s.size() && kFlags.find(s[j]) != std::string_view::npos) ++j;
    bool sane = read_number(s, j);
    if (sane && j < s.size() && s[j] == '.') {
      ++j;
      sane = read_number(s, j);
    }
    if (!sane)
      return spec_error(conv.column,
                        fmt::format("field width or precision above {}", kMaxFormatWidth),
                        "use a smaller number");
    if (j < s.size() && s[j] == '*')
      return spec_error(format.columns[j], "'*' widths are not supported",
                        "write the width as a number, e.g. %8d");
    conv.flags = s.substr(flags_start, j - flags_start);
    size_t length_start = j;
    if (j < s.size() && (s[j] == 'h' || s[j] == 'l')) {
      ++j;
      if (j < s.size() && s[j] == s[j - 1]) ++j;
    } else if (j < s.size() && s[j] == 'z') {
      ++j;
    }
    conv.length = s.substr(length_start, j - length_start);
    if (j >= s.size())
      return spec_error(conv.column, "the format ends in the middle of a conversion", kSupported);
    conv.conv = s[j];
    if (kConversions.find(conv.conv) == std::string_view::npos)
      return spec_error(
          conv.column,
          fmt::format("unsupported conversion '%{}{}'", conv.length, printable(s.substr(j, 1))),
          kSupported);
    if (!conv.length.empty() && (conv.conv == 's' || conv.conv == 'c' || conv.conv == 'p' ||
                                 conv.conv == 'U' || conv.conv == 'K'))
      return spec_error(
          conv.column,
          fmt::format("length modifier '{}' does not apply to %{}", conv.length, conv.conv),
          fmt::format("write %{}", conv.conv));
    conv.format_pos = i;
    conv.format_len = j - i + 1;
    out.push_back(std::move(conv));
    i = j;
  }
  return out;
}

Result<void> check_format_args(ProbeSpec& spec) {
  size_t convs = spec.conversions.size();
  size_t args = spec.args.size();
  std::string counts =
      fmt::format("format has {} but {}", plural(convs, "conversion"), plural(args, "argument"));
  if (args < convs)
    return spec_error(spec.conversions[args].column, counts,
                      "add an argument for each conversion, or write %% for a literal %");
  if (args > convs)
    return spec_error(spec.args[convs].column, counts,
                      "add a conversion such as %d for each argument, or drop the extra ones");
  for (size_t i = 0; i < convs; ++i) {
    if (auto r = check_arg(spec.conversions[i], spec.args[i]); !r) return r;
  }
  return {};
}

}  // namespace uscope::probe_detail
