// The DWARF reader on the dwarf_app fixture (-O2 -g), on its stripped copy with a separate debug
// file, and on libc with Debian's libc6-dbg: parameters, their SysV argument registers, types
// and struct members.
#include "discover/dwarf_types.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "temp_dir.h"

namespace uscope {
namespace {

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/dwarf/" + name;
}

std::unique_ptr<DwarfTypes> open_types(const std::string& path, DebugSearchPaths paths = {}) {
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf) << elf.error().message;
  if (!elf) return nullptr;
  auto types = DwarfTypes::open(*elf, paths);
  EXPECT_TRUE(types) << types.error().message;
  return types ? std::move(*types) : nullptr;
}

uint64_t symbol_address(const std::string& path, const std::string& name) {
  auto elf = ElfFile::open(path);
  auto syms = elf->symbols();
  for (const auto& s : *syms)
    if (s.name == name && s.defined) return s.addr;
  ADD_FAILURE() << "no symbol " << name << " in " << path;
  return 0;
}

const DwarfParam* param(const DwarfFunction& f, const std::string& name) {
  for (const auto& p : f.params)
    if (p.name == name) return &p;
  return nullptr;
}

TEST(dwarf_types, handle_parameters_by_address) {
  auto types = open_types(fixture("dwarf_app"));
  ASSERT_TRUE(types && types->has_dwarf());
  auto f = types->function_at(symbol_address(fixture("dwarf_app"), "handle"));
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_TRUE(*f);
  EXPECT_EQ((*f)->name, "handle");
  ASSERT_EQ((*f)->params.size(), 2u);
  const DwarfParam& req = (*f)->params[0];
  EXPECT_EQ(req.name, "req");
  EXPECT_EQ(req.type.kind, DwarfType::Kind::Pointer);
  EXPECT_EQ(req.type.name, "struct request *");
  EXPECT_EQ(req.type.base_name, "struct request");
  EXPECT_EQ(req.location.cls, ArgLocation::Class::IntegerRegister);
  EXPECT_EQ(req.location.position, 1);
  const DwarfParam& len = (*f)->params[1];
  EXPECT_EQ(len.name, "len");
  EXPECT_EQ(len.type.kind, DwarfType::Kind::Integer);
  EXPECT_EQ(len.type.size, 4u);
  EXPECT_TRUE(len.type.is_signed);
  EXPECT_EQ(len.location.position, 2);
}

TEST(dwarf_types, floats_do_not_take_integer_registers) {
  auto types = open_types(fixture("dwarf_app"));
  auto f = types->function_named("tag");
  ASSERT_TRUE(f && *f);
  const DwarfParam* code = param(**f, "code");
  ASSERT_TRUE(code);
  EXPECT_EQ(code->type.name, "unsigned char");
  EXPECT_EQ(code->type.size, 1u);
  EXPECT_FALSE(code->type.is_signed);
  EXPECT_EQ(code->location.position, 1);
  const DwarfParam* scale = param(**f, "scale");
  EXPECT_EQ(scale->location.cls, ArgLocation::Class::SseRegister);
  EXPECT_NE(scale->location.reason.find("xmm"), std::string::npos);
  const DwarfParam* delta = param(**f, "delta");
  EXPECT_EQ(delta->location.cls, ArgLocation::Class::IntegerRegister);
  EXPECT_EQ(delta->location.position, 2);
}

TEST(dwarf_types, seventh_integer_parameter_is_on_the_stack) {
  auto types = open_types(fixture("dwarf_app"));
  auto f = types->function_named("many");
  ASSERT_TRUE(f && *f);
  ASSERT_EQ((*f)->params.size(), 7u);
  EXPECT_EQ(param(**f, "f")->location.position, 6);
  const DwarfParam* seventh = param(**f, "seventh");
  EXPECT_EQ(seventh->location.cls, ArgLocation::Class::Stack);
  EXPECT_NE(seventh->location.reason.find("six integer registers"), std::string::npos);
}

TEST(dwarf_types, structs_by_value_in_memory_and_in_registers) {
  auto types = open_types(fixture("dwarf_app"));
  auto f = types->function_named("by_value");
  ASSERT_TRUE(f && *f);
  const DwarfParam* big = param(**f, "big");
  EXPECT_EQ(big->location.cls, ArgLocation::Class::Stack);
  EXPECT_NE(big->location.reason.find("struct big of 32 bytes"), std::string::npos)
      << big->location.reason;
  const DwarfParam* pair = param(**f, "pair");  // two longs: rdi and rsi
  EXPECT_EQ(pair->location.cls, ArgLocation::Class::IntegerRegister);
  EXPECT_EQ(pair->location.position, 1);
  EXPECT_EQ(param(**f, "after")->location.position, 3);
}

