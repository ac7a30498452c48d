// compile_probe over parsed specs: the exact stack-machine ops, pool bytes, flags and output fields
// each probe compiles to (src/bpf/trace.h), for SysV, Go and USDT argument sources, and the errors
// for what cannot run at a site.
#include "plan/recipe.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "discover/usdt.h"
#include "plan/probe_spec.h"

namespace uscope {
namespace {

// One op without its padding, comparable and printable.
struct Op {
  int code = 0;
  int a = 0;
  int b = 0;
  int64_t imm = 0;
  bool operator==(const Op&) const = default;
};

const char* op_name(int code) {
  static const char* const kNames[] = {
      "END",  "REG",      "CONST",     "PID",       "TID",          "CPU",   "UID",    "ENTRY",
      "SAVE", "DEREF",    "EXT",       "ADD",       "SUB",          "MUL",   "DIV",    "MOD",
      "AND",  "OR",       "XOR",       "SHL",       "SHR",          "SAR",   "EQ",     "NE",
      "LT",   "LE",       "GT",        "GE",        "SLT",          "SLE",   "SGT",    "SGE",
      "LAND", "LOR",      "NOT",       "NEG",       "BITNOT",       "STREQ", "COMMEQ", "FILTER",
      "EMIT", "EMIT_STR", "EMIT_COMM", "AGG_VALUE", "EMIT_GOIFACE", "ADDI"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == TOP_NUM_OPS);
  return code >= 0 && code < TOP_NUM_OPS ? kNames[code] : "?";
}

void PrintTo(const Op& o, std::ostream* os) {
  *os << "{" << op_name(o.code) << " a=" << o.a << " b=" << o.b << " imm=" << o.imm << "}";
}

Op reg(int r) {
  return {TOP_REG, r, 0, 0};
}
Op konst(int64_t v) {
  return {TOP_CONST, 0, 0, v};
}
Op simple(int code) {
  return {code, 0, 0, 0};
}
const Op kEmit = simple(TOP_EMIT);
const Op kFilter = simple(TOP_FILTER);
const Op kAdd = simple(TOP_ADD);
const Op kMul = simple(TOP_MUL);

std::vector<Op> ops(const uscope_recipe& r) {
  std::vector<Op> out;
  for (uint32_t i = 0; i < r.n_ops && i < TRACE_MAX_OPS; ++i)
    out.push_back({r.ops[i].code, r.ops[i].a, r.ops[i].b, r.ops[i].imm});
  return out;
}

ProbeSpec parse(std::string_view text) {
  auto spec = parse_probe_spec(text);
  EXPECT_TRUE(spec.has_value()) << text << ": " << (spec ? "" : spec.error().message);
  return spec ? *spec : ProbeSpec{};
}

// Compiles `text` at a site of the spec's own kind unless `site.kind` is forced.
Result<CompiledProbe> compile(std::string_view text, SiteContext site = {}, uint32_t id = 0,
                              std::optional<ProbeKind> force_kind = std::nullopt) {
  ProbeSpec spec = parse(text);
  site.kind = force_kind ? *force_kind : spec.kind;
  return compile_probe(spec, site, id);
}

CompiledProbe compile_ok(std::string_view text, SiteContext site = {}, uint32_t id = 0) {
  auto c = compile(text, std::move(site), id);
  EXPECT_TRUE(c.has_value()) << text << ": " << (c ? "" : c.error().message);
  return c ? *c : CompiledProbe{};
}

std::string compile_error(std::string_view text, SiteContext site = {},
                          std::optional<ProbeKind> force_kind = std::nullopt) {
  auto c = compile(text, std::move(site), 0, force_kind);
  EXPECT_FALSE(c.has_value()) << text << " compiled";
  return c ? "" : c.error().message;
}

// A USDT location with the given argument string.
UsdtLocation usdt_location(std::string_view args, uint64_t addr = 0x1000) {
  UsdtLocation loc;
  loc.addr = addr;
  loc.offset = addr;
  loc.args_text = std::string(args);
  auto parsed = parse_usdt_args(args);
  EXPECT_TRUE(parsed.has_value()) << args << ": " << (parsed ? "" : parsed.error().message);
  if (parsed) loc.args = *parsed;
  return loc;
}

SiteContext usdt_site(const UsdtLocation& loc) {
  SiteContext s;
  s.kind = ProbeKind::Usdt;
  s.usdt = &loc;
  s.site_addr = loc.addr;
  return s;
}

TEST(recipe, compiles_arg1_to_rdi_and_emit) {
  SiteContext site;
  site.sp_delta = -8;
  auto c = compile_ok(R"(p::f "%d", arg1)", site, 7);
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI), kEmit}));
  EXPECT_EQ(c.main.probe_id, 7u);
  EXPECT_EQ(c.main.sp_delta, -8);
  EXPECT_EQ(c.main.flags, static_cast<uint32_t>(TRACE_F_AT_ENTRY));
  EXPECT_FALSE(c.entry.has_value());
  ASSERT_EQ(c.fields.size(), 1u);
  EXPECT_EQ(c.fields[0].kind, OutputField::Kind::Value);
  EXPECT_EQ(c.fields[0].conv.conv, 'd');
}

