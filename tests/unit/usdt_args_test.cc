// The SDT argument grammar: every operand form gcc and clang emit on x86_64 and aarch64 (the
// examples are taken from real notes: the fixtures, python3.11, libjvm.so), and the errors.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "discover/usdt.h"

namespace uscope {
namespace {

using Kind = UsdtArg::Kind;
constexpr auto kX86 = UsdtArch::X86_64;
constexpr auto kA64 = UsdtArch::AArch64;

// Parses a spec that must hold exactly one argument.
UsdtArg one(std::string_view spec, UsdtArch arch = kX86) {
  auto r = parse_usdt_args(spec, arch);
  if (!r) {
    ADD_FAILURE() << spec << ": " << r.error().message;
    return {};
  }
  if (r->size() != 1) {
    ADD_FAILURE() << spec << ": " << r->size() << " args";
    return {};
  }
  return (*r)[0];
}

// What one argument should parse to; fields left at their defaults are checked as defaults.
struct Want {
  std::string_view spec;
  Kind kind;
  int size;
  bool is_signed;
  std::string_view base_reg = {};
  int64_t offset = 0;
  std::string_view symbol = {};
  std::string_view index_reg = {};
  int scale = 1;
  int64_t constant = 0;
};

void check(const Want& w, UsdtArch arch = kX86) {
  SCOPED_TRACE(std::string(w.spec));
  const UsdtArg a = one(w.spec, arch);
  EXPECT_EQ(a.kind, w.kind);
  EXPECT_EQ(a.size, w.size);
  EXPECT_EQ(a.is_signed, w.is_signed);
  EXPECT_EQ(a.base_reg, w.base_reg);
  EXPECT_EQ(a.offset, w.offset);
  EXPECT_EQ(a.symbol, w.symbol);
  EXPECT_EQ(a.index_reg, w.index_reg);
  EXPECT_EQ(a.scale, w.scale);
  EXPECT_EQ(a.constant, w.constant);
  EXPECT_FALSE(a.is_float);
  EXPECT_EQ(a.text, w.spec);
}

TEST(usdt_args, parses_constant) {
  const std::vector<Want> cases = {
      {"8@$5", Kind::Constant, 8, false, {}, 0, {}, {}, 1, 5},
      {"1@$0", Kind::Constant, 1, false, {}, 0, {}, {}, 1, 0},
      {"-4@$42", Kind::Constant, 4, true, {}, 0, {}, {}, 1, 42},
      {"-4@$-1", Kind::Constant, 4, true, {}, 0, {}, {}, 1, -1},
      {"2@$0x10", Kind::Constant, 2, false, {}, 0, {}, {}, 1, 16},
      {"-8@$-0x10", Kind::Constant, 8, true, {}, 0, {}, {}, 1, -16},
      {"8@$0xFFFFFFFFFFFFFFFF", Kind::Constant, 8, false, {}, 0, {}, {}, 1, -1},
      {"-8@$-9223372036854775808", Kind::Constant, 8, true, {}, 0, {}, {}, 1, INT64_MIN},
  };
  for (const auto& w : cases) check(w);
}

TEST(usdt_args, parses_constant_symbol_address) {
  const UsdtArg a = one("8@$table+8");
  EXPECT_EQ(a.kind, Kind::Constant);
  EXPECT_EQ(a.symbol, "table");
  EXPECT_EQ(a.constant, 8);
}

TEST(usdt_args, parses_register) {
  const std::vector<Want> cases = {
      {"-4@%eax", Kind::Register, 4, true, "rax"},  {"8@%rdx", Kind::Register, 8, false, "rdx"},
      {"-1@%al", Kind::Register, 1, true, "rax"},   {"2@%r10w", Kind::Register, 2, false, "r10"},
      {"-4@%r11d", Kind::Register, 4, true, "r11"}, {"1@%dil", Kind::Register, 1, false, "rdi"},
      {"8@%rip", Kind::Register, 8, false, "rip"},  {"8@%RAX", Kind::Register, 8, false, "rax"},
  };
  for (const auto& w : cases) check(w);
}

TEST(usdt_args, canonicalises_every_register_alias) {
  struct Alias {
    std::string_view name;
    std::string_view canonical;
    int width;
  };
  std::vector<Alias> aliases;
  const std::vector<std::vector<std::string_view>> legacy = {
      {"rax", "eax", "ax", "al"},  {"rbx", "ebx", "bx", "bl"},  {"rcx", "ecx", "cx", "cl"},
      {"rdx", "edx", "dx", "dl"},  {"rsi", "esi", "si", "sil"}, {"rdi", "edi", "di", "dil"},
      {"rbp", "ebp", "bp", "bpl"}, {"rsp", "esp", "sp", "spl"},
  };
  const int widths[] = {8, 4, 2, 1};
  for (const auto& row : legacy) {
    for (size_t i = 0; i < row.size(); ++i) aliases.push_back({row[i], row[0], widths[i]});
  }
  std::vector<std::string> storage;
  storage.reserve(8 * 5);
  for (int n = 8; n <= 15; ++n) {
    const std::string r = "r" + std::to_string(n);
    storage.push_back(r);
    const std::string_view canonical = storage.back();
    const std::pair<const char*, int> suffixes[] = {{"", 8}, {"d", 4}, {"w", 2}, {"b", 1}};
    for (auto [suffix, width] : suffixes) {
      storage.push_back(r + suffix);
      aliases.push_back({storage.back(), canonical, width});
    }
  }
  for (const auto& a : aliases) {
    SCOPED_TRACE(std::string(a.name));
    // Bare (no `N@`) so the register's own width shows as the argument size.
    const UsdtArg arg = one("%" + std::string(a.name));
    EXPECT_EQ(arg.kind, Kind::Register);
    EXPECT_EQ(arg.base_reg, a.canonical);
    EXPECT_EQ(arg.size, a.width);
    EXPECT_FALSE(arg.is_signed);
  }
}

TEST(usdt_args, parses_register_with_offset) {
  const std::vector<Want> cases = {
      {"8@-8(%rbp)", Kind::Memory, 8, false, "rbp", -8},
      {"-4@-20(%rbp)", Kind::Memory, 4, true, "rbp", -20},
      {"-4@112(%rsp)", Kind::Memory, 4, true, "rsp", 112},
      {"8@152(%rbx)", Kind::Memory, 8, false, "rbx", 152},
      {"1@37(%r14)", Kind::Memory, 1, false, "r14", 37},
      {"8@0x10(%rsp)", Kind::Memory, 8, false, "rsp", 16},
      {"8@-0x10(%rbp)", Kind::Memory, 8, false, "rbp", -16},
      {"8@+8(%rax)", Kind::Memory, 8, false, "rax", 8},
  };
  for (const auto& w : cases) check(w);
}

TEST(usdt_args, parses_register_without_offset) {
  check({"4@(%rax)", Kind::Memory, 4, false, "rax"});
  check({"-4@(%rdx)", Kind::Memory, 4, true, "rdx"});
}

TEST(usdt_args, parses_symbolic_offset_on_register) {
  // Non-PIE code may address a global through a register: *(rax + &table).
  check({"8@table(%rax)", Kind::Memory, 8, false, "rax", 0, "table"});
}

TEST(usdt_args, parses_base_index_scale) {
  const std::vector<Want> cases = {
      {"-1@-96(%rbp,%rax,8)", Kind::Indexed, 1, true, "rbp", -96, {}, "rax", 8},
      {"-8@(%rax,%rdx,8)", Kind::Indexed, 8, true, "rax", 0, {}, "rdx", 8},
      {"4@16(%rsi,%rdi,2)", Kind::Indexed, 4, false, "rsi", 16, {}, "rdi", 2},
      {"-4@(%rsi,%rdi)", Kind::Indexed, 4, true, "rsi", 0, {}, "rdi", 1},
      {"8@-8(%r8,%r9d,4)", Kind::Indexed, 8, false, "r8", -8, {}, "r9", 4},
      {"8@( %rax , %rbx , 2 )", Kind::Indexed, 8, false, "rax", 0, {}, "rbx", 2},
  };
  for (const auto& w : cases) check(w);
}

TEST(usdt_args, parses_index_without_base) {
  check({"8@(,%rax,4)", Kind::Indexed, 8, false, {}, 0, {}, "rax", 4});
  check(
      {"-8@usdt_demo_table(,%rcx,8)", Kind::Indexed, 8, true, {}, 0, "usdt_demo_table", "rcx", 8});
}

TEST(usdt_args, parses_rip_relative_symbol) {
  const std::vector<Want> cases = {
      {"-4@usdt_demo_counter(%rip)", Kind::Absolute, 4, true, "rip", 0, "usdt_demo_counter"},
      {"-4@global_max_action(%rip)", Kind::Absolute, 4, true, "rip", 0, "global_max_action"},
      {"8@sym+8(%rip)", Kind::Absolute, 8, false, "rip", 8, "sym"},
      {"8@sym-8(%rip)", Kind::Absolute, 8, false, "rip", -8, "sym"},
      {"8@24+mp_(%rip)", Kind::Absolute, 8, false, "rip", 24, "mp_"},
      {"4@counter.0(%rip)", Kind::Absolute, 4, false, "rip", 0, "counter.0"},
      {"8@_ZN3foo3barE+0x10(%rip)", Kind::Absolute, 8, false, "rip", 16, "_ZN3foo3barE"},
  };
  for (const auto& w : cases) check(w);
}

TEST(usdt_args, parses_absolute_address) {
  check({"8@0x601040", Kind::Absolute, 8, false, {}, 0x601040});
  check({"-4@counter", Kind::Absolute, 4, true, {}, 0, "counter"});
  check({"4@counter+4", Kind::Absolute, 4, false, {}, 4, "counter"});
}

TEST(usdt_args, parses_bare_operands_as_unsigned) {
  // Pre-size notes: a register's own width, else a machine word, unsigned (bcc, SystemTap).
  const std::vector<Want> cases = {
      {"%rdi", Kind::Register, 8, false, "rdi"},
      {"%eax", Kind::Register, 4, false, "rax"},
      {"%cl", Kind::Register, 1, false, "rcx"},
      {"-8(%rbp)", Kind::Memory, 8, false, "rbp", -8},
      {"(%rax,%rbx,2)", Kind::Indexed, 8, false, "rax", 0, {}, "rbx", 2},
      {"$5", Kind::Constant, 8, false, {}, 0, {}, {}, 1, 5},
      {"$-5", Kind::Constant, 8, false, {}, 0, {}, {}, 1, -5},
      {"mp_(%rip)", Kind::Absolute, 8, false, "rip", 0, "mp_"},
  };
  for (const auto& w : cases) check(w);
}

TEST(usdt_args, parses_float_arguments) {
  const UsdtArg reg = one("8f@%xmm0");
  EXPECT_TRUE(reg.is_float);
  EXPECT_EQ(reg.kind, Kind::Register);
  EXPECT_EQ(reg.base_reg, "xmm0");
  EXPECT_EQ(reg.size, 8);
  const UsdtArg mem = one("-4f@-8(%rbp)");
  EXPECT_TRUE(mem.is_float);
  EXPECT_TRUE(mem.is_signed);
  EXPECT_EQ(mem.kind, Kind::Memory);
  EXPECT_EQ(one("8@%xmm15").base_reg, "xmm15");
}

TEST(usdt_args, parses_several_arguments_and_keeps_their_text) {
  auto r = parse_usdt_args("  -4@%esi -4@-24(%rbp)\t-4@%ecx  2@%ax 8@%rdx  ");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 5u);
  const std::vector<std::string> texts = {"-4@%esi", "-4@-24(%rbp)", "-4@%ecx", "2@%ax", "8@%rdx"};
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ((*r)[i].text, texts[i]);
  EXPECT_EQ((*r)[1].kind, Kind::Memory);
  EXPECT_EQ((*r)[3].base_reg, "rax");
  EXPECT_EQ((*r)[3].size, 2);
}

TEST(usdt_args, parses_empty_spec_as_no_arguments) {
  for (std::string_view spec : {"", " ", "\t  "}) {
    auto r = parse_usdt_args(spec);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->empty());
  }
}

