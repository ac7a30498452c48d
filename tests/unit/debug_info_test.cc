// Separate debug files (build-id, debuglink) and MiniDebugInfo, as libdwfl finds them.
#include "discover/debug_info.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace uscope {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/elf/" + name;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()));
}

using test::TempDir;

std::string build_id_path(const std::string& root, const std::string& id) {
  return root + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
}

// A copy of dbg_stripped alone in <tmp>/bin, so the fixture's own dbg.debug is not beside it.
std::string isolated_stripped(const TempDir& dir) {
  const std::string bin = dir.str() + "/bin/dbg_stripped";
  write_file(bin, read_file(fixture("dbg_stripped")));
  return bin;
}

DebugSearchPaths roots(std::vector<std::string> r) {
  DebugSearchPaths p;
  p.debug_roots = std::move(r);
  return p;
}

TEST(debug_info, finds_debug_file_by_build_id) {
  auto elf = ElfFile::open(fixture("dbg_stripped"));
  ASSERT_TRUE(elf) << elf.error().message;
  ASSERT_TRUE(elf->build_id());
  const std::string root = fixture("debugroot");
  const auto found = find_debug_file(*elf, roots({"/nonexistent", root}));
  EXPECT_EQ(found, build_id_path(root, *elf->build_id()));
  ASSERT_TRUE(found);
  auto dbg = ElfFile::open(*found);
  ASSERT_TRUE(dbg);
  EXPECT_EQ(dbg->build_id(), elf->build_id());
}

TEST(debug_info, finds_debug_file_by_debuglink_beside_the_file) {
  auto elf = ElfFile::open(fixture("dbg_stripped"));
  ASSERT_TRUE(elf);
  EXPECT_EQ(find_debug_file(*elf, roots({"/nonexistent"})), fixture("dbg.debug"));
}

TEST(debug_info, finds_debug_file_by_debuglink_in_dot_debug_and_under_root) {
  TempDir dir;
  const std::string bin = isolated_stripped(dir);
  auto elf = ElfFile::open(bin);
  ASSERT_TRUE(elf);
  EXPECT_FALSE(find_debug_file(*elf, roots({dir.str() + "/root"})));

  // <root>/<dir of the file>/<debuglink>, as Debian's /usr/lib/debug/usr/bin/... layout.
  const std::string under_root =
      dir.str() + "/root" + fs::canonical(dir.str()).string() + "/bin/dbg.debug";
  write_file(under_root, read_file(fixture("dbg.debug")));
  EXPECT_EQ(find_debug_file(*elf, roots({dir.str() + "/root"})), under_root);

  // <dir>/.debug/<debuglink> comes before the debug roots.
  const std::string dot_debug = dir.str() + "/bin/.debug/dbg.debug";
  write_file(dot_debug, read_file(fixture("dbg.debug")));
  const auto found = find_debug_file(*elf, roots({dir.str() + "/root"}));
  ASSERT_TRUE(found);
  EXPECT_EQ(fs::canonical(*found), fs::canonical(dot_debug));
}

// libdwfl validates a debuglink candidate by the object's build-id when it has one (the CRC32
// only without): a file of another build under the right name is rejected.
TEST(debug_info, rejects_debuglink_file_of_another_build) {
  TempDir dir;
  const std::string bin = isolated_stripped(dir);
  auto elf = ElfFile::open(bin);
  ASSERT_TRUE(elf);
  write_file(dir.str() + "/bin/dbg.debug", read_file(fixture("hello_nopie")));
  EXPECT_FALSE(find_debug_file(*elf, roots({})));
  write_file(dir.str() + "/bin/dbg.debug", read_file(fixture("dbg.debug")));
  EXPECT_TRUE(find_debug_file(*elf, roots({})));
}

TEST(debug_info, rejects_build_id_file_of_another_build) {
  TempDir dir;
  const std::string bin = isolated_stripped(dir);
  auto elf = ElfFile::open(bin);
  ASSERT_TRUE(elf && elf->build_id());
  write_file(build_id_path(dir.str() + "/root", *elf->build_id()),
             read_file(fixture("hello_nopie")));
  EXPECT_FALSE(find_debug_file(*elf, roots({dir.str() + "/root"})));
}

TEST(debug_info, applies_root_prefix) {
  TempDir dir;
  auto elf = ElfFile::open(fixture("dbg_stripped"));
  ASSERT_TRUE(elf && elf->build_id());
  const std::string in_container = build_id_path(dir.str() + "/usr/lib/debug", *elf->build_id());
  write_file(in_container, read_file(fixture("dbg.debug")));
  DebugSearchPaths paths = roots({"/usr/lib/debug"});
  paths.root_prefix = dir.str();
  EXPECT_EQ(find_debug_file(*elf, paths), in_container);
}

TEST(debug_info, reads_minidebuginfo_symbols_through_libdwfl) {
  auto elf = ElfFile::open(fixture("mini_stripped"));
  ASSERT_TRUE(elf);
  auto info = DebugInfo::open(*elf, roots({}));
  ASSERT_TRUE(info) << info.error().message;
  const auto syms = (*info)->symbols();
  auto named = [&](const std::string& name) -> const ElfSymbol* {
    for (const auto& s : syms)
      if (s.name == name) return &s;
    return nullptr;
  };
  const ElfSymbol* helper = named("mini_local_helper");
  ASSERT_NE(helper, nullptr);
  EXPECT_EQ(helper->kind, SymbolKind::Function);
  EXPECT_EQ(helper->source, SymbolSource::MiniDebugInfo);
  // .dynsym's own entries stay attributed to it.
  const ElfSymbol* exported = named("mini_exported");
  ASSERT_NE(exported, nullptr);
  EXPECT_EQ(exported->source, SymbolSource::Dynsym);
  EXPECT_FALSE((*info)->debug_file());
}

TEST(debug_info, symbols_of_a_debug_file_say_so) {
  auto elf = ElfFile::open(fixture("dbg_stripped"));
  ASSERT_TRUE(elf);
  auto info = DebugInfo::open(*elf, roots({fixture("debugroot")}));
  ASSERT_TRUE(info) << info.error().message;
  const auto syms = (*info)->symbols();
  ASSERT_FALSE(syms.empty());
  EXPECT_TRUE(std::all_of(syms.begin(), syms.end(),
                          [](const ElfSymbol& s) { return s.source == SymbolSource::DebugFile; }));
  EXPECT_EQ((*info)->debug_file(), build_id_path(fixture("debugroot"), *elf->build_id()));
}

TEST(debug_info, object_with_own_symtab_has_no_debug_file) {
  auto elf = ElfFile::open(fixture("hello_pie"));
  ASSERT_TRUE(elf);
  auto info = DebugInfo::open(*elf, roots({}));
  ASSERT_TRUE(info) << info.error().message;
  const auto syms = (*info)->symbols();
  EXPECT_TRUE(std::any_of(syms.begin(), syms.end(), [](const ElfSymbol& s) {
    return s.name == "main" && s.source == SymbolSource::Symtab;
  }));
  EXPECT_FALSE((*info)->debug_file());
}

}  // namespace
}  // namespace uscope