TEST(recipe, maps_arg1_to_arg6_to_sysv_registers) {
  auto c = compile_ok(R"(p::f "%d %d %d %d %d %d", arg1, arg2, arg3, arg4, arg5, arg6)");
  EXPECT_EQ(ops(c.main),
            (std::vector<Op>{reg(UREG_RDI), kEmit, reg(UREG_RSI), kEmit, reg(UREG_RDX), kEmit,
                             reg(UREG_RCX), kEmit, reg(UREG_R8), kEmit, reg(UREG_R9), kEmit}));
  EXPECT_EQ(c.fields.size(), 6u);
}

TEST(recipe, maps_go_abi_arguments_to_rax_rbx_rcx_rdi_rsi_r8) {
  SiteContext site;
  site.cc = &go_register_convention();
  auto c = compile_ok(R"(p::f "%d %d %d %d %d %d", arg1, arg2, arg3, arg4, arg5, arg6)", site);
  EXPECT_EQ(ops(c.main),
            (std::vector<Op>{reg(UREG_RAX), kEmit, reg(UREG_RBX), kEmit, reg(UREG_RCX), kEmit,
                             reg(UREG_RDI), kEmit, reg(UREG_RSI), kEmit, reg(UREG_R8), kEmit}));
}

TEST(recipe, refuses_arguments_of_go_before_the_register_abi) {
  SiteContext site;
  site.cc = &go_register_convention();
  site.go_stack_abi = "go1.16.15";
  auto msg = compile_error(R"(p::f "%d", arg1)", site);
  EXPECT_NE(msg.find("go1.16.15"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stack"), std::string::npos) << msg;
  // Probes that read no argument still work.
  auto c = compile_ok(R"(p::f "%d", $pid)", site);
  EXPECT_EQ(ops(c.main), (std::vector<Op>{simple(TOP_PID), kEmit}));
}

TEST(recipe, compiles_predicate_before_emits) {
  auto c = compile_ok(R"(p::f (arg1 > 10) "%d", arg2)");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI), konst(10), simple(TOP_SGT), kFilter,
                                          reg(UREG_RSI), kEmit}));
  ASSERT_EQ(c.fields.size(), 1u);
}

TEST(recipe, predicate_without_format_only_filters) {
  auto c = compile_ok(R"(p::f ($pid == 42 || $tid != 7))");
  EXPECT_EQ(ops(c.main),
            (std::vector<Op>{simple(TOP_PID), konst(42), simple(TOP_EQ), simple(TOP_TID), konst(7),
                             simple(TOP_NE), simple(TOP_LOR), kFilter}));
  EXPECT_TRUE(c.fields.empty());
}

TEST(recipe, maps_each_binary_operator_to_its_opcode) {
  const std::pair<const char*, int> cases[] = {
      {"+", TOP_ADD},  {"-", TOP_SUB},   {"*", TOP_MUL},  {"/", TOP_DIV},  {"%", TOP_MOD},
      {"&", TOP_AND},  {"|", TOP_OR},    {"^", TOP_XOR},  {"<<", TOP_SHL}, {">>", TOP_SHR},
      {"==", TOP_EQ},  {"!=", TOP_NE},   {"<", TOP_SLT},  {"<=", TOP_SLE}, {">", TOP_SGT},
      {">=", TOP_SGE}, {"&&", TOP_LAND}, {"||", TOP_LOR},
  };
  for (const auto& [text, code] : cases) {
    std::string spec = std::string(R"(p::f "%d", arg1 )") + text + " arg2";
    auto c = compile_ok(spec);
    EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI), reg(UREG_RSI), simple(code), kEmit}))
        << spec;
  }
}