TEST(dwarf_types, struct_members_nested_arrays_and_bitfields) {
  auto types = open_types(fixture("dwarf_app"));
  auto req = types->find_type("struct request");
  ASSERT_TRUE(req && *req) << (req ? "not found" : req.error().message);
  EXPECT_EQ((*req)->kind, DwarfType::Kind::Struct);
  auto ms = types->members((*req)->ref);
  ASSERT_TRUE(ms);
  std::vector<std::string> names;
  for (const auto& m : *ms) names.push_back(m.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"id", "hdr", "path", "user", "", "urgent", "retries"}));
  auto path = types->member((*req)->ref, "path");
  ASSERT_TRUE(path && *path);
  EXPECT_EQ((*path)->offset, 16u);
  EXPECT_EQ((*path)->type.kind, DwarfType::Kind::Array);
  EXPECT_EQ((*path)->type.name, "char [32]");
  EXPECT_EQ((*path)->type.count, 32u);
  auto user = types->member((*req)->ref, "user");
  EXPECT_EQ((*user)->offset, 48u);
  EXPECT_EQ((*user)->type.name, "char *");  // qualifiers peeled
  auto hdr = types->member((*req)->ref, "hdr");
  EXPECT_EQ((*hdr)->offset, 8u);
  auto len = types->member((*hdr)->type.ref, "len");
  ASSERT_TRUE(len && *len);
  EXPECT_EQ((*len)->offset, 4u);
  EXPECT_EQ((*len)->type.name, "unsigned int");
  // A member of the anonymous union is reached through it.
  auto code = types->member((*req)->ref, "code");
  ASSERT_TRUE(code && *code);
  EXPECT_EQ((*code)->offset, 56u);
  auto retries = types->member((*req)->ref, "retries");
  EXPECT_EQ((*retries)->bit_size, 3);
  auto none = types->member((*req)->ref, "nope");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST(dwarf_types, separate_debug_file_by_build_id) {
  DebugSearchPaths paths;
  paths.debug_roots = {fixture("debugroot")};
  auto types = open_types(fixture("dbg_stripped"), paths);
  ASSERT_TRUE(types && types->has_dwarf());
  EXPECT_NE(types->source().find("debugroot/.build-id/"), std::string::npos) << types->source();
  auto f = types->function_named("handle");
  ASSERT_TRUE(f && *f);
  EXPECT_EQ((*f)->params[0].name, "req");
}

TEST(dwarf_types, object_without_dwarf_is_not_an_error) {
  test::TempDir dir;  // a copy alone, so its .gnu_debuglink finds nothing beside it
  const std::string copy = dir.str() + "/dbg_stripped";
  std::filesystem::copy_file(fixture("dbg_stripped"), copy);
  DebugSearchPaths paths;
  paths.debug_roots = {"/nonexistent"};
  auto types = open_types(copy, paths);
  ASSERT_TRUE(types);
  EXPECT_FALSE(types->has_dwarf());
  auto f = types->function_named("handle");
  ASSERT_TRUE(f);
  EXPECT_FALSE(*f);
  auto t = types->find_type("struct request");
  ASSERT_TRUE(t);
  EXPECT_FALSE(*t);
  EXPECT_FALSE(DwarfTypes::open_file("/nonexistent/file"));
}

TEST(dwarf_types, libc_nanosleep_from_libc6_dbg) {
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  auto types = open_types(libc);
  ASSERT_TRUE(types);
  ASSERT_TRUE(types->has_dwarf()) << "install libc6-dbg (scripts/install-deps.sh lists it)";
  EXPECT_NE(types->source().find("/usr/lib/debug/.build-id/"), std::string::npos);
  auto f = types->function_at(symbol_address(libc, "nanosleep"));
  ASSERT_TRUE(f && *f);
  ASSERT_GE((*f)->params.size(), 1u);
  EXPECT_EQ((*f)->params[0].name, "req");
  EXPECT_EQ((*f)->params[0].type.name, "struct timespec *");
  auto ts = types->find_type("struct timespec");
  ASSERT_TRUE(ts && *ts);
  auto nsec = types->member((*ts)->ref, "tv_nsec");
  ASSERT_TRUE(nsec && *nsec);
  EXPECT_EQ((*nsec)->offset, 8u);
  EXPECT_EQ((*nsec)->type.size, 8u);
  EXPECT_TRUE((*nsec)->type.is_signed);
}

}  // namespace
}  // namespace uscope
