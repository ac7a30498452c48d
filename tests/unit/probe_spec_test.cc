#include "plan/probe_spec.h"

#include "plan/probe_parse.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace uscope {
namespace {

// Compact rendering of an expression tree so precedence is checked in one string.
std::string sexpr(const Expr& e) {
  auto kids = [&] {
    std::string s;
    for (const Expr& c : e.children) s += " " + sexpr(c);
    return s;
  };
  switch (e.op) {
    case Expr::Op::Arg:
      return "arg" + std::to_string(e.index);
    case Expr::Op::Retval:
      return "retval";
    case Expr::Op::Entry:
      return "$entry(arg" + std::to_string(e.index) + ")";
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
      return std::to_string(e.value);
    case Expr::Op::String:
      return "\"" + e.text + "\"";
    case Expr::Op::Str:
      return "(str" + kids() + ")";
    case Expr::Op::Deref:
      return "(*" + std::string(e.is_signed ? "s" : "u") + std::to_string(e.width * 8) + kids() +
             ")";
    case Expr::Op::Unary:
    case Expr::Op::Binary:
      return "(" + e.op_text + kids() + ")";
    case Expr::Op::Cast:
      return "((" + (e.type ? e.type->name + std::string(e.type->pointers, '*') : "?") + ")" +
             kids() + ")";
    case Expr::Op::Name:
      return e.text;
    case Expr::Op::Member:
      return "(" + std::string(e.index ? "->" : ".") + e.text + kids() + ")";
    case Expr::Op::Reg:
      return "ctx->" + e.text;
    case Expr::Op::GoValue:
      return "(go " + e.text + kids() + ")";
    case Expr::Op::AtEnd:
      return "(at-end" + std::to_string(e.index) + kids() + ")";
  }
  return "?";
}

ProbeSpec parse_ok(const std::string& text) {
  auto r = parse_probe_spec(text);
  EXPECT_TRUE(r.has_value()) << text << "\n" << (r ? "" : r.error().message);
  return r ? *r : ProbeSpec{};
}

std::string predicate_of(const std::string& text) {
  ProbeSpec s = parse_ok(text);
  return s.predicate ? sexpr(*s.predicate) : "<none>";
}

std::string args_of(const ProbeSpec& s) {
  std::string out;
  for (const Expr& a : s.args) out += (out.empty() ? "" : ", ") + sexpr(a);
  return out;
}

struct Head {
  std::string text;
  ProbeKind kind;
  std::string target, provider, function;
  uint64_t offset;
};

void expect_heads(const std::vector<Head>& cases, bool pattern) {
  for (const Head& c : cases) {
    auto r = pattern ? parse_probe_pattern(c.text) : parse_probe_spec(c.text);
    ASSERT_TRUE(r.has_value()) << c.text << "\n" << r.error().message;
    EXPECT_EQ(r->kind, c.kind) << c.text;
    EXPECT_EQ(r->target, c.target) << c.text;
    EXPECT_EQ(r->provider, c.provider) << c.text;
    EXPECT_EQ(r->function, c.function) << c.text;
    EXPECT_EQ(r->offset, c.offset) << c.text;
    EXPECT_EQ(r->text, c.text);
  }
}

struct Bad {
  std::string text;
  int column;
  std::string message;  // substring of what follows "probe spec column N: "
};

void expect_errors(const std::vector<Bad>& cases, bool pattern) {
  static const std::regex shape(R"(probe spec column [0-9]+: [^\n]+; [^\n]+)");
  for (const Bad& c : cases) {
    auto r = pattern ? parse_probe_pattern(c.text) : parse_probe_spec(c.text);
    ASSERT_FALSE(r.has_value()) << c.text;
    const std::string& m = r.error().message;
    std::string prefix = "probe spec column " + std::to_string(c.column) + ": ";
    EXPECT_EQ(m.substr(0, prefix.size()), prefix) << c.text << "\n" << m;
    EXPECT_NE(m.find(c.message), std::string::npos) << c.text << "\n" << m;
    EXPECT_TRUE(std::regex_match(m, shape)) << m;
  }
}

TEST(probe_spec, parses_probe_heads) {
  expect_heads(
      {
          {"p:c:malloc", ProbeKind::Entry, "c", "", "malloc", 0},
          {"r:c:malloc", ProbeKind::Return, "c", "", "malloc", 0},
          {"p::main", ProbeKind::Entry, "", "", "main", 0},
          {":c:malloc", ProbeKind::Entry, "c", "", "malloc", 0},
          {"c:malloc", ProbeKind::Entry, "c", "", "malloc", 0},
          {"malloc", ProbeKind::Entry, "", "", "malloc", 0},
          {"r:malloc", ProbeKind::Return, "", "", "malloc", 0},
          {"p:libssl.so.3:SSL_read", ProbeKind::Entry, "libssl.so.3", "", "SSL_read", 0},
          {"p:ssl:SSL_write", ProbeKind::Entry, "ssl", "", "SSL_write", 0},
          {"p:/usr/bin/redis-server:createStringObject", ProbeKind::Entry, "/usr/bin/redis-server",
           "", "createStringObject", 0},
          {"p:./server:handle", ProbeKind::Entry, "./server", "", "handle", 0},
          {"p:../build/a.out:main", ProbeKind::Entry, "../build/a.out", "", "main", 0},
          {"p:c:memcpy@GLIBC_2.14", ProbeKind::Entry, "c", "", "memcpy@GLIBC_2.14", 0},
          {"p:./x:foo.cold", ProbeKind::Entry, "./x", "", "foo.cold", 0},
          {"  p:c:malloc  ", ProbeKind::Entry, "c", "", "malloc", 0},
          // bpftrace's uprobe:libc:str*: the planner makes each function matched a probe.
          {"p:c:str*", ProbeKind::Entry, "c", "", "str*", 0},
          {"r:c:mem[cs]e?", ProbeKind::Return, "c", "", "mem[cs]e?", 0},
          {"u:./x:prov:*", ProbeKind::Usdt, "./x", "prov", "*", 0},
      },
      false);
  EXPECT_EQ(parse_ok("p:c:malloc").function_column, 5);
  EXPECT_EQ(parse_ok("malloc").function_column, 1);
}

// Go names: package paths with '/', method receivers, generic instantiations; a receiver's '('
// is not a parameter list, a '(' after the name still is.
TEST(probe_spec, parses_go_names) {
  expect_heads(
      {
          {"p::net/http.Get", ProbeKind::Entry, "", "", "net/http.Get", 0},
          {"r:./app:main.(*Store).Get", ProbeKind::Return, "./app", "", "main.(*Store).Get", 0},
          {"p:./app:net/http.(*Client).do", ProbeKind::Entry, "./app", "", "net/http.(*Client).do",
           0},
          {"p::main.Store.String", ProbeKind::Entry, "", "", "main.Store.String", 0},
          {"p::main.(Store).String", ProbeKind::Entry, "", "", "main.(Store).String", 0},
          {"p::main.Sum[...]", ProbeKind::Entry, "", "", "main.Sum[...]", 0},
          {"p::main.Sum[go.shape.int_0]", ProbeKind::Entry, "", "", "main.Sum[go.shape.int_0]", 0},
          {"p::main.(*List[...]).Push", ProbeKind::Entry, "", "", "main.(*List[...]).Push", 0},
          {"p::vendor/golang.org/x/net/http2/hpack.(*Decoder).Write", ProbeKind::Entry, "", "",
           "vendor/golang.org/x/net/http2/hpack.(*Decoder).Write", 0},
          {"p::main.(*Store).*", ProbeKind::Entry, "", "", "main.(*Store).*", 0},
      },
      false);
  expect_heads({{"./app:net/http.*", ProbeKind::Entry, "./app", "", "net/http.*", 0},
                {"./app:main.(*Store).Get", ProbeKind::Entry, "./app", "", "main.(*Store).Get", 0}},
               true);
  ProbeSpec s = parse_ok(R"(p::main.(*Store).Get (arg1 > 0) "%d", arg1)");
  EXPECT_EQ(s.function, "main.(*Store).Get");
  EXPECT_EQ(predicate_of(R"(p::main.(*Store).Get (arg1 > 0) "%d", arg1)"), "(> arg1 0)");
}

TEST(probe_spec, parses_usdt_probes_with_and_without_provider) {
  expect_heads(
      {
          {"u:/usr/bin/python3.11:python:function__entry", ProbeKind::Usdt, "/usr/bin/python3.11",
           "python", "function__entry", 0},
          {"u:./x:myprobe", ProbeKind::Usdt, "./x", "", "myprobe", 0},
          {"u::myprobe", ProbeKind::Usdt, "", "", "myprobe", 0},
          {"u:myprobe", ProbeKind::Usdt, "", "", "myprobe", 0},
          {"u:libc:libc:memory_malloc_retry", ProbeKind::Usdt, "libc", "libc",
           "memory_malloc_retry", 0},
      },
      false);
}

TEST(probe_spec, parses_offsets_on_entry_probes) {
  expect_heads(
      {
          {"p:c:malloc+0x10", ProbeKind::Entry, "c", "", "malloc", 16},
          {"p:c:malloc+0X1f", ProbeKind::Entry, "c", "", "malloc", 31},
          {"p:c:malloc+16", ProbeKind::Entry, "c", "", "malloc", 16},
          {"c:malloc+0", ProbeKind::Entry, "c", "", "malloc", 0},
          {"main+0xffffffffffffffff", ProbeKind::Entry, "", "", "main", UINT64_MAX},
      },
      false);
}

TEST(probe_spec, parses_issue_examples) {
  ProbeSpec redis = parse_ok(R"(p:/usr/bin/redis-server:createStringObject "%s", arg1)");
  EXPECT_EQ(redis.format, "%s");
  EXPECT_EQ(args_of(redis), "(str arg1)");

  ProbeSpec malloc = parse_ok(R"(r:c:malloc "size=%d -> %p", $entry(arg1), retval)");
  EXPECT_EQ(malloc.kind, ProbeKind::Return);
  EXPECT_EQ(args_of(malloc), "$entry(arg1), retval");

  ProbeSpec server = parse_ok(R"(p:./server:handle (arg2 > 100) "len=%d", arg2)");
  EXPECT_EQ(server.target, "./server");
  ASSERT_TRUE(server.predicate);
  EXPECT_EQ(sexpr(*server.predicate), "(> arg2 100)");
  EXPECT_EQ(server.predicate->column, 20);
  EXPECT_EQ(args_of(server), "arg2");

  ProbeSpec py =
      parse_ok(R"(u:/usr/bin/python3.11:python:function__entry "%s:%s:%d", arg1, arg2, arg3)");
  EXPECT_EQ(py.provider, "python");
  EXPECT_EQ(args_of(py), "(str arg1), (str arg2), arg3");
}

TEST(probe_spec, parses_return_probe_with_entry_arg) {
  ProbeSpec s = parse_ok(R"(r:c:malloc ($entry(arg1) > 4096 && retval == 0) "%d", $entry(arg1))");
  EXPECT_EQ(sexpr(*s.predicate), "(&& (> $entry(arg1) 4096) (== retval 0))");
  ASSERT_EQ(s.args.size(), 1u);
  EXPECT_EQ(s.args[0].op, Expr::Op::Entry);
  EXPECT_EQ(s.args[0].index, 1);
  EXPECT_EQ(s.args[0].column, 55);
}

TEST(probe_spec, parses_predicate_without_space_or_format) {
  ProbeSpec s = parse_ok("p:c:malloc(arg1>10)");
  EXPECT_EQ(s.function, "malloc");
  EXPECT_EQ(sexpr(*s.predicate), "(> arg1 10)");
  EXPECT_TRUE(s.format.empty());
  EXPECT_TRUE(s.args.empty());
  EXPECT_EQ(parse_ok(R"(p:c:puts"hi")").format, "hi");
}

TEST(probe_spec, follows_c_precedence) {
  struct Case {
    std::string expr, tree;
  };
  std::vector<Case> cases = {
      {"arg1 + 2 * arg3 == 7 && $pid != 1", "(&& (== (+ arg1 (* 2 arg3)) 7) (!= $pid 1))"},
      {"arg1 - 2 - 3", "(- (- arg1 2) 3)"},
      {"arg1 / 2 % 3 * 4", "(* (% (/ arg1 2) 3) 4)"},
      {"(arg1 + 2) * 3", "(* (+ arg1 2) 3)"},
      {"1 | 2 ^ 3 & 4", "(| 1 (^ 2 (& 3 4)))"},
      {"arg1 & 1 == 1", "(& arg1 (== 1 1))"},
      {"arg1 << 2 < arg2 >> 1", "(< (<< arg1 2) (>> arg2 1))"},
      {"arg1 < 2 == arg2 >= 3", "(== (< arg1 2) (>= arg2 3))"},
      {"!arg1 || arg2 && arg3", "(|| (! arg1) (&& arg2 arg3))"},
      {"arg1 || arg2 || arg3", "(|| (|| arg1 arg2) arg3)"},
      {"-arg1 * ~arg2", "(* (- arg1) (~ arg2))"},
      {"arg1 - -1", "(- arg1 -1)"},
      {"arg1 <= 1 != arg2 > 2", "(!= (<= arg1 1) (> arg2 2))"},
      {"*arg1 + 1", "(+ (*u64 arg1) 1)"},
      {"$tid % $cpu ^ $uid", "(^ (% $tid $cpu) $uid)"},
  };
  for (const Case& c : cases) EXPECT_EQ(predicate_of("p:c:f (" + c.expr + ")"), c.tree) << c.expr;
}

TEST(probe_spec, parses_literals) {
  struct Case {
    std::string expr, tree;
  };
  std::vector<Case> cases = {
      {"42", "42"},
      {"0", "0"},
      {"0x1F", "31"},
      {"-5", "-5"},
      {"- 5", "-5"},
      {"--5", "5"},
      {"'a'", "97"},
      {"'\\n'", "10"},
      {"'\\''", "39"},
      {"'\\0'", "0"},
      {"9223372036854775807", "9223372036854775807"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"0xffffffffffffffff", "-1"},
      {"18446744073709551615", "-1"},
  };
  for (const Case& c : cases) EXPECT_EQ(predicate_of("p:c:f (" + c.expr + ")"), c.tree) << c.expr;
}

TEST(probe_spec, parses_variables) {
  ProbeSpec s = parse_ok(R"(p:c:f "%d %d %d %s %u", $pid, $tid, $cpu, $comm, $uid)");
  EXPECT_EQ(args_of(s), "$pid, $tid, $cpu, $comm, $uid");
  ProbeSpec u = parse_ok(R"(u:./x:p "%d", arg12)");
  EXPECT_EQ(args_of(u), "arg12");
}

TEST(probe_spec, parses_str_with_length_arg) {
  ProbeSpec s = parse_ok(R"(p:/usr/bin/redis-server:createStringObject "%s", str(arg1, arg2))");
  EXPECT_EQ(args_of(s), "(str arg1 arg2)");
  EXPECT_EQ(s.args[0].column, 50);
  EXPECT_EQ(args_of(parse_ok(R"(p:c:f "%s", str(arg1, 16))")), "(str arg1 16)");
  EXPECT_EQ(args_of(parse_ok(R"(p:c:f "%s", str(*(void**)arg1))")), "(str (*u64 arg1))");
  EXPECT_EQ(args_of(parse_ok(R"(p:c:f "%s", str(arg1 + 8, arg2 - 1))")),
            "(str (+ arg1 8) (- arg2 1))");
}

TEST(probe_spec, parses_derefs_with_casts) {
  struct Case {
    std::string expr, tree;
  };
  std::vector<Case> cases = {
      {"*arg1", "(*u64 arg1)"},
      {"*(u8*)arg1", "(*u8 arg1)"},
      {"*(u16*)arg1", "(*u16 arg1)"},
      {"*(u32 *)arg1", "(*u32 arg1)"},
      {"*(u64*)arg1", "(*u64 arg1)"},
      {"*(s8*)arg1", "(*s8 arg1)"},
      {"*(s16*)arg1", "(*s16 arg1)"},
      {"*(s32*)arg1", "(*s32 arg1)"},
      {"*(s64*)arg1", "(*s64 arg1)"},
      {"*(char*)arg1", "(*s8 arg1)"},
      {"*(short*)arg1", "(*s16 arg1)"},
      {"*(int*)arg1", "(*s32 arg1)"},
      {"*(long*)arg1", "(*s64 arg1)"},
      {"*(void**)arg1", "(*u64 arg1)"},
      {"*(char**)arg1", "(*u64 arg1)"},
      {"*(u32*)(arg1 + 4)", "(*u32 (+ arg1 4))"},
      {"*(u32*)arg1 + 4", "(+ (*u32 arg1) 4)"},
      {"*(arg1 + 8)", "(*u64 (+ arg1 8))"},
      {"*(int*)*(void**)arg1", "(*s32 (*u64 arg1))"},
      {"**(char**)arg1", "(*u64 (*u64 arg1))"},
  };
  for (const Case& c : cases) EXPECT_EQ(predicate_of("p:c:f (" + c.expr + ")"), c.tree) << c.expr;
}

TEST(probe_spec, parses_string_comparisons) {
  EXPECT_EQ(predicate_of(R"(p:c:f ($comm == "nginx"))"), R"((== $comm "nginx"))");
  EXPECT_EQ(predicate_of(R"(p:c:f ("nginx" != $comm))"), R"((!= "nginx" $comm))");
  EXPECT_EQ(predicate_of(R"(p:c:f (str(arg1) == "GET" && arg2 > 0))"),
            R"((&& (== (str arg1) "GET") (> arg2 0)))");
  EXPECT_EQ(predicate_of(R"(p:c:f (str(arg1, 3) == "a\"b\\"))"), R"((== (str arg1 3) "a"b\"))");
  EXPECT_EQ(predicate_of(R"(p:c:f ($comm == "123456789012345"))"),
            R"((== $comm "123456789012345"))");
}

TEST(probe_spec, wraps_pointers_printed_with_percent_s) {
  struct Case {
    std::string spec, args;
  };
  std::vector<Case> cases = {
      {R"(p:c:f "%s", arg1)", "(str arg1)"},
      {R"(r:c:f "%s", retval)", "(str retval)"},
      {R"(r:c:f "%s", $entry(arg2))", "(str $entry(arg2))"},
      {R"(p:c:f "%s", *(void**)arg1)", "(str (*u64 arg1))"},
      {R"(p:c:f "%s", *arg1)", "(str (*u64 arg1))"},
      {R"(p:c:f "%s", $comm)", "$comm"},
      {R"(p:c:f "%s", str(arg1))", "(str arg1)"},
      {R"(u:./x:p "%s", arg3)", "(str arg3)"},
  };
  for (const Case& c : cases) EXPECT_EQ(args_of(parse_ok(c.spec)), c.args) << c.spec;
  ProbeSpec s = parse_ok(R"(p:c:f "%d %s", arg1, arg2)");
  EXPECT_EQ(s.args[1].op, Expr::Op::Str);
  EXPECT_EQ(s.args[1].column, 22);
}

TEST(probe_spec, decodes_format_escapes) {
  ProbeSpec s = parse_ok(R"(p:c:f "a\tb\n\"q\" \\ %d%%", arg1)");
  EXPECT_EQ(s.format, "a\tb\n\"q\" \\ %d%%");
  ASSERT_EQ(s.conversions.size(), 1u);
  // Columns count the source text, so the escapes before it count twice.
  EXPECT_EQ(s.conversions[0].column, 23);
  EXPECT_EQ(s.conversions[0].format_pos, 10u);
  EXPECT_EQ(s.conversions[0].format_len, 2u);
}

TEST(probe_spec, parses_format_conversions) {
  ProbeSpec s = parse_ok(
      R"(p:c:f "%-08.3lu %hhx %zd %lld %X %p %c %i %5s %.2s %+d %hd", 1, 2, 3, 4, 5, 6, 7, 8, arg1, arg2, 9, 10)");
  struct Conv {
    char conv;
    std::string length, flags;
    int column;
  };
  std::vector<Conv> want = {
      {'u', "l", "-08.3", 8}, {'x', "hh", "", 17}, {'d', "z", "", 22}, {'d', "ll", "", 26},
      {'X', "", "", 31},      {'p', "", "", 34},   {'c', "", "", 37},  {'i', "", "", 40},
      {'s', "", "5", 43},     {'s', "", ".2", 47}, {'d', "", "+", 52}, {'d', "h", "", 56},
  };
  std::vector<std::string> texts = {"%-08.3lu", "%hhx", "%zd", "%lld", "%X",  "%p",
                                    "%c",       "%i",   "%5s", "%.2s", "%+d", "%hd"};
  ASSERT_EQ(s.conversions.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s.conversions[i].conv, want[i].conv) << i;
    EXPECT_EQ(s.conversions[i].length, want[i].length) << i;
    EXPECT_EQ(s.conversions[i].flags, want[i].flags) << i;
    EXPECT_EQ(s.conversions[i].column, want[i].column) << i;
    // format_pos/len index the decoded format; here it is the source shifted by the quote.
    EXPECT_EQ(s.conversions[i].format_pos, static_cast<size_t>(want[i].column - 8)) << i;
    EXPECT_EQ(s.format.substr(s.conversions[i].format_pos, s.conversions[i].format_len), texts[i]);
  }
  EXPECT_TRUE(parse_ok(R"(p:c:f "100%% done")").conversions.empty());
}

TEST(probe_spec, reports_brief_examples_exactly) {
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"p:c:malloc (arg1 > ) ",
       "probe spec column 20: expected an expression but found ')'; write a number, argN, retval, "
       "a $variable or str(ptr) here"},
      {R"(p:c:malloc "%d %d", arg1)",
       "probe spec column 16: format has 2 conversions but 1 argument; add an argument for each "
       "conversion, or write %% for a literal %"},
      {R"(p:c:malloc "%d", retval)",
       "probe spec column 18: retval is only available in return probes (r:); use r:c:malloc to "
       "see what it returns"},
      {"q:c:malloc",
       "probe spec column 1: unknown probe type 'q'; use p: (entry), r: (return) or u: (USDT)"},
  };
  for (const Case& c : cases) {
    auto r = parse_probe_spec(c.text);
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().message, c.message);
  }
}