TEST(recipe, compiles_unary_operators_and_builtins) {
  auto c =
      compile_ok(R"(p::f "%d %d %d %d %d %d %d", -arg1, !arg1, ~arg1, $pid, $tid, $cpu, $uid)");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI), simple(TOP_NEG), kEmit, reg(UREG_RDI),
                                          simple(TOP_NOT), kEmit, reg(UREG_RDI), simple(TOP_BITNOT),
                                          kEmit, simple(TOP_PID), kEmit, simple(TOP_TID), kEmit,
                                          simple(TOP_CPU), kEmit, simple(TOP_UID), kEmit}));
}

TEST(recipe, compiles_typed_dereference_with_width_and_sign) {
  auto c = compile_ok(R"(p::f "%d %u", *(s32*)arg1, *(u16*)(arg2 + 8))");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI),
                                          {TOP_DEREF, 4, 1, 0},
                                          kEmit,
                                          {TOP_REG, UREG_RSI, 0, 8},  // arg2 + 8 in one op
                                          {TOP_DEREF, 2, 0, 0},
                                          kEmit}));
}

TEST(recipe, str_with_length_expression_emits_exact_length) {
  auto c = compile_ok(R"(p::f "%s", str(arg1, arg2))");
  EXPECT_EQ(ops(c.main),
            (std::vector<Op>{reg(UREG_RDI), reg(UREG_RSI), {TOP_EMIT_STR, 1, 0, kMaxStringBytes}}));
  ASSERT_EQ(c.fields.size(), 1u);
  EXPECT_EQ(c.fields[0].kind, OutputField::Kind::String);
  EXPECT_EQ(c.fields[0].conv.conv, 's');
}

TEST(recipe, str_with_constant_length_is_nul_terminated_at_most_that_long) {
  auto c = compile_ok(R"(p::f "%s", str(arg1, 32))");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI), {TOP_EMIT_STR, 0, 0, 32}}));
  // Capped at what one BPF string read holds.
  auto big = compile_ok(R"(p::f "%s", str(arg1, 50000))");
  EXPECT_EQ(ops(big.main), (std::vector<Op>{reg(UREG_RDI), {TOP_EMIT_STR, 0, 0, kMaxStringBytes}}));
  EXPECT_EQ(kMaxStringBytes, TRACE_MAX_STR - 3);
}

TEST(recipe, percent_s_of_plain_pointer_reads_nul_terminated_default_bytes) {
  auto c = compile_ok(R"(p::f "%s", arg1)");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI), {TOP_EMIT_STR, 0, 0, 128}}));
  ASSERT_EQ(c.fields.size(), 1u);
  EXPECT_EQ(c.fields[0].kind, OutputField::Kind::String);
  auto s = compile_ok(R"(p::f "%s", str(arg2))");
  EXPECT_EQ(ops(s.main), (std::vector<Op>{reg(UREG_RSI), {TOP_EMIT_STR, 0, 0, 128}}));
}

TEST(recipe, percent_s_of_comm_emits_comm) {
  auto c = compile_ok(R"(p::f "%s %d", $comm, arg1)");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{simple(TOP_EMIT_COMM), reg(UREG_RDI), kEmit}));
  ASSERT_EQ(c.fields.size(), 2u);
  EXPECT_EQ(c.fields[0].kind, OutputField::Kind::String);
  EXPECT_EQ(c.fields[1].kind, OutputField::Kind::Value);
}

TEST(recipe, comm_equality_compiles_to_commeq_with_pool_bytes) {
  for (const char* spec : {R"(p::f ($comm == "redis"))", R"(p::f ("redis" == $comm))"}) {
    auto c = compile_ok(spec);
    EXPECT_EQ(ops(c.main), (std::vector<Op>{{TOP_COMMEQ, 0, 5, 0}, kFilter})) << spec;
    EXPECT_EQ(std::string(c.main.pool, 6), std::string("redis\0", 6)) << spec;
  }
}

