// Go's form of declared parameter lists, `main.work(i int, tag string)`: the types a list may
// spell (in Go's own spelling afterwards), how the parser tells Go's form from C's, argN against
// a Go list, and every refusal with its column.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "plan/probe_spec.h"

namespace uscope {
namespace {

ProbeSpec parse_ok(const std::string& text) {
  auto r = parse_probe_spec(text);
  EXPECT_TRUE(r.has_value()) << text << "\n" << (r ? "" : r.error().message);
  return r ? *r : ProbeSpec{};
}

// "i int, tag string" for the declared list of `text`.
std::string declared(const std::string& text) {
  ProbeSpec s = parse_ok(text);
  if (!s.params) return "<none>";
  std::string out;
  for (const auto& p : *s.params)
    out += (out.empty() ? "" : ", ") + p.name + " " +
           (p.go_type.empty() ? "C:" + p.type.name : p.go_type);
  return out;
}

struct Bad {
  std::string text;
  int column;
  std::string message;  // substring of what follows "probe spec column N: "
};

void expect_errors(const std::vector<Bad>& cases) {
  static const std::regex shape(R"(probe spec column [0-9]+: [^\n]+; [^\n]+)");
  for (const Bad& c : cases) {
    auto r = parse_probe_spec(c.text);
    ASSERT_FALSE(r.has_value()) << c.text;
    const std::string& m = r.error().message;
    std::string prefix = "probe spec column " + std::to_string(c.column) + ": ";
    EXPECT_EQ(m.substr(0, prefix.size()), prefix) << c.text << "\n" << m;
    EXPECT_NE(m.find(c.message), std::string::npos) << c.text << "\n" << m;
    EXPECT_TRUE(std::regex_match(m, shape)) << m;
  }
}

TEST(probe_go_params, parses_names_then_types) {
  ProbeSpec s = parse_ok(R"(p:./app:main.work(i int, tag string) "%d %s", i, tag)");
  EXPECT_EQ(s.function, "main.work");
  ASSERT_TRUE(s.params);
  ASSERT_EQ(s.params->size(), 2u);
  EXPECT_EQ((*s.params)[0].name, "i");
  EXPECT_EQ((*s.params)[0].go_type, "int");
  EXPECT_EQ((*s.params)[0].column, 19);
  EXPECT_EQ((*s.params)[1].name, "tag");
  EXPECT_EQ((*s.params)[1].go_type, "string");
  EXPECT_EQ((*s.params)[1].column, 26);
  EXPECT_TRUE(is_go_declared(*s.params));
  ASSERT_EQ(s.args.size(), 2u);
  EXPECT_EQ(s.args[0].op, Expr::Op::Name);
  EXPECT_EQ(s.args[1].op, Expr::Op::Name);
}

TEST(probe_go_params, spells_types_as_go_does) {
  EXPECT_EQ(declared("p:./app:main.f(a int8, b uint64, c uintptr, d bool, e float64)"),
            "a int8, b uint64, c uintptr, d bool, e float64");
  EXPECT_EQ(declared("p:./app:main.f(b []byte, r rune, x any, y interface{}, z interface { })"),
            "b []uint8, r int32, x interface {}, y interface {}, z interface {}");
  EXPECT_EQ(declared("p:./app:main.f(err error, p unsafe.Pointer, xs []*main.T)"),
            "err error, p unsafe.Pointer, xs []*main.T");
  EXPECT_EQ(declared("p:./app:main.f(m map[string][]int, c chan int, r <-chan error, "
                     "s chan<- bool)"),
            "m map[string][]int, c chan int, r <-chan error, s chan<- bool");
  EXPECT_EQ(declared("p:./app:main.f(fn func(int) error, g func(), h func(a, b int) (int, "
                     "error))"),
            "fn func(int) error, g func(), h func(a, b int) (int, error)");
  EXPECT_EQ(declared("p:./app:main.f(arr [4]byte, l main.List[int], w io.Writer)"),
            "arr [4]uint8, l main.List[int], w io.Writer");
  EXPECT_EQ(declared("p:./app:fmt.Fprintln(w io.Writer, a ...any)"),
            "w io.Writer, a []interface {}");
  EXPECT_EQ(declared("p:./app:main.f(req *net/http.Request, x *example.com/my-mod/v2.T)"),
            "req *net/http.Request, x *example.com/my-mod/v2.T");
}

TEST(probe_go_params, groups_names_sharing_a_type) {
  EXPECT_EQ(declared("p:./app:main.add(a, b int, s string)"), "a int, b int, s string");
  EXPECT_EQ(declared("p:./app:main.f(_ int, tag string,)"), "_ int, tag string");
  EXPECT_EQ(declared("p:./app:main.f(_, _ int)"), "_ int, _ int");
}

// The receiver of a method is its first parameter.
TEST(probe_go_params, methods_declare_the_receiver_first) {
  ProbeSpec s = parse_ok(R"(r:./app:main.(*Store).Get(s *main.Store, key string) "%s", key)");
  EXPECT_EQ(s.function, "main.(*Store).Get");
  EXPECT_EQ(declared(R"(r:./app:main.(*Store).Get(s *main.Store, key string) "%s", key)"),
            "s *main.Store, key string");
}

TEST(probe_go_params, a_predicate_and_format_follow) {
  ProbeSpec s = parse_ok(R"(p::main.work(i int, tag string)(i == 3) "%d", i)");
  ASSERT_TRUE(s.params);
  ASSERT_TRUE(s.predicate);
  EXPECT_EQ(s.predicate->op, Expr::Op::Binary);
  // With a space before it, a '(' is the predicate, as always.
  ProbeSpec p = parse_ok(R"(p::main.work (i == 3) "%d", i)");
  EXPECT_FALSE(p.params);
  EXPECT_TRUE(p.predicate);
  // Attached, but a predicate all the same.
  EXPECT_FALSE(parse_ok("p::main.work(i == 3)").params);
  EXPECT_FALSE(parse_ok("p::main.work(arg1 > 3)").params);
  EXPECT_FALSE(parse_ok("p::main.work(i * 2 > 3)").params);
}

// C's declarations keep working: the form decides (a type then a name, or a name then a type).
TEST(probe_go_params, c_declarations_stay_c) {
  EXPECT_EQ(declared(R"(p:c:open(char *filename, int flags) "%s", filename)"),
            "filename C:char, flags C:int");
  EXPECT_EQ(declared("p:./app:f(FILE *f, size_t n)"), "f C:FILE, n C:size_t");
  EXPECT_EQ(declared("p:./app:f(my_len n)"), "n C:my_len");  // a typedef
  EXPECT_EQ(declared("p:./app:f(bool b)"), "b C:bool");
  EXPECT_EQ(declared("p:./app:orchard::Pear::ripen(void *self, int days)"),
            "self C:void, days C:int");
  // Two plain names read Go's way when the function has a Go name.
  auto go = parse_probe_spec("p:./app:main.f(n mytype)");
  ASSERT_FALSE(go);
  EXPECT_NE(go.error().message.find("unknown Go type 'mytype'"), std::string::npos);
  EXPECT_FALSE(is_go_declared(*parse_ok("p:./app:f(int fd)").params));
}

TEST(probe_go_params, argN_is_a_declared_parameter) {
  ProbeSpec s = parse_ok(R"(p::main.work(i int, tag string) "%d %s", arg1, arg2)");
  ASSERT_EQ(s.args.size(), 2u);
  EXPECT_EQ(s.args[0].op, Expr::Op::Arg);
  EXPECT_EQ(s.args[1].op, Expr::Op::Str);  // %s: the resolver reads a Go string by its length
  ProbeSpec r = parse_ok(R"(r::main.work(i int, tag string) "%s", $entry(arg2))");
  EXPECT_EQ(r.args[0].op, Expr::Op::Str);
  // Without a list, up to Go's nine registers parse; the planner holds C to six.
  EXPECT_EQ(parse_ok(R"(p::main.f "%d", arg9)").args[0].index, 9);
}

// Go code names its context parameter ctx by convention (net.(*Dialer).DialContext(d, ctx, ...)):
// a declared ctx is that parameter, as in C's lists, and bcc's ctx->REG is for specs without one.
TEST(probe_go_params, takes_ctx_as_a_parameter_name) {
  const std::string spec =
      R"(p::net.(*Dialer).DialContext(d *net.Dialer, ctx context.Context, network string, )"
      R"(address string) "%v %s", ctx, address)";
  EXPECT_EQ(declared(spec), "d *net.Dialer, ctx context.Context, network string, address string");
  ProbeSpec s = parse_ok(spec);
  ASSERT_EQ(s.args.size(), 2u);
  EXPECT_EQ(s.args[0].op, Expr::Op::Name);
  EXPECT_EQ(s.args[0].text, "ctx");
  // Declared, ctx->x is a member of the parameter, not a register.
  ProbeSpec m = parse_ok(R"(p::main.f(ctx *main.T) "%d", ctx->n)");
  ASSERT_EQ(m.args.size(), 1u);
  EXPECT_EQ(m.args[0].op, Expr::Op::Member);
  EXPECT_EQ(parse_ok(R"(p::main.f "%d", ctx->ax)").args[0].op, Expr::Op::Reg);
}

TEST(probe_go_params, reports_errors_with_their_column) {
  expect_errors({
      {"p::main.work(i strng)", 16, "unknown Go type 'strng'; did you mean string?"},
      {"p::main.work(i int, tag Store)", 25, "unknown Go type 'Store'"},
      {"p::main.work(i int, tag)", 21, "parameter 'tag' has no type"},
      {"p::main.work(i int tag string)", 20, "expected ',' or ')' after the type of 'i'"},
      {"p::main.work(i int, i string)", 21, "parameter 'i' is declared twice"},
      {"p::main.work(retval int)", 14,
       "'retval' can't name a parameter: in a spec it is the function's return value"},
      {"p::main.work(arg1 int)", 14,
       "'arg1' can't name a parameter: arg1 already names parameter 1 by its position"},
      {"p::main.work(str string)", 14,
       "'str' can't name a parameter: in a spec it is the "
       "function str(...)"},
      {"p::main.work(i int, , s string)", 21, "expected a parameter name but found ','"},
      {"p::main.work(i int", 19, "expected ',' or ')' after the type of 'i' but found the end"},
      {"p::main.work(s []", 18, "expected a Go type but found the end of the spec"},
      {"p::main.work(s [x]int)", 17, "expected ']' or an array length"},
      {"p::main.work(m map[string int)", 27, "expected ']' after the map's key type"},
      {"p::main.work(f func(int)", 25, "expected ',' or ')' after the type of 'f'"},
      {"p::main.work(f func(int", 20, "this '(' is not closed by ')'"},
      {"p::main.work(s struct{ a int })", 16, "a struct type written out is not supported"},
      {"p::main.work(r net/http)", 16, "'net/http' names a package but no type"},
      {"p::main.work(r main.)", 16, "'main.' is not a Go type name"},
      {"p::main.work(a ...int, b int)", 14, "'a' is variadic, so it must be the last"},
      {"p::main.work(a, b ...int)", 14, "only one parameter can be variadic"},
      {"p::main.work(a []...int)", 18, "'...' only goes before the type of a parameter"},
      {"p::main.work(s " + std::string(20, '*') + "int)", 33, "nests too deeply"},
      {R"(p::main.work(i int, tag string) "%d", arg3)", 39,
       "arg3 is out of range: main.work declares 2 parameters (i int, tag string)"},
      {R"(r::main.work(i int) "%d", $entry(arg2))", 34, "arg2 is out of range"},
      {R"(p::main.work "%d", arg10)", 20, "arg10 is out of range"},
      {"u:./x:probe(i int)", 12, "USDT probes have no parameter list"},
  });
  std::string many = "p::main.f(";
  for (int i = 0; i < 33; ++i) many += "a" + std::to_string(i) + " int, ";
  many += "z int)";
  auto r = parse_probe_spec(many);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("more than 32 parameters declared"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace uscope