TEST(probe_spec, reports_head_errors_with_column) {
  expect_errors(
      {
          {"", 1, "the probe spec is empty"},
          {"   ", 1, "the probe spec is empty"},
          {"(arg1)", 1, "expected a probe before '('"},
          {"t:sched:sched_switch", 1, "unknown probe type 't'"},
          {"p:c:", 5, "expected a function name"},
          {"u:./x:", 7, "expected a USDT probe name"},
          {"p:c:malloc+", 12, "expected an offset after '+'"},
          {"p:c:malloc+0x1g", 15, "unexpected 'g' in the offset"},
          {"p:c:malloc+0x", 13, "unexpected 'x' in the offset"},
          {"p:c:malloc+99999999999999999999", 12, "does not fit in 64 bits"},
          {"r:c:malloc+4", 11, "an offset only works with entry probes (p:)"},
          {"u:./x:probe+4", 12, "an offset only works with entry probes (p:)"},
          {"p:/a:b:c", 7, "too many ':'-separated fields"},
          {"u:/a:b:c:d", 9, "too many ':'-separated fields"},
          {"p:c:mal)loc", 8, "unexpected ')' in the function name"},
          {"u:x:py-thon:probe", 7, "unexpected '-' in the USDT provider"},
          {"u:x:py:pro.be", 11, "unexpected '.' in the probe name"},
          {std::string("p:c:f\x01x"), 6, "unexpected '\\x01' in the function name"},
      },
      false);
}