TEST(recipe, str_inequality_compiles_to_streq_then_not) {
  auto c = compile_ok(R"(p::f (str(arg1) != "GET"))");
  EXPECT_EQ(ops(c.main),
            (std::vector<Op>{reg(UREG_RDI), {TOP_STREQ, 0, 3, 0}, simple(TOP_NOT), kFilter}));
  EXPECT_EQ(std::string(c.main.pool, 3), "GET");
  auto eq = compile_ok(R"(p::f (str(arg1) == "GET"))");
  EXPECT_EQ(ops(eq.main), (std::vector<Op>{reg(UREG_RDI), {TOP_STREQ, 0, 3, 0}, kFilter}));
}

TEST(recipe, string_constants_share_one_pool_in_order) {
  auto c = compile_ok(R"(p::f ($comm == "ab" && str(arg2) == "cde"))");
  EXPECT_EQ(
      ops(c.main),
      (std::vector<Op>{
          {TOP_COMMEQ, 0, 2, 0}, reg(UREG_RSI), {TOP_STREQ, 2, 3, 0}, simple(TOP_LAND), kFilter}));
  EXPECT_EQ(std::string(c.main.pool, 5), "abcde");
}

TEST(recipe, string_pool_overflow_fails_at_the_literal) {
  std::string fits = "p::f (str(arg1) == \"" + std::string(125, 'a') + "\")";
  auto c = compile_ok(fits);
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI), {TOP_STREQ, 0, 125, 0}, kFilter}));
  EXPECT_EQ(std::string(c.main.pool, 125), std::string(125, 'a'));
  std::string over = "p::f (str(arg1) == \"" + std::string(128, 'a') + "\")";
  // The literal starts at column 20.
  EXPECT_EQ(compile_error(over), "probe spec column 20: a compared string is at most 125 bytes");
  // Two literals count together: 100 + 28 bytes.
  std::string two = "p::f (str(arg1) == \"" + std::string(100, 'a') + "\" && str(arg2) == \"" +
                    std::string(28, 'b') + "\")";
  EXPECT_NE(compile_error(two).find("string constants exceed 127 bytes"), std::string::npos);
}

// The BPF side compares at most TRACE_POOL - 3 bytes: longer literals are refused.
TEST(recipe, string_literal_bpf_cannot_compare_is_refused) {
  std::string spec = "p::f (str(arg1) == \"" + std::string(126, 'a') + "\")";
  auto c = compile(spec);
  EXPECT_FALSE(c.has_value())
      << "compiled a 126-byte STREQ that str_equal() cannot tell from a longer string";
}

TEST(recipe, entry_value_in_return_probe_uses_entry_slot_and_entry_recipe) {
  SiteContext site;
  site.sp_delta = 0;
  auto c = compile_ok(R"(r::f "%d", $entry(arg2))", site, 3);
  EXPECT_EQ(ops(c.main), (std::vector<Op>{{TOP_ENTRY, 0, 0, 0}, kEmit}));
  EXPECT_EQ(c.main.flags, static_cast<uint32_t>(TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY));
  EXPECT_EQ(c.main.probe_id, 3u);
  ASSERT_TRUE(c.entry.has_value());
  EXPECT_EQ(ops(*c.entry), (std::vector<Op>{reg(UREG_RSI), {TOP_SAVE, 0, 0, 0}}));
  EXPECT_EQ(c.entry->flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY));
  EXPECT_EQ(c.entry->probe_id, 3u);
}

TEST(recipe, same_entry_argument_twice_uses_one_slot) {
  auto c =
      compile_ok(R"(r::f ($entry(arg2) > 0) "%d %d %s", $entry(arg1), $entry(arg2), $entry(arg1))");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{{TOP_ENTRY, 0, 0, 0},
                                          konst(0),
                                          simple(TOP_SGT),
                                          kFilter,
                                          {TOP_ENTRY, 1, 0, 0},
                                          kEmit,
                                          {TOP_ENTRY, 0, 0, 0},
                                          kEmit,
                                          {TOP_ENTRY, 1, 0, 0},
                                          {TOP_EMIT_STR, 0, 0, 128}}));
  ASSERT_TRUE(c.entry.has_value());
  EXPECT_EQ(
      ops(*c.entry),
      (std::vector<Op>{reg(UREG_RSI), {TOP_SAVE, 0, 0, 0}, reg(UREG_RDI), {TOP_SAVE, 1, 0, 0}}));
}

