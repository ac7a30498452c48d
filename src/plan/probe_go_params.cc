// Go's form of a declared parameter list, name then type: `main.work(i int, tag string)`,
// `main.(*Store).Get(s *main.Store, key string)`, `f(a, b int, rest ...any)`. Read from the raw
// text rather than the expression lexer's tokens: Go types have punctuation of their own
// ([]byte, map[string]int, interface{}, *net/http.Request).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/go_type_text.h"
#include "plan/probe_parse.h"
#include "util/names.h"

namespace uscope::probe_detail {

namespace {

constexpr int kMaxGoTypeDepth = 16;
// Far more than Go's nine integer registers hold; a longer list is a mistake, not a function.
constexpr size_t kMaxGoParams = 32;
constexpr size_t kMaxArrayDigits = 9;
constexpr std::string_view kListExample = "declare Go parameters as name type: (i int, tag string)";

// Characters of a Go type name with its package path: net/http.Request, example.com/x-y/v2.T.
bool is_path_char(char c) {
  return is_ident_char(c) || c == '.' || c == '/' || c == '-' || c == '~';
}

class GoListReader {
 public:
  GoListReader(std::string_view text, size_t pos) : text_(text), pos_(pos) {}

  size_t pos() const { return pos_; }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool at(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  void skip_spaces() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  std::string_view ident() {
    size_t start = pos_;
    if (pos_ < text_.size() && is_ident_start(text_[pos_])) {
      ++pos_;
      while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }
  std::string_view path_word() {
    size_t start = pos_;
    while (pos_ < text_.size() && is_path_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  // "'x'" or "the end of the spec".
  std::string here() const {
    if (pos_ >= text_.size()) return "the end of the spec";
    return fmt::format("'{}'", printable(text_.substr(pos_, 1)));
  }

  // A Go type, in Go's own spelling. `top`: the type of a parameter, where `...T` may stand.
  Result<std::string> type(int depth, bool top);
  bool variadic = false;  // the last type read was `...T`

 private:
  Result<std::string> named(size_t start);
  Result<std::string> balanced(char open, char close);
  Result<void> expect(char c, std::string_view what, std::string_view fix) {
    skip_spaces();
    if (!at(c))
      return spec_error(column_of(pos_),
                        fmt::format("expected '{}' {} but found {}", c, what, here()), fix);
    ++pos_;
    return {};
  }

  std::string_view text_;
  size_t pos_;
};

#define USCOPE_TRY_GO(expr)                                                                    \
  do {                                                                                         \
    if (auto uscope_r = (expr); !uscope_r) return tl::unexpected(std::move(uscope_r).error()); \
  } while (0)

Result<std::string> GoListReader::type(int depth, bool top) {
  skip_spaces();
  const int column = column_of(pos_);
  if (depth > kMaxGoTypeDepth)
    return spec_error(column, "this Go type nests too deeply",
                      "declare a simpler type of the same size, e.g. uintptr for a pointer");
  auto inner = [&]() { return type(depth + 1, false); };
  if (at("...")) {
    if (!top)
      return spec_error(column, "'...' only goes before the type of a parameter",
                        "write the variadic parameter as e.g. a ...any");
    pos_ += 3;
    auto elem = inner();
    if (!elem) return elem;
    variadic = true;
    return "[]" + *elem;
  }
  if (at('*')) {
    ++pos_;
    auto elem = inner();
    if (!elem) return elem;
    return "*" + *elem;
  }
  if (at('[')) {
    ++pos_;
    skip_spaces();
    if (at(']')) {
      ++pos_;
      auto elem = inner();
      if (!elem) return elem;
      return "[]" + *elem;
    }
    size_t start = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    std::string_view length = text_.substr(start, pos_ - start);
    if (length.empty() || length.size() > kMaxArrayDigits)
      return spec_error(column_of(start),
                        length.empty()
                            ? fmt::format("expected ']' or an array length but found {}", here())
                            : std::string("this array length is too long"),
                        "write []T for a slice or [4]T for an array");
    USCOPE_TRY_GO(expect(']', "to close the array length", "write e.g. [4]byte"));
    auto elem = inner();
    if (!elem) return elem;
    return fmt::format("[{}]{}", length, *elem);
  }
  if (at("<-")) {
    pos_ += 2;
    skip_spaces();
    if (ident() != "chan")
      return spec_error(column, "expected 'chan' after '<-'", "write e.g. <-chan int");
    auto elem = inner();
    if (!elem) return elem;
    return "<-chan " + *elem;
  }
  const size_t start = pos_;
  std::string_view word = ident();
  if (word.empty())
    return spec_error(column, fmt::format("expected a Go type but found {}", here()),
                      "write e.g. int, string, []byte, any or *main.Store");
  if (word == "map" && (skip_spaces(), at('['))) {
    ++pos_;
    auto key = inner();
    if (!key) return key;
    USCOPE_TRY_GO(expect(']', "after the map's key type", "write e.g. map[string]int"));
    auto value = inner();
    if (!value) return value;
    return fmt::format("map[{}]{}", *key, *value);
  }
  if (word == "chan") {
    skip_spaces();
    std::string prefix = "chan ";
    if (at("<-")) {
      pos_ += 2;
      prefix = "chan<- ";
    }
    auto elem = inner();
    if (!elem) return elem;
    return prefix + *elem;
  }
  if (word == "func" && (skip_spaces(), at('('))) {
    // One word whatever its signature: the signature is kept as written.
    auto params = balanced('(', ')');
    if (!params) return params;
    std::string out = "func" + *params;
    size_t after = pos_;
    skip_spaces();
    if (at('(')) {
      auto results = balanced('(', ')');
      if (!results) return results;
      return out + " " + *results;
    }
    if (pos_ < text_.size() && !at(',') && !at(')')) {
      auto result = inner();
      if (!result) return result;
      return out + " " + *result;
    }
    pos_ = after;
    return out;
  }
  if (word == "interface" && (skip_spaces(), at('{'))) {
    auto body = balanced('{', '}');
    if (!body) return body;
    std::string_view b = std::string_view(*body).substr(1, body->size() - 2);
    while (!b.empty() && is_space(b.front())) b.remove_prefix(1);
    while (!b.empty() && is_space(b.back())) b.remove_suffix(1);
    return b.empty() ? std::string("interface {}") : fmt::format("interface {{ {} }}", b);
  }
  if (word == "struct")
    return spec_error(column, "a struct type written out is not supported in a declared list",
                      "name it with its package (main.Point), or declare a pointer to it");
  return named(start);
}

// A predeclared type, or a named one with its package: main.Store, net/http.Request,
// main.List[int].
Result<std::string> GoListReader::named(size_t start) {
  pos_ = start;
  const int column = column_of(start);
  std::string name(path_word());
  if (at('[')) {  // the type arguments of a generic type, kept as written
    auto args = balanced('[', ']');
    if (!args) return args;
    name += *args;
  }
  std::string_view base = name;
  if (size_t bracket = base.find('['); bracket != std::string_view::npos)
    base = base.substr(0, bracket);
  const size_t slash = base.rfind('/');
  std::string_view last = slash == std::string_view::npos ? base : base.substr(slash + 1);
  const size_t dot = last.rfind('.');
  if (const GoPredeclared* p = go_predeclared(base); p && base == name)
    return std::string(p->go_name);
  if (dot == std::string_view::npos) {
    if (slash != std::string_view::npos)
      return spec_error(column, fmt::format("'{}' names a package but no type", printable(name)),
                        "write the type after the package, e.g. *net/http.Request");
    std::vector<std::string> known;
    for (const GoPredeclared& t : go_predeclared_types()) known.emplace_back(t.name);
    auto close = closest_names(name, known, 3);
    return spec_error(
        column, fmt::format("unknown Go type '{}'", printable(name)),
        close.empty()
            ? std::string("write a predeclared type (int, string, bool, []byte, any, ...) or a "
                          "named type with its package: main.Store, *net/http.Request")
            : fmt::format("did you mean {}? Named types are written with their package, e.g. "
                          "*main.Store",
                          join(close, " or ")));
  }
  const bool ident_ok =
      dot > 0 && dot + 1 < last.size() && is_ident_start(last[dot + 1]) &&
      std::all_of(last.begin() + static_cast<ptrdiff_t>(dot) + 1, last.end(), is_ident_char);
  if (!ident_ok || base.front() == '/' || base.find("//") != std::string_view::npos)
    return spec_error(column, fmt::format("'{}' is not a Go type name", printable(name)),
                      "write a named type as package.Name, e.g. main.Store or net/http.Request");
  return name;
}

// From the `open` at pos_ to its `close`, nesting counted, as written: "(int, string)".
Result<std::string> GoListReader::balanced(char open, char close) {
  const size_t start = pos_;
  int depth = 0;
  for (; pos_ < text_.size(); ++pos_) {
    char c = text_[pos_];
    if (c == '"') break;  // a format string: the type was never closed
    if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxGoTypeDepth) break;
    } else if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) {
        if (c != close) break;
        ++pos_;
        return std::string(text_.substr(start, pos_ - start));
      }
    }
  }
  return spec_error(column_of(start), fmt::format("this '{}' is not closed by '{}'", open, close),
                    "close it, e.g. func(int) error or interface{}");
}

}  // namespace

bool go_params_ahead(std::string_view text, size_t open, std::string_view function) {
  GoListReader r(text, open + 1);
  r.skip_spaces();
  // A name C would read as a type starts C's form. (Words such as retval and argN start a
  // predicate unless a Go type follows them: parse_go_params then says they can't be names.)
  std::string_view first = r.ident();
  if (first.empty() || is_type_word(first)) return false;
  // Names sharing a type: (a, b int).
  for (;;) {
    r.skip_spaces();
    if (!r.at(',')) break;
    GoListReader after(text, r.pos() + 1);
    after.skip_spaces();
    std::string_view next = after.ident();
    if (next.empty() || is_type_word(next)) return false;
    r = after;
  }
  r.skip_spaces();
  // A Go type in a form C's declarations never take.
  if (r.at("...") || r.at('[') || r.at("<-")) return true;
  GoListReader t = r;
  bool pointer = false;
  while (t.at('*')) {
    t = GoListReader(text, t.pos() + 1);
    pointer = true;
  }
  if (t.at('[')) return pointer;
  GoListReader w = t;
  std::string_view word = w.path_word();
  if (word.empty()) return false;
  w.skip_spaces();
  if ((word == "map" && w.at('[')) || (word == "func" && w.at('(')) ||
      (word == "interface" && w.at('{')) || word == "chan")
    return true;
  if (go_predeclared(word) || word.find('.') != std::string_view::npos ||
      word.find('/') != std::string_view::npos)
    return true;
  // Two plain names, (a b): C's typedef and name, or Go's name and a type uscope does not know;
  // the function's name says which language.
  return !pointer && function.find('.') != std::string_view::npos &&
         function.find("::") == std::string_view::npos;
}

std::optional<std::string> why_not_a_parameter_name(std::string_view name) {
  if (name == "retval") return "in a spec it is the function's return value (r: probes)";
  if (name == "str" || name == "STRCMP")
    return fmt::format("in a spec it is the function {}(...)", name);
  if (name.size() > 3 && name.substr(0, 3) == "arg" &&
      std::all_of(name.begin() + 3, name.end(), is_digit))
    return fmt::format("{} already names parameter {} by its position", name, name.substr(3));
  if (is_type_word(name)) return "it is a C type's name";
  return std::nullopt;
}

Result<std::vector<DeclaredParam>> parse_go_params(std::string_view text, size_t open,
                                                   size_t& end) {
  GoListReader r(text, open + 1);
  std::vector<DeclaredParam> out;
  r.skip_spaces();
  if (r.at(')')) {
    end = r.pos() + 1;
    return out;
  }
  for (;;) {
    // One group: names, then the type they share.
    std::vector<DeclaredParam> group;
    for (;;) {
      r.skip_spaces();
      DeclaredParam p;
      p.column = column_of(r.pos());
      std::string_view name = r.ident();
      if (name.empty())
        return spec_error(p.column, fmt::format("expected a parameter name but found {}", r.here()),
                          fmt::format("{}; _ for one you do not name", kListExample));
      if (auto why = why_not_a_parameter_name(name))
        return spec_error(p.column,
                          fmt::format("'{}' can't name a parameter: {}", printable(name), *why),
                          "give it another name, e.g. (n int, path string)");
      p.name = std::string(name);
      auto twice = [&](const DeclaredParam& q) { return q.name == p.name && p.name != "_"; };
      if (std::any_of(out.begin(), out.end(), twice) ||
          std::any_of(group.begin(), group.end(), twice))
        return spec_error(p.column, fmt::format("parameter '{}' is declared twice", p.name),
                          "give each parameter its own name");
      group.push_back(std::move(p));
      r.skip_spaces();
      if (!r.at(',')) break;
      r = GoListReader(text, r.pos() + 1);
    }
    r.skip_spaces();
    if (r.at(')') || r.pos() >= text.size())
      return spec_error(group.back().column,
                        fmt::format("parameter '{}' has no type", group.back().name),
                        fmt::format("write its type after it, e.g. ({} int)", group.back().name));
    r.variadic = false;
    auto type = r.type(0, true);
    if (!type) return tl::unexpected(type.error());
    if (r.variadic && group.size() > 1)
      return spec_error(group.front().column, "only one parameter can be variadic",
                        "write e.g. (format string, a ...any)");
    for (auto& p : group) {
      p.go_type = *type;
      out.push_back(std::move(p));
    }
    r.skip_spaces();
    if (out.size() > kMaxGoParams)
      return spec_error(out[kMaxGoParams].column,
                        fmt::format("more than {} parameters declared", kMaxGoParams),
                        "declare the parameters up to the last one you read");
    const bool variadic = r.variadic;
    if (r.at(',')) {
      r = GoListReader(text, r.pos() + 1);
      r.skip_spaces();
      if (!r.at(')')) {
        if (variadic)
          return spec_error(
              out.back().column,
              fmt::format("'{}' is variadic, so it must be the last parameter", out.back().name),
              "move the ...T parameter to the end");
        continue;
      }
    }
    if (r.at(')')) {
      end = r.pos() + 1;
      return out;
    }
    return spec_error(column_of(r.pos()),
                      fmt::format("expected ',' or ')' after the type of '{}' but found {}",
                                  out.back().name, r.here()),
                      kListExample);
  }
}

}  // namespace uscope::probe_detail

namespace uscope {

bool is_go_declared(const std::vector<DeclaredParam>& params) {
  return !params.empty() && !params.front().go_type.empty();
}

}  // namespace uscope