TEST(probe_spec, reports_expression_errors_with_column) {
  expect_errors(
      {
          {"p:c:malloc (arg1 > 0", 21, "expected ')' to close the predicate at column 12"},
          {"p:c:malloc ()", 13, "the predicate is empty"},
          {"p:c:malloc (arg1) (arg2)", 19, "a probe takes one predicate"},
          {"p:c:malloc (arg1 = 1)", 18, "'=' is assignment"},
          {"p:c:malloc (arg1 # 2)", 18, "unexpected character '#'"},
          {"p:c:malloc ((arg1 > 0)", 23, "expected ')' to close the predicate"},
          {"p:c:malloc ((arg1 > 0) \"x\")", 24, "expected ')' to close the predicate at column 12"},
          {"p:c:malloc (1 + (2 \"x\"))", 20, "expected ')' to match the '(' at column 17"},
          {"p:c:malloc ($foo > 1)", 13, "unknown variable '$foo'"},
          {"p:c:malloc ($pdi > 1)", 13, "did you mean $pid?"},
          {"p:c:malloc ($ > 1)", 13, "expected a variable name after '$'"},
          {"p:c:malloc (arg1 / 0)", 20, "division by zero"},
          {"p:c:malloc (arg1 % 0)", 20, "division by zero"},
          {"p:c:malloc (arg1 << 64)", 21, "shift by 64 is outside 0..63"},
          {"p:c:malloc (arg1 >> -1)", 21, "shift by -1"},
          {"p:c:malloc (010)", 13, "octal literals"},
          {"p:c:malloc (10UL)", 15, "unexpected 'U' right after the number 10"},
          {"p:c:malloc (0x)", 13, "'0x' is not followed by hex digits"},
          {"p:c:malloc (99999999999999999999)", 13, "does not fit in 64 bits"},
          {"p:c:malloc ('ab')", 13, "exactly one character"},
          {"p:c:malloc ('')", 13, "exactly one character"},
          {"p:c:malloc ('\\q')", 14, "unknown escape '\\q'"},
          {"p:c:malloc (*(u8)arg1)", 17, "expected '*' after 'u8' in the cast"},
          {"p:c:malloc (*(u8* arg1)", 19, "expected ')' to close the cast"},
          {"p:c:malloc (*(void*)arg1)", 15, "can't read a void"},
          {"p:c:malloc (u32 > 1)", 13, "'u32' is a type, not a value"},
          {"p:c:malloc (*$comm)", 14, "can't dereference $comm"},
          {"p:c:malloc (str arg1)", 17, "expected '(' after str"},
          {"p:c:malloc (str(arg1, 0) == \"x\")", 23, "the length of str() must be positive"},
          {"p:c:malloc (str(arg1, $comm) == \"x\")", 23, "the length of str() must be a number"},
          {"p:c:malloc (str($comm) == \"x\")", 17, "str() needs a pointer but $comm is a string"},
          {"p:c:malloc (str(arg1, arg2, 3) == \"x\")", 27, "expected ')' to close the str("},
          {"p:c:malloc (arg1 > 0) \"%d\", arg1,", 34, "found the end of the spec"},
      },
      false);
}