TEST(recipe, retval_reads_rax_without_entry_recipe) {
  auto c = compile_ok(R"(r::f "%ld", retval)");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RAX), kEmit}));
  EXPECT_EQ(c.main.flags, static_cast<uint32_t>(TRACE_F_RETURN));
  EXPECT_FALSE(c.entry.has_value());
  ASSERT_EQ(c.fields.size(), 1u);
  EXPECT_EQ(c.fields[0].conv.length, "l");
}

TEST(recipe, at_entry_flag_only_for_entry_probes_at_offset_zero) {
  EXPECT_EQ(compile_ok(R"(p::f "%d", arg1)").main.flags, static_cast<uint32_t>(TRACE_F_AT_ENTRY));
  EXPECT_EQ(compile_ok(R"(p::f+4 "%d", arg1)").main.flags, 0u);
  EXPECT_EQ(compile_ok(R"(r::f "%d", retval)").main.flags, static_cast<uint32_t>(TRACE_F_RETURN));
  UsdtLocation loc = usdt_location("8@%rdi");
  EXPECT_EQ(compile_ok(R"(u::p:n "%d", arg1)", usdt_site(loc)).main.flags, 0u);
}

TEST(recipe, capture_stack_sets_stack_flag) {
  SiteContext site;
  site.capture_stack = true;
  EXPECT_EQ(compile_ok(R"(p::f "%d", arg1)", site).main.flags,
            static_cast<uint32_t>(TRACE_F_STACK | TRACE_F_AT_ENTRY));
  EXPECT_EQ(compile_ok(R"(p::f+1)", site).main.flags, static_cast<uint32_t>(TRACE_F_STACK));
  auto r = compile_ok(R"(r::f "%d", $entry(arg1))", site);
  EXPECT_EQ(r.main.flags,
            static_cast<uint32_t>(TRACE_F_STACK | TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY));
  ASSERT_TRUE(r.entry.has_value());
  EXPECT_EQ(r.entry->flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY));
}

TEST(recipe, arg_in_return_probe_fails_and_suggests_entry) {
  // The parser refuses this already; compile_probe must too when the site is a return site.
  EXPECT_EQ(compile_error(R"(p::f "%d", arg3)", {}, ProbeKind::Return),
            "probe spec column 12: arg3 is not preserved at return; use $entry(arg3)");
}

TEST(recipe, retval_in_entry_probe_fails) {
  EXPECT_EQ(compile_error(R"(r::f "%d", retval)", {}, ProbeKind::Entry),
            "probe spec column 12: retval needs a return probe (r:)");
  EXPECT_EQ(compile_error(R"(r::f "%d", $entry(arg1))", {}, ProbeKind::Entry),
            "probe spec column 12: $entry() needs a return probe (r:)");
}

TEST(recipe, usdt_argument_past_the_probes_count_fails_with_column) {
  UsdtLocation loc = usdt_location("-4@%eax 8@%rdx 8@-8(%rbp)");
  EXPECT_EQ(compile_error(R"(u::prov:name "%d", arg4)", usdt_site(loc)),
            "probe spec column 20: this USDT probe has 3 arguments; arg4 does not exist");
  UsdtLocation one = usdt_location("8@%rdx");
  EXPECT_EQ(compile_error(R"(u::prov:name "%d %d", arg1, arg2)", usdt_site(one)),
            "probe spec column 29: this USDT probe has 1 argument; arg2 does not exist");
}

TEST(recipe, exactly_64_ops_compile_and_65_fail) {
  auto spec_with = [](int n) {
    std::string fmt, args;
    for (int i = 0; i < n; ++i) {
      fmt += "%d ";
      args += ", arg1";
    }
    return "p::f \"" + fmt + "\"" + args;
  };
  auto c = compile_ok(spec_with(32));  // 32 x (REG, EMIT)
  EXPECT_EQ(c.main.n_ops, 64u);
  // 33 x 2 = 66 ops; and a predicate pushing it to 65.
  EXPECT_EQ(compile_error(spec_with(33)),
            "probe spec column 1: probe needs more than 64 operations; simplify the predicate or "
            "print fewer arguments");
  std::string pred = spec_with(32);
  pred.insert(4, " (arg1)");  // REG, FILTER: 66 ops
  EXPECT_NE(compile_error(pred).find("more than 64 operations"), std::string::npos);
}

