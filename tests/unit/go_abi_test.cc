// Go's register assignment of declared parameters (cmd/compile/abi-internal.md on amd64): words
// per type, floats apart, a parameter that does not fit goes on the stack whole while later ones
// still take registers, structs by their fields (from the stripped server's type descriptors).
#include "plan/go_abi.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "discover/go_buildinfo.h"

namespace uscope {
namespace {

std::vector<GoType> types_of(const std::vector<std::string>& spellings, GoTypes* types = nullptr) {
  std::vector<GoType> out;
  for (const auto& s : spellings) {
    auto t = declared_go_type(s, types);
    EXPECT_TRUE(t.has_value()) << s << ": " << (t ? "" : t.error().message);
    out.push_back(t ? *t : GoType{});
  }
  return out;
}

// "rax rbx | stack | x1" per parameter.
std::vector<std::string> slots(const std::vector<std::string>& spellings,
                               const CallingConvention& cc = go_register_convention(),
                               GoTypes* types = nullptr) {
  auto typed = types_of(spellings, types);
  auto r = assign_go_args(typed, types, cc);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  std::vector<std::string> out;
  if (!r) return out;
  for (const auto& s : *r) {
    std::string text;
    for (uscope_reg reg : s.ints)
      text += (text.empty() ? "" : " ") + std::string(register_name(reg));
    if (s.floats) text += (text.empty() ? "" : " ") + ("x" + std::to_string(s.floats));
    if (s.on_stack) text = "stack";
    out.push_back(text);
  }
  return out;
}

using V = std::vector<std::string>;

TEST(go_abi, each_parameter_takes_its_words) {
  EXPECT_EQ(slots({"int", "string"}), (V{"rax", "rbx rcx"}));
  EXPECT_EQ(slots({"[]uint8", "int32", "bool"}), (V{"rax rbx rcx", "rdi", "rsi"}));
  EXPECT_EQ(slots({"interface {}", "error", "*main.T"}), (V{"rax rbx", "rcx rdi", "rsi"}));
  EXPECT_EQ(slots({"map[string]int", "chan int", "func()", "unsafe.Pointer", "uintptr"}),
            (V{"rax", "rbx", "rcx", "rdi", "rsi"}));
}

TEST(go_abi, floats_take_their_own_registers) {
  EXPECT_EQ(slots({"float64", "int", "complex128", "string"}), (V{"x1", "rax", "x2", "rbx rcx"}));
}

TEST(go_abi, a_parameter_that_does_not_fit_goes_on_the_stack_and_later_ones_still_fit) {
  // Four strings take eight registers; the slice needs three: on the stack. The int takes R11.
  EXPECT_EQ(slots({"string", "string", "string", "string", "[]uint8", "int", "int"}),
            (V{"rax rbx", "rcx rdi", "rsi r8", "r9 r10", "stack", "r11", "stack"}));
}

TEST(go_abi, arrays_of_one_element_are_that_element) {
  EXPECT_EQ(slots({"[1]string", "[0]int", "[2]int", "int"}), (V{"rax rbx", "", "stack", "rcx"}));
}

TEST(go_abi, the_stack_abi_has_no_registers) {
  EXPECT_EQ(slots({"int", "float64"}, go_stack_convention()), (V{"stack", "stack"}));
}

TEST(go_abi, structs_by_value_take_their_fields_registers) {
  const std::string path = std::string(USCOPE_FIXTURE_DIR) + "/go/gohttp_server_stripped";
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf.has_value());
  auto info = read_go_buildinfo(*elf);
  ASSERT_TRUE(info.has_value() && info->has_value());
  auto types = GoTypes::open(*elf, nullptr, &**info);
  ASSERT_TRUE(types.has_value());
  // serverHandler{srv *Server}: one word, from its runtime type descriptor.
  auto sh = declared_go_type("net/http.serverHandler", types->get());
  ASSERT_TRUE(sh.has_value()) << sh.error().message;
  EXPECT_EQ(sh->kind, GoKind::Struct);
  EXPECT_EQ(sh->source, GoTypeSource::TypeDescriptor);
  EXPECT_EQ(slots({"net/http.serverHandler", "net/http.ResponseWriter", "*net/http.Request"},
                  go_register_convention(), types->get()),
            (V{"rax", "rbx rcx", "rdi"}));
  // A type no source knows: the error names it.
  auto none = declared_go_type("main.Nope", types->get());
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("no Go type 'main.Nope'"), std::string::npos)
      << none.error().message;
  auto alone = declared_go_type("main.Store", nullptr);
  ASSERT_FALSE(alone.has_value());
}

TEST(go_abi, declared_spellings_have_go_layouts) {
  auto s = declared_go_type("[]uint8", nullptr);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->kind, GoKind::Slice);
  EXPECT_EQ(s->elem, "uint8");
  EXPECT_EQ(s->size, 24u);
  auto a = declared_go_type("[4]int32", nullptr);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, GoKind::Array);
  EXPECT_EQ(a->size, 16u);
  auto p = declared_go_type("*net/http.Request", nullptr);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->elem, "net/http.Request");
  EXPECT_EQ(p->source, GoTypeSource::Declared);
}

}  // namespace
}  // namespace uscope