TEST(probe_spec, reports_probe_kind_errors) {
  expect_errors(
      {
          {R"(p:c:malloc "%d", retval)", 18, "retval is only available in return probes (r:)"},
          {R"(u:./x:p "%d", retval)", 15, "retval is only available in return probes (r:)"},
          {R"(p:c:malloc "%d", arg10)", 18,
           "arg10 is out of range; entry and return probes can "
           "read arg1..arg9 (C: arg1..arg6"},
          {R"(p:c:malloc "%d", arg0)", 18,
           "arg0 is out of range; entry and return probes can "
           "read arg1..arg9"},
          {R"(p:c:malloc "%d", arg01)", 18, "arg01 is out of range"},
          {R"(u:./x:probe "%d", arg13)", 19, "arg13 is out of range; USDT probes have arg1..arg12"},
          {R"(u:./x:probe "%d", arg0)", 19, "arg1..arg12"},
          {R"(p:c:malloc "%d", $entry(arg1))", 18,
           "$entry(argN) is only available in return probes (r:)"},
          {R"(u:./x:p "%d", $entry(arg1))", 15, "$entry(argN) is only available in return"},
          {"r:c:malloc (arg1 > 0)", 13, "arg1 is not available in return probes"},
          {R"(r:c:malloc "%d", $entry(arg10))", 25, "arg10 is out of range; $entry can save"},
          {R"(r:c:malloc "%d", $entry(5))", 25, "$entry takes an argument name"},
          {R"(r:c:malloc "%d", $entry arg1)", 25, "expected '(' after $entry"},
          {R"(r:c:malloc "%d", $entry(arg1)", 29, "expected ')' to close $entry("},
      },
      false);
}