TEST(recipe, stack_deeper_than_8_fails) {
  // Right-nested: every operand is pushed before the first ADD.
  auto c = compile_ok(R"(p::f "%d", arg1+(arg2+(arg3+(arg4+(arg5+(arg6+(arg1+arg2)))))))");
  EXPECT_EQ(c.main.n_ops, 8u + 7u + 1u);
  EXPECT_EQ(
      compile_error(R"(p::f "%d", arg1+(arg2+(arg3+(arg4+(arg5+(arg6+(arg1+(arg2+arg3))))))))"),
      "probe spec column 1: expression nests deeper than 8 values; split it");
  // Left-nested chains of any length stay two deep.
  auto flat = compile_ok(R"(p::f "%d", arg1+arg2+arg3+arg4+arg5+arg6+arg1+arg2+arg3+arg4)");
  EXPECT_EQ(flat.main.n_ops, 10u + 9u + 1u);
}

TEST(recipe, usdt_register_operand_narrower_than_8_bytes_is_extended) {
  UsdtLocation loc = usdt_location("-4@%eax 2@%si 8@%rdx");
  auto c = compile_ok(R"(u::p:n "%d %d %d", arg1, arg2, arg3)", usdt_site(loc));
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RAX),
                                          {TOP_EXT, 4, 1, 0},
                                          kEmit,
                                          reg(UREG_RSI),
                                          {TOP_EXT, 2, 0, 0},
                                          kEmit,
                                          reg(UREG_RDX),
                                          kEmit}));
}

TEST(recipe, usdt_constant_operand) {
  UsdtLocation loc = usdt_location("-4@$-3 8@$42");
  auto c = compile_ok(R"(u::p:n "%d %d", arg1, arg2)", usdt_site(loc));
  EXPECT_EQ(ops(c.main), (std::vector<Op>{konst(-3), kEmit, konst(42), kEmit}));
}

TEST(recipe, usdt_memory_operand_adds_offset_then_dereferences) {
  UsdtLocation loc = usdt_location("8@-8(%rbp) -4@(%rbx)");
  auto c = compile_ok(R"(u::p:n "%d %d", arg1, arg2)", usdt_site(loc));
  EXPECT_EQ(ops(c.main), (std::vector<Op>{{TOP_REG, UREG_RBP, 0, -8},
                                          {TOP_DEREF, 8, 0, 0},
                                          kEmit,
                                          reg(UREG_RBX),
                                          {TOP_DEREF, 4, 1, 0},
                                          kEmit}));
}

TEST(recipe, usdt_indexed_operand_scales_index) {
  UsdtLocation loc = usdt_location("8@(%rax,%rdx,8) -2@16(%rbx,%rcx,2)");
  auto c = compile_ok(R"(u::p:n "%d %d", arg1, arg2)", usdt_site(loc));
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RAX),
                                          reg(UREG_RDX),
                                          konst(8),
                                          kMul,
                                          kAdd,
                                          {TOP_DEREF, 8, 0, 0},  // + 0 read as its offset
                                          kEmit,
                                          reg(UREG_RBX),
                                          reg(UREG_RCX),
                                          konst(2),
                                          kMul,
                                          kAdd,
                                          {TOP_DEREF, 2, 1, 16},
                                          kEmit}));
}

TEST(recipe, usdt_rip_relative_symbol_is_rebased_on_the_site) {
  UsdtLocation loc = usdt_location("8@foo(%rip) -4@foo+8(%rip)", 0x1130);
  SiteContext site = usdt_site(loc);
  site.symbol_address = [](const std::string& name) -> std::optional<uint64_t> {
    if (name == "foo") return 0x4010;
    return std::nullopt;
  };
  auto c = compile_ok(R"(u::p:n "%d %d", arg1, arg2)", site);
  EXPECT_EQ(ops(c.main), (std::vector<Op>{{TOP_REG, UREG_RIP, 0, 0x4010 - 0x1130},
                                          {TOP_DEREF, 8, 0, 0},
                                          kEmit,
                                          {TOP_REG, UREG_RIP, 0, 0x4018 - 0x1130},
                                          {TOP_DEREF, 4, 1, 0},
                                          kEmit}));
}