TEST(usdt_args, parses_aarch64_register) {
  const std::vector<Want> cases = {
      {"8@x0", Kind::Register, 8, false, "x0"},   {"-4@w1", Kind::Register, 4, true, "x1"},
      {"8@x30", Kind::Register, 8, false, "x30"}, {"8@sp", Kind::Register, 8, false, "sp"},
      {"8@fp", Kind::Register, 8, false, "x29"},  {"8@lr", Kind::Register, 8, false, "x30"},
      {"w7", Kind::Register, 4, false, "x7"},
  };
  for (const auto& w : cases) check(w, kA64);
}

TEST(usdt_args, parses_aarch64_memory) {
  const std::vector<Want> cases = {
      {"8@[sp]", Kind::Memory, 8, false, "sp"},
      {"8@[sp, 16]", Kind::Memory, 8, false, "sp", 16},
      {"-4@[x0, -8]", Kind::Memory, 4, true, "x0", -8},
      {"8@[x29,#24]", Kind::Memory, 8, false, "x29", 24},
      {"2@[x19, 0x20]", Kind::Memory, 2, false, "x19", 32},
  };
  for (const auto& w : cases) check(w, kA64);
  auto r = parse_usdt_args("8@[sp, 16] -4@w1", kA64);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].text, "8@[sp, 16]");
}