TEST(probe_spec, reports_type_errors) {
  expect_errors(
      {
          {"p:c:malloc (arg1 + \"x\")", 20, "a string literal can't be an operand of '+'"},
          {"p:c:malloc ($comm + 1)", 13, "$comm is a string and can't be an operand of '+'"},
          {"p:c:malloc (!str(arg1))", 14, "str(...) is a string"},
          {"p:c:malloc ($comm == arg1)", 22, "arg1 is a number and can't be compared with $comm"},
          {"p:c:malloc ($comm == str(arg1))", 22, "comparing two run-time strings"},
          {"p:c:malloc (\"a\" == \"b\")", 20, "comparing two string literals"},
          {"p:c:malloc (arg1 == \"x\")", 13, "arg1 is a number, not a string"},
          {"p:c:malloc ($comm == \"a_very_long_command\")", 22,
           "$comm holds at most 15 characters"},
          {"p:c:malloc ($comm)", 13, "the predicate is $comm, a string"},
          {"p:c:malloc (\"x\")", 13, "the predicate is a string literal"},
          {R"(p:c:malloc "%s", $pid)", 18, "%s needs a string but $pid is a number"},
          {R"(p:c:malloc "%s", arg1 + 1)", 18, "%s needs a string but an expression with '+'"},
          {R"(p:c:malloc "%s", *(u8*)arg1)", 18, "%s needs a string but a dereference"},
          {R"(p:c:malloc "%d", $comm)", 18, "%d needs a number but $comm is a string"},
          {R"(p:c:malloc "%lu", str(arg1))", 19, "%lu needs a number but str(...) is a string"},
          {R"(p:c:malloc "%c", $comm)", 18, "%c needs a number"},
          {R"(p:c:malloc "%s", "lit")", 18, "a string literal can't be printed"},
      },
      false);
}

TEST(probe_spec, reports_format_errors) {
  expect_errors(
      {
          {R"(p:c:malloc "%d %d", arg1)", 16, "format has 2 conversions but 1 argument"},
          {R"(p:c:malloc "%d", arg1, arg2)", 24, "format has 1 conversion but 2 arguments"},
          {R"(p:c:malloc "hello", arg1)", 21, "format has 0 conversions but 1 argument"},
          {R"(p:c:malloc "%d")", 13, "format has 1 conversion but 0 arguments"},
          {R"(p:c:malloc "%f", arg1)", 13, "unsupported conversion '%f'"},
          {R"(p:c:malloc "%S", arg1)", 13, "unsupported conversion '%S'"},
          {R"(p:c:malloc "%lU", arg1)", 13, "length modifier 'l' does not apply to %U"},
          {R"(p:c:malloc "%K", str(arg1))", 18, "%K needs a number but str(...) is a string"},
          {R"(p:c:malloc "%ls", arg1)", 13, "length modifier 'l' does not apply to %s"},
          {R"(p:c:malloc "%*d", arg1)", 14, "'*' widths are not supported"},
          {R"(p:c:malloc "%99999d", arg1)", 13, "field width or precision above 1024"},
          {R"(p:c:malloc "%.99999d", arg1)", 13, "field width or precision above 1024"},
          {R"(p:c:malloc "%")", 13, "the format ends in the middle of a conversion"},
          {R"(p:c:malloc "%ll")", 13, "the format ends in the middle of a conversion"},
          {R"(p:c:malloc "%d)", 12, "this string has no closing '\"'"},
          {R"(p:c:malloc "\q")", 13, "unknown escape '\\q'"},
          {"p:c:malloc arg1", 12, "expected a \"format\" string but found 'arg1'"},
          {R"(p:c:malloc "%d %d" arg1 arg2)", 25, "found 'arg2' after argument 1"},
          {R"(p:c:malloc "%d" "%d", arg1)", 17, "found a string after the format string"},
          {R"(p:c:malloc "%d", arg1 arg2)", 23, "found 'arg2' after argument 1"},
          {R"(p:c:malloc "%d", arg1,)", 23, "expected an expression but found the end"},
          {R"(p:c:malloc "%d" "%d")", 17, "found a string after the format string"},
      },
      false);
}

TEST(probe_spec, parses_patterns) {
  expect_heads(
      {
          {"c:str*", ProbeKind::Entry, "c", "", "str*", 0},
          {"c:malloc", ProbeKind::Entry, "c", "", "malloc", 0},
          {"p:c:str*", ProbeKind::Entry, "c", "", "str*", 0},
          {"u:/path:python:*", ProbeKind::Usdt, "/path", "python", "*", 0},
          {"u:/path:func*_entry", ProbeKind::Usdt, "/path", "", "func*_entry", 0},
          {"str*", ProbeKind::Entry, "", "", "str*", 0},
          {"/usr/bin/x:foo*", ProbeKind::Entry, "/usr/bin/x", "", "foo*", 0},
          {"c:mem[!s]?py", ProbeKind::Entry, "c", "", "mem[!s]?py", 0},
          {"c:[a-z]*", ProbeKind::Entry, "c", "", "[a-z]*", 0},
          {" c:str* ", ProbeKind::Entry, "c", "", "str*", 0},
      },
      true);
}

TEST(probe_spec, reports_pattern_errors) {
  expect_errors(
      {
          {"", 1, "the probe spec is empty"},
          {"r:c:malloc", 1, "count and latency patterns can't be return probes"},
          {"c:malloc (arg1)", 10, "unexpected '(' after the pattern"},
          {"c:malloc \"%d\"", 10, "unexpected '\"' after the pattern"},
          {"c:malloc+4", 9, "count and latency patterns take no +offset"},
          {"c:", 3, "expected a function name"},
          {"x:c:str*", 1, "unknown probe type 'x'"},
          {"c:str)", 6, "unexpected ')' in the function name"},
      },
      true);
}

TEST(probe_spec, parses_cpp_and_rust_names) {
  expect_heads(
      {
          {"p::orchard::Pear::ripen", ProbeKind::Entry, "", "", "orchard::Pear::ripen", 0},
          {"p:./app:orchard::Pear::ripen", ProbeKind::Entry, "./app", "", "orchard::Pear::ripen",
           0},
          {"r:./app:orchard::Pear::ripen", ProbeKind::Return, "./app", "", "orchard::Pear::ripen",
           0},
          {"orchard::harvest", ProbeKind::Entry, "", "", "orchard::harvest", 0},
          {"./app:orchard::harvest", ProbeKind::Entry, "./app", "", "orchard::harvest", 0},
          {"p:./app:\"orchard::Pear::ripen(int)\"", ProbeKind::Entry, "./app", "",
           "orchard::Pear::ripen(int)", 0},
          {"p:./app:\"orchard::Pear::ripen(const char *)\"", ProbeKind::Entry, "./app", "",
           "orchard::Pear::ripen(const char *)", 0},
          {"p::\"ns::C::operator()(int)\"+0x4", ProbeKind::Entry, "", "", "ns::C::operator()(int)",
           4},
          {"p:./app:orchard::Basket<int>::add", ProbeKind::Entry, "./app", "",
           "orchard::Basket<int>::add", 0},
          {"p:./app:orchard::Basket<int>::add+8", ProbeKind::Entry, "./app", "",
           "orchard::Basket<int>::add", 8},
          {"p:./app:ns::Widget<std::pair<int,long>>::~Widget", ProbeKind::Entry, "./app", "",
           "ns::Widget<std::pair<int,long>>::~Widget", 0},
          {"p:./app:myapp::server::handle", ProbeKind::Entry, "./app", "", "myapp::server::handle",
           0},
          {"p:./app:_ZN7orchard4Pear5ripenEi", ProbeKind::Entry, "./app", "",
           "_ZN7orchard4Pear5ripenEi", 0},
      },
      false);
  EXPECT_EQ(parse_ok("p:./app:orchard::Pear::ripen").function_column, 9);
  EXPECT_EQ(parse_ok("p:./app:\"orchard::Pear::ripen(int)\"").function_column, 10);
  ProbeSpec s = parse_ok(R"(p::orchard::Pear::ripen "%d", arg2)");
  EXPECT_EQ(s.function, "orchard::Pear::ripen");
  EXPECT_EQ(args_of(s), "arg2");
  ProbeSpec q = parse_ok(R"x(p:./app:"orchard::Pear::ripen(int)" (arg2 > 3) "%d", arg2)x");
  EXPECT_EQ(sexpr(*q.predicate), "(> arg2 3)");
}