TEST(recipe, usdt_unknown_symbol_fails) {
  UsdtLocation loc = usdt_location("8@bar(%rip)");
  SiteContext site = usdt_site(loc);
  EXPECT_EQ(compile_error(R"(u::p:n "%d", arg1)", site),
            "probe spec column 14: USDT operand '8@bar(%rip)' names symbol 'bar', not found in the "
            "object's symbol table");
  site.symbol_address = [](const std::string&) -> std::optional<uint64_t> { return std::nullopt; };
  EXPECT_NE(compile_error(R"(u::p:n "%d", arg1)", site).find("names symbol 'bar'"),
            std::string::npos);
}

TEST(recipe, usdt_float_register_operand_fails) {
  UsdtLocation loc = usdt_location("8f@%xmm0");
  EXPECT_EQ(compile_error(R"(u::p:n "%d", arg1)", usdt_site(loc)),
            "probe spec column 14: USDT operand '8f@%xmm0' uses register xmm0, unknown");
}

TEST(recipe, usdt_percent_s_reads_string_at_operand) {
  UsdtLocation loc = usdt_location("8@%rsi");
  auto c = compile_ok(R"(u::p:n "%s", arg1)", usdt_site(loc));
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RSI), {TOP_EMIT_STR, 0, 0, 128}}));
}

// An unparsable argument spec is named, not mistaken for a probe with no arguments.
TEST(recipe, usdt_unreadable_argument_spec_is_reported) {
  UsdtLocation loc;
  loc.addr = 0x1000;
  loc.args_text = "8@%rdi 8@%bogus";
  loc.args_error = Error{"column 10: unknown x86_64 register '%bogus'", 0};
  auto msg = compile_error(R"(u::p:n "%d", arg1)", usdt_site(loc));
  EXPECT_NE(msg.find("argument spec '8@%rdi 8@%bogus' is unreadable"), std::string::npos) << msg;
  EXPECT_NE(msg.find("%bogus"), std::string::npos) << msg;
}

// A symbolic displacement on an indexed operand (gcc's "m" constraint on a global array, see
// tests/fixtures/usdt/usdt_mem.c) is the symbol's address.
TEST(recipe, usdt_indexed_operand_with_symbol_uses_the_symbol) {
  UsdtLocation loc = usdt_location("-8@usdt_demo_table(,%rcx,8)");
  ASSERT_EQ(loc.args.size(), 1u);
  ASSERT_EQ(loc.args[0].kind, UsdtArg::Kind::Indexed);
  ASSERT_EQ(loc.args[0].symbol, "usdt_demo_table");
  SiteContext site = usdt_site(loc);
  site.symbol_address = [](const std::string& name) -> std::optional<uint64_t> {
    if (name == "usdt_demo_table") return 0x4040;
    return std::nullopt;
  };
  auto c = compile(R"(u::p:n "%d", arg1)", site);
  ASSERT_TRUE(c) << c.error().message;
  // No base register: 0 + rcx * 8, read at the symbol's address as its offset.
  EXPECT_EQ(ops(c->main),
            (std::vector<Op>{
                konst(0), reg(UREG_RCX), konst(8), kMul, kAdd, {TOP_DEREF, 8, 1, 0x4040}, kEmit}));
}

// `x + k` and `x - k` cost no op of their own: folded into the op that pushed x (a register, a
// saved entry value, a constant, another such sum), into the read at x + k, or else one ADDI.
TEST(recipe, constant_offsets_fold_into_the_ops_around_them) {
  auto c = compile_ok(
      R"(p::f "%d %d %d %d", *(u64*)(*(u64*)(arg1 + 16) + 56), arg2 - 3 + 5, (arg3 * 2) + 7, 2 + 3)");
  EXPECT_EQ(ops(c.main), (std::vector<Op>{{TOP_REG, UREG_RDI, 0, 16},
                                          {TOP_DEREF, 8, 0, 0},
                                          {TOP_DEREF, 8, 0, 56},
                                          kEmit,
                                          {TOP_REG, UREG_RSI, 0, 2},
                                          kEmit,
                                          reg(UREG_RDX),
                                          konst(2),
                                          kMul,
                                          {TOP_ADDI, 0, 0, 7},
                                          kEmit,
                                          konst(5),
                                          kEmit}));
}