TEST(usdt_args, parses_aarch64_constant) {
  const std::vector<Want> cases = {
      {"8@5", Kind::Constant, 8, false, {}, 0, {}, {}, 1, 5},
      {"-4@-5", Kind::Constant, 4, true, {}, 0, {}, {}, 1, -5},
      {"4@#7", Kind::Constant, 4, false, {}, 0, {}, {}, 1, 7},
      {"8@0x10", Kind::Constant, 8, false, {}, 0, {}, {}, 1, 16},
      {"8@xzr", Kind::Constant, 8, false, {}, 0, {}, {}, 1, 0},
  };
  for (const auto& w : cases) check(w, kA64);
}

TEST(usdt_args, parses_aarch64_float_register) {
  const UsdtArg a = one("8f@d0", kA64);
  EXPECT_TRUE(a.is_float);
  EXPECT_EQ(a.base_reg, "v0");
}

TEST(usdt_args, error_names_column_and_expectation) {
  auto r = parse_usdt_args("8@(%rax");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "usdt arg spec '8@(%rax' column 8: expected ')'");
}

TEST(usdt_args, rejects_malformed_specs_at_the_right_column) {
  struct Bad {
    std::string_view spec;
    UsdtArch arch;
    int column;
    std::string_view says;
  };
  const std::vector<Bad> cases = {
      {"3@%rax", kX86, 1, "argument size of 1, 2, 4 or 8"},
      {"-16@%rax", kX86, 1, "argument size"},
      {"8@", kX86, 3, "expected an operand after '@'"},
      {"8@%rax 8@", kX86, 10, "expected an operand"},
      {"8@ %rax", kX86, 3, "expected an operand"},
      {"8@%foo", kX86, 3, "unknown x86_64 register '%foo'"},
      {"8@%ah", kX86, 3, "unknown x86_64 register '%ah'"},
      {"8@%", kX86, 4, "expected a register name"},
      {"8@$", kX86, 4, "expected a number or symbol after '$'"},
      {"8@$99999999999999999999", kX86, 4, "does not fit in 64 bits"},
      {"8@$-9223372036854775809", kX86, 4, "does not fit in 64 bits"},
      {"8@$0x", kX86, 6, "expected hex digits"},
      {"8@-(%rax)", kX86, 4, "expected a number"},
      {"8@@", kX86, 3, "expected '$', '%', a displacement or '('"},
      {"8@(%rax;", kX86, 8, "expected ')'"},
      {"8@(%rax,%rbx,3)", kX86, 14, "scale of 1, 2, 4 or 8"},
      {"8@(%rax,%rbx,)", kX86, 14, "scale"},
      {"8@(%rax,%rip)", kX86, 9, "%rip cannot be an index register"},
      {"8@(%rax,%rsp,2)", kX86, 9, "%rsp cannot be an index register"},
      {"8@foo(%rip,%rax)", kX86, 12, "takes no index"},
      {"8@(,)", kX86, 5, "expected an index register"},
      {"8@()", kX86, 4, "expected a base register or ','"},
      {"8@(%xmm0)", kX86, 4, "cannot address memory"},
      {"8@%fs:0x28", kX86, 6, "segment-prefixed"},
      {"8@%rax,", kX86, 7, "expected a space or the end"},
      {"8@%rax 4@%eax)", kX86, 14, "expected a space or the end"},
      {"8@[sp, 16", kA64, 10, "expected ']'"},
      {"8@[sp 16]", kA64, 7, "expected ']'"},
      {"8@[sp,]", kA64, 7, "expected an offset"},
      {"8@[w0]", kA64, 4, "64-bit base register"},
      {"8@[]", kA64, 4, "expected a base register"},
      {"8@x31", kA64, 3, "unknown aarch64 register 'x31'"},
      {"8@%rax", kA64, 3, "expected a register, '[' or a constant"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.spec));
    auto r = parse_usdt_args(c.spec, c.arch);
    ASSERT_FALSE(r);
    const std::string& msg = r.error().message;
    EXPECT_NE(msg.find(" column " + std::to_string(c.column) + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
  }
}

TEST(usdt_args, error_message_stays_one_bounded_line) {
  std::string hostile = "8@%rax\n8@%zz";
  auto r = parse_usdt_args(hostile);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  EXPECT_NE(r.error().message.find("column 10"), std::string::npos);

  r = parse_usdt_args("8@%" + std::string(100000, 'a'));
  ASSERT_FALSE(r);
  EXPECT_LT(r.error().message.size(), 400u);

  std::string long_spec;
  for (int i = 0; i < 10000; ++i) long_spec += "8@%rax ";
  long_spec += "8@%zz";
  r = parse_usdt_args(long_spec);
  ASSERT_FALSE(r);
  EXPECT_LT(r.error().message.size(), 400u);
  EXPECT_NE(r.error().message.find("column 70003"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace uscope