TEST(probe_spec, parses_cpp_patterns) {
  expect_heads(
      {
          {"./app:orchard::*", ProbeKind::Entry, "./app", "", "orchard::*", 0},
          {"orchard::*", ProbeKind::Entry, "", "", "orchard::*", 0},
          {"p::orchard::Pear::*", ProbeKind::Entry, "", "", "orchard::Pear::*", 0},
          {"*::ripen", ProbeKind::Entry, "", "", "*::ripen", 0},
          {"./app:orchard::Basket<*>::add", ProbeKind::Entry, "./app", "",
           "orchard::Basket<*>::add", 0},
      },
      true);
}

TEST(probe_spec, parses_bcc_short_forms) {
  expect_heads(
      {
          {"c:malloc", ProbeKind::Entry, "c", "", "malloc", 0},
          {"u:pthread:libpthread:pthread_create", ProbeKind::Usdt, "pthread", "libpthread",
           "pthread_create", 0},
          {"u:pthread:pthread_create", ProbeKind::Usdt, "pthread", "", "pthread_create", 0},
          {"r:bash:readline", ProbeKind::Return, "bash", "", "readline", 0},
      },
      false);
  ProbeSpec u = parse_ok("u:pthread:libpthread:pthread_create (arg4 != 0)");
  EXPECT_EQ(sexpr(*u.predicate), "(!= arg4 0)");
}

// bcc's trace reads `"format" arg1` as `"format", arg1` (its regex takes the ',' as optional),
// and the seed blog writes the redis example so.
TEST(probe_spec, takes_the_first_argument_without_a_comma_as_bcc_does) {
  for (const auto& [without, with] : std::vector<std::pair<std::string, std::string>>{
           {R"(/usr/bin/redis-server:createStringObject "%s" arg1)",
            R"(/usr/bin/redis-server:createStringObject "%s", arg1)"},
           {R"(p:c:write (arg1 == 1) "%d %s" arg3, arg2)",
            R"(p:c:write (arg1 == 1) "%d %s", arg3, arg2)"},
           {R"(r:c:malloc "%llx" retval)", R"(r:c:malloc "%llx", retval)"},
           {R"(p:c:open "%s"str(arg1))", R"(p:c:open "%s", str(arg1))"},
       }) {
    ProbeSpec a = parse_ok(without);
    ProbeSpec b = parse_ok(with);
    EXPECT_EQ(args_of(a), args_of(b)) << without;
    EXPECT_EQ(a.format, b.format) << without;
    EXPECT_EQ(a.target, b.target) << without;
    EXPECT_EQ(a.function, b.function) << without;
    EXPECT_EQ(a.args.size(), static_cast<size_t>(std::count(with.begin(), with.end(), ',')))
        << without;
  }
  EXPECT_EQ(args_of(parse_ok(R"(/usr/bin/redis-server:createStringObject "%s" arg1)")),
            "(str arg1)");
}

TEST(probe_spec, reports_cpp_name_errors) {
  expect_errors(
      {
          {"p:./app:\"ns::f(int)", 9, "quoted function name has no closing"},
          {"p:\"./app\":f", 10, "only the function name can be quoted"},
          {"p:./app:ns::C::operator()", 24, "quote C++ operator names"},
          {"p:./app:ns::f:g", 14, "too many ':'-separated fields"},
          {"p::a:b", 5, "too many ':'-separated fields"},
          {"p:./app:ns::C::operator+", 25, "expected an offset after '+'"},
      },
      false);
}

TEST(probe_spec, parses_casts_of_expressions) {
  struct Case {
    std::string expr, tree;
  };
  std::vector<Case> cases = {
      {"(int)arg1 < 0", "(< ((int) arg1) 0)"},
      {"(u8)arg2", "((u8) arg2)"},
      {"(unsigned long)arg1", "((unsigned long) arg1)"},
      {"(long unsigned int)arg1", "((unsigned long) arg1)"},
      {"(unsigned)arg1", "((unsigned int) arg1)"},
      {"(signed char)arg1", "((signed char) arg1)"},
      {"(long long)arg1", "((long long) arg1)"},
      {"(unsigned long long)arg1", "((unsigned long long) arg1)"},
      {"(short int)arg1", "((short) arg1)"},
      {"(int8_t)arg1", "((int8_t) arg1)"},
      {"(uint64_t)arg1", "((uint64_t) arg1)"},
      {"(size_t)arg1", "((size_t) arg1)"},
      {"(ssize_t)arg1", "((ssize_t) arg1)"},
      {"(pid_t)arg1", "((pid_t) arg1)"},
      {"(bool)arg1", "((bool) arg1)"},
      {"(char *)arg2", "((char*) arg2)"},
      {"(const char *)arg2", "((char*) arg2)"},
      {"(void *)arg1", "((void*) arg1)"},
      {"(struct foo *)arg1", "((struct foo*) arg1)"},
      {"(union u **)arg1", "((union u**) arg1)"},
      {"(int)(arg1 + 1)", "((int) (+ arg1 1))"},
      {"-(int)arg1", "(- ((int) arg1))"},
      {"(int)*(u32*)arg1", "((int) (*u32 arg1))"},
      {"*(u32*)(int)arg1", "(*u32 ((int) arg1))"},
      {"(int)arg1 * 2", "(* ((int) arg1) 2)"},
      {"(arg1)", "arg1"},
      {"(arg1) + 1", "(+ arg1 1)"},
  };
  for (const Case& c : cases) EXPECT_EQ(predicate_of("p:c:f (" + c.expr + ")"), c.tree) << c.expr;

  ProbeSpec r = parse_ok(R"(r:c:read ((int)retval < 0) "read failed: %d", retval)");
  ASSERT_TRUE(r.predicate);
  const Expr& cast = r.predicate->children[0];
  ASSERT_EQ(cast.op, Expr::Op::Cast);
  EXPECT_EQ(cast.width, 4);
  EXPECT_TRUE(cast.is_signed);
  ASSERT_TRUE(cast.type);
  EXPECT_EQ(cast.type->name, "int");
  EXPECT_EQ(cast.type->pointers, 0);
  EXPECT_EQ(cast.column, 11);

  ProbeSpec u8 = parse_ok(R"(p:c:f "%d", (u8)arg2)");
  EXPECT_EQ(u8.args[0].width, 1);
  EXPECT_FALSE(u8.args[0].is_signed);
  ProbeSpec p = parse_ok(R"(p:c:f "%d", (struct foo *)arg1)");
  EXPECT_EQ(p.args[0].width, 8);
  EXPECT_EQ(p.args[0].type->name, "struct foo");
  EXPECT_EQ(p.args[0].type->pointers, 1);
  // A pointer cast printed with %s is the string it points to.
  EXPECT_EQ(args_of(parse_ok(R"(p:c:f "%s", (char *)arg2)")), "(str ((char*) arg2))");
}

