// describe_object on the Go fixtures (with and without DWARF) and a C program, checked against
// readelf's view of the same files.
#include "discover/object_info.h"

#include <gtest/gtest.h>

#include <string>

#include "discover/elf_file.h"
#include "tool_output.h"

namespace uscope {
namespace {

using test::command_output;

ObjectInfo describe(const std::string& path) {
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf) << elf.error().message;
  if (!elf) return {};
  auto info = describe_object(*elf);
  EXPECT_TRUE(info) << info.error().message;
  return info ? *info : ObjectInfo{};
}

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/go/" + name;
}

TEST(object_info, go_module_with_dwarf_and_symbols) {
  const ObjectInfo o = describe(fixture("gomod"));
  EXPECT_EQ(o.machine, "x86-64");
  EXPECT_TRUE(o.is_64bit);
  ASSERT_TRUE(o.symtab_functions);
  EXPECT_GT(*o.symtab_functions, 1000u);
  EXPECT_FALSE(o.dynsym_functions);
  EXPECT_EQ(o.dwarf.section, ".debug_info");
  // Debian's Go 1.19 compresses its DWARF with the section flag.
  EXPECT_EQ(o.dwarf.compression, "SHF_COMPRESSED");
  ASSERT_TRUE(o.go);
  ASSERT_TRUE(o.go->build) << o.go->build_error;
  EXPECT_TRUE(o.go->build->register_abi());
  EXPECT_EQ(o.go->modules.path, "example.com/gomod");
  EXPECT_EQ(o.go->modules.deps.size(), 2u);
  ASSERT_TRUE(o.go->pclntab_functions) << o.go->pclntab_error;
  EXPECT_GT(*o.go->pclntab_functions, 1000u);
  // `go tool buildid` reads the same note.
  std::string id = command_output("go tool buildid " + fixture("gomod"));
  while (!id.empty() && id.back() == '\n') id.pop_back();
  EXPECT_EQ(o.go->build_id, id);
}

TEST(object_info, stripped_go_keeps_its_tables_but_no_symtab_or_dwarf) {
  const ObjectInfo full = describe(fixture("gomod"));
  const ObjectInfo o = describe(fixture("gomod_stripped"));
  EXPECT_FALSE(o.symtab_functions);
  EXPECT_EQ(o.dwarf.section, "");
  ASSERT_TRUE(o.go);
  ASSERT_TRUE(o.go->build);
  ASSERT_TRUE(full.go && full.go->build);
  EXPECT_EQ(o.go->build->version, full.go->build->version);
  EXPECT_EQ(o.go->pclntab_functions, full.go->pclntab_functions);
  ASSERT_NE(o.go->modules.setting("-ldflags"), nullptr);
  EXPECT_EQ(*o.go->modules.setting("-ldflags"), "-s -w");
}

TEST(object_info, c_program_is_not_go) {
  const ObjectInfo o = describe("/usr/bin/true");
  EXPECT_FALSE(o.go);
  EXPECT_TRUE(o.dynamic);
  EXPECT_TRUE(o.dynsym_functions);  // a PIE program may export no function, but has the table
  const bool readelf_symtab =
      command_output("readelf -SW /usr/bin/true").find(" .symtab ") != std::string::npos;
  EXPECT_EQ(o.symtab_functions.has_value(), readelf_symtab);
  ASSERT_TRUE(o.build_id);
  EXPECT_NE(command_output("readelf -n /usr/bin/true").find(*o.build_id), std::string::npos);
}

}  // namespace
}  // namespace uscope