// The BPF side drops an event whose next field finds no room: read sizes shrink to one cap at
// which the largest possible payload fits TRACE_MAX_DATA.
TEST(recipe, string_sizes_shrink_until_the_largest_payload_fits) {
  auto c = compile_ok(R"(p::f "%s %s %d", str(arg1, arg2), str(arg3, arg4), arg5)");
  // 2 x (4 + cap) + 8 <= TRACE_MAX_DATA: cap (8448 - 8) / 2 - 4 = 4216.
  static_assert(TRACE_MAX_DATA == 8448);
  EXPECT_EQ(ops(c.main), (std::vector<Op>{reg(UREG_RDI),
                                          reg(UREG_RSI),
                                          {TOP_EMIT_STR, 1, 0, 4216},
                                          reg(UREG_RDX),
                                          reg(UREG_RCX),
                                          {TOP_EMIT_STR, 1, 0, 4216},
                                          reg(UREG_R8),
                                          kEmit}));
  // Small strings keep their size; only the large ones come down.
  auto mixed = compile_ok(R"(p::f "%s %s %s", str(arg1, 10), str(arg2, 5000), str(arg3, 5000))");
  EXPECT_EQ(ops(mixed.main), (std::vector<Op>{reg(UREG_RDI),
                                              {TOP_EMIT_STR, 0, 0, 10},
                                              reg(UREG_RSI),
                                              {TOP_EMIT_STR, 0, 0, 4213},
                                              reg(UREG_RDX),
                                              {TOP_EMIT_STR, 0, 0, 4213}}));
  // What fits is left alone.
  auto fits = compile_ok(R"(p::f "%s %s", str(arg1, 1000), str(arg2, 1000))");
  EXPECT_EQ(fits.main.ops[1].imm, 1000);
  EXPECT_EQ(fits.main.ops[3].imm, 1000);
}

TEST(recipe, go_entry_values_are_saved_from_go_argument_registers) {
  SiteContext site;
  site.cc = &go_register_convention();
  auto c = compile_ok(R"(r::f "%d", $entry(arg2))", site);
  ASSERT_TRUE(c.entry.has_value());
  EXPECT_EQ(ops(*c.entry), (std::vector<Op>{reg(UREG_RBX), {TOP_SAVE, 0, 0, 0}}));
}

TEST(recipe, latency_recipes_have_no_ops_and_their_flags) {
  uscope_recipe e = latency_entry_recipe(5, -8);
  EXPECT_EQ(e.n_ops, 0u);
  EXPECT_EQ(e.probe_id, 5u);
  EXPECT_EQ(e.sp_delta, -8);
  EXPECT_EQ(e.flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY));
  uscope_recipe r = latency_return_recipe(5);
  EXPECT_EQ(r.n_ops, 0u);
  EXPECT_EQ(r.probe_id, 5u);
  EXPECT_EQ(r.sp_delta, 0);
  EXPECT_EQ(r.flags,
            static_cast<uint32_t>(TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY | TRACE_F_HISTOGRAM));
}

TEST(recipe, trace_register_maps_canonical_names_only) {
  EXPECT_EQ(trace_register("rdi"), UREG_RDI);
  EXPECT_EQ(trace_register("rax"), UREG_RAX);
  EXPECT_EQ(trace_register("r8"), UREG_R8);
  EXPECT_EQ(trace_register("r15"), UREG_R15);
  EXPECT_EQ(trace_register("rip"), UREG_RIP);
  EXPECT_EQ(trace_register("rsp"), UREG_RSP);
  EXPECT_EQ(trace_register("rbp"), UREG_RBP);
  EXPECT_EQ(trace_register("edi"), -1);
  EXPECT_EQ(trace_register("xmm0"), -1);
  EXPECT_EQ(trace_register(""), -1);
}

}  // namespace
}  // namespace uscope