TEST(probe_spec, reports_cast_errors) {
  expect_errors(
      {
          {"p:c:f ((uint32)arg1)", 9, "unknown type 'uint32'; did you mean uint32_t"},
          {"p:c:f ((foo *)arg1)", 9, "unknown type 'foo'"},
          {"p:c:f ((float)arg1)", 9, "unknown type 'float'"},
          {"p:c:f ((unsigned float)arg1)", 18, "expected ')' to close the cast to unsigned int"},
          {"p:c:f ((short long)arg1)", 9, "'short long' is not a C type"},
          {"p:c:f ((long long long)arg1)", 9, "not a C type"},
          {"p:c:f ((void)arg1)", 9, "can't cast a value to void"},
          {"p:c:f ((struct foo)arg1)", 9, "cast to a pointer: (struct foo *)"},
          {"p:c:f ((int arg1)", 13, "expected ')' to close the cast to int"},
          {"p:c:f ((struct)arg1)", 15, "expected a name after 'struct'"},
          {"p:c:f ((int)$comm == 1)", 13, "can't cast $comm, a string"},
          {"p:c:f (*(struct foo*)arg1)", 10, "can't read a whole struct foo"},
      },
      false);
}

TEST(probe_spec, strcmp_is_str_compare) {
  EXPECT_EQ(predicate_of(R"(p:c:open (STRCMP("test.txt", arg1)))"),
            R"((== (str arg1) "test.txt"))");
  EXPECT_EQ(predicate_of(R"(p:c:open (STRCMP(arg1, "x")))"), R"((== (str arg1) "x"))");
  EXPECT_EQ(predicate_of(R"(p:c:open (STRCMP("bash", $comm)))"), R"((== $comm "bash"))");
  EXPECT_EQ(predicate_of(R"(p:c:open (!STRCMP("a", str(arg1, 4)) && arg2))"),
            R"((&& (! (== (str arg1 4) "a")) arg2))");
  ProbeSpec s = parse_ok(R"(p:c:open (STRCMP("test.txt", arg1)) "opening %s", arg1)");
  EXPECT_EQ(args_of(s), "(str arg1)");
  expect_errors(
      {
          {R"(p:c:f (STRCMP(arg1, arg2)))", 21, "STRCMP compares with a \"string literal\""},
          {R"(p:c:f (STRCMP("a", "b")))", 20, "STRCMP of two string literals"},
          {R"(p:c:f (STRCMP("a" arg1)))", 19, "expected ',' in STRCMP"},
          {R"x(p:c:f (STRCMP("a", arg1 "x"))x", 25,
           "expected ')' to close the STRCMP( at column 8"},
          {R"(p:c:f (STRCMP "a"))", 15, "expected '(' after STRCMP"},
      },
      false);
}

TEST(probe_spec, accepts_bcc_user_suffix) {
  EXPECT_EQ(args_of(parse_ok(R"(p:c:open "%s", arg1@user)")), "(str arg1)");
  EXPECT_EQ(predicate_of(R"(p:c:open (arg2@user > 1))"), "(> arg2 1)");
}

TEST(probe_spec, parses_declared_parameters) {
  ProbeSpec open = parse_ok(R"(p:c:open(char *filename) "opening %s", filename)");
  EXPECT_EQ(open.function, "open");
  ASSERT_TRUE(open.params);
  ASSERT_EQ(open.params->size(), 1u);
  EXPECT_EQ((*open.params)[0].name, "filename");
  EXPECT_EQ((*open.params)[0].type.name, "char");
  EXPECT_EQ((*open.params)[0].type.pointers, 1);
  EXPECT_EQ((*open.params)[0].column, 10);
  // A name's type is unknown until the planner resolves it: %s leaves it as it is.
  EXPECT_EQ(args_of(open), "filename");
  EXPECT_EQ(open.args[0].op, Expr::Op::Name);

  ProbeSpec ns = parse_ok(R"(p:c:nanosleep(struct timespec *req) "%lld", req->tv_nsec)");
  ASSERT_TRUE(ns.params);
  EXPECT_EQ((*ns.params)[0].type.name, "struct timespec");
  EXPECT_EQ(args_of(ns), "(->tv_nsec req)");
  EXPECT_EQ(ns.args[0].op, Expr::Op::Member);
  EXPECT_EQ(ns.args[0].index, 1);

  ProbeSpec two = parse_ok(R"(p:./app:f(int a, const char *b) "%d %s", a, b)");
  ASSERT_EQ(two.params->size(), 2u);
  EXPECT_EQ((*two.params)[1].name, "b");
  EXPECT_EQ((*two.params)[1].type.name, "char");
  EXPECT_EQ(args_of(two), "a, b");

  ProbeSpec combined = parse_ok(R"(p:./app:f(int fd, int level)(level == 0) "%d", fd)");
  ASSERT_EQ(combined.params->size(), 2u);
  EXPECT_EQ(sexpr(*combined.predicate), "(== level 0)");

  ProbeSpec spaced = parse_ok(R"(p:./app:f(unsigned long n, FILE *f) (n > 2))");
  EXPECT_EQ((*spaced.params)[0].type.name, "unsigned long");
  EXPECT_EQ((*spaced.params)[1].type.name, "FILE");  // a typedef DWARF may know
  EXPECT_EQ(sexpr(*spaced.predicate), "(> n 2)");

  EXPECT_TRUE(parse_ok("p:./app:f()").params->empty());
  EXPECT_TRUE(parse_ok("p:./app:f(void)").params->empty());
  EXPECT_FALSE(parse_ok("p:c:malloc (arg1 > 1)").params);
  EXPECT_FALSE(parse_ok("p:c:malloc(arg1>10)").params);
  ProbeSpec cpp = parse_ok(R"(p:./app:orchard::Pear::ripen(void *self, int days) "%d", days)");
  EXPECT_EQ(cpp.function, "orchard::Pear::ripen");
  EXPECT_EQ(cpp.params->size(), 2u);
}

TEST(probe_spec, parses_names_members_and_registers) {
  EXPECT_EQ(predicate_of("p:./app:f (len > 0)"), "(> len 0)");
  EXPECT_EQ(predicate_of("p:./app:f (this->size > 0)"), "(> (->size this) 0)");
  EXPECT_EQ(predicate_of("p:./app:f (req->hdr.len > 0)"), "(> (.len (->hdr req)) 0)");
  EXPECT_EQ(predicate_of("p:./app:f (*req->name == 'a')"), "(== (*u64 (->name req)) 97)");
  EXPECT_EQ(predicate_of("p:./app:f (((struct foo *)arg1)->len > 0)"),
            "(> (->len ((struct foo*) arg1)) 0)");
  ProbeSpec regs =
      parse_ok(R"(p:/tmp/a.out:main+0xd "%x %x %x %x", ctx->dx, ctx->ip, ctx->r8, ctx->rdi)");
  EXPECT_EQ(args_of(regs), "ctx->rdx, ctx->rip, ctx->r8, ctx->rdi");
  EXPECT_EQ(regs.offset, 0xdu);
  // A declared parameter named ctx is a parameter.
  EXPECT_EQ(args_of(parse_ok(R"(p:./app:f(struct c *ctx) "%d", ctx->dx)")), "(->dx ctx)");
  // %s of a register is the string it points to.
  EXPECT_EQ(args_of(parse_ok(R"(p:./app:f "%s", ctx->si)")), "(str ctx->rsi)");
}

TEST(probe_spec, reports_parameter_and_member_errors) {
  expect_errors(
      {
          {"p:./app:f(int a, int a)", 22, "parameter 'a' is declared twice"},
          {"p:./app:f(int a int b)", 17,
           "expected ',' or ')' in the parameter list opened at "
           "column 10"},
          {"p:./app:f(int a,)", 17, "expected a type but found ')'"},
          {"p:./app:f(struct foo x)", 11, "a struct foo is passed by value here"},
          {"p:./app:f(int retval)", 15,
           "'retval' can't name a parameter: in a spec it is the function's return value"},
          {"p:./app:f(int arg2)", 15, "'arg2' can't name a parameter: arg2 already names "},
          {"p:./app:f(int a, int b, int c, int d, int e, int f, int g)", 53,
           "7 parameters declared; uprobes read the first 6"},
          {"u:./x:probe(int a)", 12, "USDT probes have no parameter list"},
          {"p:./app:f (ctx->foo > 1)", 17, "ctx has no register 'foo'"},
          {"p:./app:f (req-> > 1)", 18, "expected a member name after '->'"},
          {"p:./app:f ($comm->x > 1)", 12, "$comm is a string and has no members"},
      },
      false);
}

TEST(probe_spec, check_format_args_is_idempotent) {
  ProbeSpec s = parse_ok(R"(p:./app:f(char *path) "%s %s %d", path, arg2, path)");
  EXPECT_EQ(args_of(s), "path, (str arg2), path");
  // What the name resolver does: rewrite the name, then check the format again.
  Expr arg1;
  arg1.op = Expr::Op::Arg;
  arg1.index = 1;
  arg1.column = s.args[0].column;
  s.args[0] = arg1;
  ASSERT_TRUE(probe_detail::check_format_args(s));
  EXPECT_EQ(args_of(s), "(str arg1), (str arg2), path");
  ASSERT_TRUE(probe_detail::check_format_args(s));
  EXPECT_EQ(args_of(s), "(str arg1), (str arg2), path");
}

TEST(probe_spec, renders_caret_under_column) {
  EXPECT_EQ(caret_message("p:c:malloc (arg1 > )", 20, "boom"),
            "p:c:malloc (arg1 > )\n                   ^ boom");
  // Column past the end points just after the text.
  EXPECT_EQ(caret_message("ab", 9, "m"), "ab\n  ^ m");
  // Tabs are mirrored and control bytes masked so the caret stays aligned on one line.
  EXPECT_EQ(caret_message("a\tb\nc", 5, "m"), "a\tb?c\n \t  ^ m");
  // UTF-8 continuation bytes take no column of their own.
  EXPECT_EQ(caret_message("\xc3\xa9x", 3, "m"), "\xc3\xa9x\n ^ m");
  // Without a column, the one in a parse error is used.
  std::string spec = "p:c:malloc (arg1 > ) ";
  auto r = parse_probe_spec(spec);
  ASSERT_FALSE(r);
  std::string rendered = caret_message(spec, 0, r.error().message);
  EXPECT_EQ(rendered.substr(0, rendered.find('^') + 1), spec + "\n" + std::string(19, ' ') + "^");
  EXPECT_EQ(caret_message("x", 0, "no column here"), "no column here");
}

TEST(probe_spec, survives_fuzz_found_inputs) {
  std::vector<std::string> inputs = {
      std::string(200, '('),
      "p:c:f (" + std::string(100, '(') + "1" + std::string(100, ')') + ")",
      "p:c:f (" + std::string(300, '-') + "1)",
      "p:c:f (" + std::string(300, '!') + "1)",
      "p:c:f (" + std::string(300, '*') + "arg1)",
      "p:c:f (1" +
          [] {
            std::string s;
            for (int i = 0; i < 500; ++i) s += "+1";
            return s;
          }() +
          ")",
      "p:c:f (str(" + std::string(100, '*') + "arg1) == \"x\")",
      "p:c:f \"%s\", " + std::string(63, '*') + "arg1",
      "p:c:f (*(" + std::string(100, '(') + "arg1)",
      "p:c:f (*(u8" + std::string(500, '*') + ")arg1)",
      std::string(5000, 'a'),
      std::string("p:c:f (\0)", 9),
      std::string("p:c:f \"\0%d\", arg1", 17),
      "\"",
      "p:c:f \"\\",
      "p:c:f '",
      "p:c:f ('\\",
      "p:c:f ($",
      "p:c:f (*(",
      "p:c:f (*(u8",
      "p:c:f (*(u8*",
      "p:c:f $entry(",
      "r:c:f ($entry(arg1",
      "p:c:f (str(arg1,",
      "::::::::",
      "+",
      "p:c:+",
      "p:c:f+0x",
      "u:::",
      "p:c:f \"%-",
      "p:c:f \"%5.\"",
  };
  for (const std::string& in : inputs) {
    auto r = parse_probe_spec(in);
    if (!r) {
      EXPECT_FALSE(caret_message(in, 0, r.error().message).empty());
    }
    auto p = parse_probe_pattern(in);
    if (!p) {
      EXPECT_FALSE(caret_message(in, 0, p.error().message).empty());
    }
  }
  // Nesting deeper than 64 is an error, not a deep stack.
  auto deep =
      parse_probe_spec("p:c:f (" + std::string(100, '(') + "1" + std::string(100, ')') + ")");
  ASSERT_FALSE(deep);
  EXPECT_NE(deep.error().message.find("nests more than 64 levels"), std::string::npos);
  auto chain = parse_probe_spec(inputs[5]);
  ASSERT_FALSE(chain);
  EXPECT_NE(chain.error().message.find("nests more than 64 levels"), std::string::npos);
  auto longspec = parse_probe_spec(std::string(5000, 'a'));
  ASSERT_FALSE(longspec);
  EXPECT_NE(longspec.error().message.find("column 4097: the probe spec is 5000 bytes long"),
            std::string::npos);
  // Shallow enough stays accepted.
  EXPECT_TRUE(
      parse_probe_spec("p:c:f (" + std::string(60, '(') + "1" + std::string(60, ')') + ")"));
}

}  // namespace
}  // namespace uscope
