// SymbolTable on the fixtures of tests/fixtures/elf, checked against nm on the unstripped builds.
#include "discover/symbol_table.h"
#include "tool_output.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace uscope {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/elf/" + name;
}

using test::command_output;

using test::NmSymbol;

// Sized text symbols of `path` as nm reports them, by name.
std::map<std::string, NmSymbol> nm_functions(const std::string& path) {
  std::map<std::string, NmSymbol> out;
  for (const auto& [name, sym] : test::nm_sized_symbols("--defined-only " + path))
    if (sym.type == 'T' || sym.type == 't' || sym.type == 'W') out[name] = sym;
  return out;
}

SymbolTable load(const std::string& path, const DebugSearchPaths& paths = {}) {
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf) << elf.error().message;
  auto t = SymbolTable::load(*elf, paths);
  EXPECT_TRUE(t) << t.error().message;
  return std::move(*t);
}

const FunctionSymbol* only(const SymbolTable& t, std::string_view name) {
  auto found = t.find(name);
  EXPECT_EQ(found.size(), 1u) << name;
  return found.size() == 1 ? found[0] : nullptr;
}

TEST(symbol_table, demangles_cxx_and_rust) {
  EXPECT_EQ(demangle("_ZN2ns6WidgetIiE4pokeEi"), "ns::Widget<int>::poke(int)");
  EXPECT_EQ(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)");
  EXPECT_EQ(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
  EXPECT_EQ(demangle("_RNvNtCs1234_7mycrate3bar3baz"), "mycrate::bar::baz");
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("_Znot_really"), "_Znot_really");
  EXPECT_EQ(demangle(""), "");
}

TEST(symbol_table, qualified_names_drop_what_users_leave_out) {
  EXPECT_EQ(qualified_name("orchard::Pear::ripen(int)"), "orchard::Pear::ripen");
  EXPECT_EQ(qualified_name("orchard::Pear::ripen(char const*)"), "orchard::Pear::ripen");
  EXPECT_EQ(qualified_name("orchard::Fruit::size() const"), "orchard::Fruit::size");
  EXPECT_EQ(qualified_name("int orchard::max<int>(int, int)"), "orchard::max<int>");
  EXPECT_EQ(qualified_name("orchard::Basket<std::pair<int, long> >::add(std::pair<int, long>)"),
            "orchard::Basket<std::pair<int, long> >::add");
  EXPECT_EQ(qualified_name("ns::C::operator()(int)"), "ns::C::operator()");
  EXPECT_EQ(qualified_name("ns::C::operator<<(int)"), "ns::C::operator<<");
  EXPECT_EQ(qualified_name("ns::C::operator<(ns::C const&) const"), "ns::C::operator<");
  EXPECT_EQ(qualified_name("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(qualified_name("ns::C::operator char const*()"), "ns::C::operator char const*");
  EXPECT_EQ(qualified_name("(anonymous namespace)::helper(int)"), "(anonymous namespace)::helper");
  EXPECT_EQ(qualified_name("orchard::check(int) [clone .cold]"), "orchard::check");
  EXPECT_EQ(qualified_name("myapp::server::handle"), "myapp::server::handle");
  EXPECT_EQ(qualified_name("myapp::server::handle::h0123456789abcdef"), "myapp::server::handle");
  EXPECT_EQ(qualified_name("<myapp::Counter as core::fmt::Debug>::fmt"),
            "<myapp::Counter as core::fmt::Debug>::fmt");
  EXPECT_EQ(qualified_name("<myapp::server::Counter>::bump"), "myapp::server::Counter::bump");
  EXPECT_EQ(qualified_name("<myapp::Counter as core::fmt::Debug>::fmt"),
            "<myapp::Counter as core::fmt::Debug>::fmt");
  EXPECT_EQ(qualified_name("main"), "main");
}

TEST(symbol_table, signatures_match_as_users_write_them) {
  EXPECT_TRUE(signature_matches("orchard::Pear::ripen(int)", "orchard::Pear::ripen(int)"));
  EXPECT_TRUE(
      signature_matches("orchard::Pear::ripen(const char *)", "orchard::Pear::ripen(char const*)"));
  EXPECT_TRUE(
      signature_matches("orchard::Pear::ripen(char const *)", "orchard::Pear::ripen(char const*)"));
  EXPECT_TRUE(signature_matches("f(const unsigned long *, int)", "f(unsigned long const*, int)"));
  EXPECT_TRUE(signature_matches("C::get()", "C::get() const"));
  EXPECT_TRUE(signature_matches("C::get() const", "C::get() const"));
  EXPECT_TRUE(signature_matches("orchard::max<int>(int, int)", "int orchard::max<int>(int, int)"));
  EXPECT_FALSE(signature_matches("orchard::Pear::ripen(int)", "orchard::Pear::ripen(char const*)"));
  EXPECT_FALSE(signature_matches("f(unsigned int)", "f(int)"));
  EXPECT_FALSE(signature_matches("f(int)", "f"));
}

TEST(symbol_table, finds_cxx_template_methods_by_demangled_name) {
  const std::string path = fixture("widget");
  const SymbolTable t = load(path);
  auto elf = ElfFile::open(path);
  const auto nm = nm_functions(path);

  const FunctionSymbol* poke = only(t, "ns::Widget<int>::poke(int)");
  ASSERT_NE(poke, nullptr);
  EXPECT_EQ(poke->name, "_ZN2ns6WidgetIiE4pokeEi");
  ASSERT_TRUE(nm.contains(poke->name));
  EXPECT_EQ(poke->addr, nm.at(poke->name).addr);
  EXPECT_EQ(poke->size, nm.at(poke->name).size);
  EXPECT_EQ(poke->offset, elf->vaddr_to_offset(poke->addr));
  EXPECT_EQ(poke->source, SymbolSource::Symtab);
  EXPECT_EQ(only(t, "_ZN2ns6WidgetIiE4pokeEi"), poke);

  ASSERT_NE(only(t, "ns::Widget<double>::poke(double)"), nullptr);
  ASSERT_NE(only(t, "ns::detail::twiddle(long)"), nullptr);
  EXPECT_EQ(t.match("ns::Widget<*>::poke*").size(), 2u);
  EXPECT_EQ(t.match("_ZN2ns6Widget*").size(), 2u);
  // Without parameters the name is every overload's; with them, one overload's.
  EXPECT_EQ(t.find("ns::Widget<int>::poke").size(), 1u);
  EXPECT_EQ(only(t, "ns::Widget<int>::poke"), poke);
  EXPECT_EQ(only(t, "ns::Widget<int>::poke( int )"), poke);
  EXPECT_TRUE(t.find("ns::Widget<int>::poke(double)").empty());
  EXPECT_EQ(t.match("ns::*::poke").size(), 2u);

  auto names = t.names();
  EXPECT_TRUE(std::binary_search(names.begin(), names.end(), "ns::Widget<int>::poke(int)"));
  EXPECT_TRUE(std::binary_search(names.begin(), names.end(), "main"));
  EXPECT_FALSE(std::binary_search(names.begin(), names.end(), "_ZN2ns6WidgetIiE4pokeEi"));
}

TEST(symbol_table, every_nm_function_is_present_sorted_and_unique) {
  for (const char* name : {"hello_pie", "hello_nopie", "libfixture.so", "widget"}) {
    const std::string path = fixture(name);
    const SymbolTable t = load(path);
    auto elf = ElfFile::open(path);
    const auto& fns = t.functions();
    EXPECT_TRUE(std::is_sorted(fns.begin(), fns.end(), [](const auto& a, const auto& b) {
      return a.addr < b.addr;
    })) << name;
    std::set<std::pair<uint64_t, std::string>> seen;
    for (const auto& f : fns) {
      EXPECT_TRUE(seen.emplace(f.addr, f.name).second) << name << ": duplicate " << f.name;
      EXPECT_EQ(elf->vaddr_to_offset(f.addr), f.offset) << f.name;
    }
    for (const auto& [sym, e] : nm_functions(path)) {
      auto found = t.find(sym);
      ASSERT_EQ(found.size(), 1u) << name << ": " << sym;
      EXPECT_EQ(found[0]->addr, e.addr) << sym;
      EXPECT_EQ(found[0]->size, e.size) << sym;
    }
  }
}

TEST(symbol_table, prefers_symtab_over_dynsym_and_keeps_bindings) {
  const SymbolTable t = load(fixture("libfixture.so"));
  const FunctionSymbol* exported = only(t, "shlib_exported");
  ASSERT_NE(exported, nullptr);
  EXPECT_EQ(exported->source, SymbolSource::Symtab);
  EXPECT_EQ(exported->binding, SymbolBinding::Global);
  const FunctionSymbol* weak = only(t, "shlib_weak");
  ASSERT_NE(weak, nullptr);
  EXPECT_EQ(weak->binding, SymbolBinding::Weak);
  const FunctionSymbol* local = only(t, "shlib_local");
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->binding, SymbolBinding::Local);
  ASSERT_NE(only(t, "shlib_hidden"), nullptr);
  EXPECT_TRUE(t.find("shlib_data").empty());  // an object, not a function
}

TEST(symbol_table, containing_maps_addresses_to_functions) {
  const SymbolTable t = load(fixture("hello_pie"));
  const FunctionSymbol* add = only(t, "hello_add");
  ASSERT_NE(add, nullptr);
  ASSERT_GT(add->size, 1u);
  EXPECT_EQ(t.containing(add->addr), add);
  EXPECT_EQ(t.containing(add->addr + add->size - 1), add);
  const FunctionSymbol* after = t.containing(add->addr + add->size);
  EXPECT_NE(after, add);
  EXPECT_EQ(t.containing(0), nullptr);
  EXPECT_EQ(t.containing(~uint64_t{0}), nullptr);
}

TEST(symbol_table, merges_dynsym_and_minidebuginfo_of_stripped_binary) {
  auto elf = ElfFile::open(fixture("mini_stripped"));
  ASSERT_TRUE(elf);
  ASSERT_FALSE(elf->section(".symtab"));
  const SymbolTable t = load(fixture("mini_stripped"));
  const auto nm = nm_functions(fixture("mini"));  // the unstripped build

  for (const char* local : {"mini_local_helper", "mini_other_local"}) {
    const FunctionSymbol* f = only(t, local);
    ASSERT_NE(f, nullptr) << local;
    EXPECT_EQ(f->source, SymbolSource::MiniDebugInfo);
    EXPECT_EQ(f->binding, SymbolBinding::Local);
    EXPECT_EQ(f->addr, nm.at(local).addr);
    EXPECT_EQ(f->size, nm.at(local).size);
    EXPECT_EQ(f->offset, elf->vaddr_to_offset(f->addr));
  }
  const FunctionSymbol* exported = only(t, "mini_exported");
  ASSERT_NE(exported, nullptr);
  EXPECT_EQ(exported->source, SymbolSource::Dynsym);
  EXPECT_EQ(exported->addr, nm.at("mini_exported").addr);
  // Every function of the unstripped build is back, from one source or the other.
  for (const auto& [name, e] : nm) {
    auto found = t.find(name);
    ASSERT_EQ(found.size(), 1u) << name;
    EXPECT_EQ(found[0]->addr, e.addr) << name;
  }
}

TEST(symbol_table, uses_separate_debug_file_of_stripped_binary) {
  DebugSearchPaths paths;
  paths.debug_roots = {fixture("debugroot")};
  const SymbolTable t = load(fixture("dbg_stripped"), paths);
  const auto nm = nm_functions(fixture("dbg"));
  const FunctionSymbol* local = only(t, "dbg_local_helper");
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->source, SymbolSource::DebugFile);
  EXPECT_EQ(local->addr, nm.at("dbg_local_helper").addr);
  EXPECT_EQ(local->size, nm.at("dbg_local_helper").size);
  auto elf = ElfFile::open(fixture("dbg_stripped"));
  EXPECT_EQ(local->offset, elf->vaddr_to_offset(local->addr));
  ASSERT_NE(only(t, "dbg_visible"), nullptr);

  // Alone in a directory, with no debug root, the stripped binary has no such names.
  std::string tmpl = (fs::temp_directory_path() / "uscope-symtab-XXXXXX").string();
  const std::string dir = mkdtemp(tmpl.data());
  fs::copy_file(fixture("dbg_stripped"), dir + "/dbg_stripped");
  DebugSearchPaths none;
  none.debug_roots = {};
  const SymbolTable bare = load(dir + "/dbg_stripped", none);
  EXPECT_TRUE(bare.find("dbg_local_helper").empty());
  fs::remove_all(dir);
}

// The defined functions of an object's .dynsym as readelf lists them, one per (address, name).
std::set<std::pair<uint64_t, std::string>> readelf_dynsym_functions(const std::string& path) {
  std::set<std::pair<uint64_t, std::string>> out;
  std::istringstream in(command_output("readelf --dyn-syms -W " + path));
  std::string line;
  while (std::getline(in, line)) {
    // "   Num:    Value          Size Type    Bind   Vis      Ndx Name"
    std::istringstream l(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(l >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if ((type != "FUNC" && type != "IFUNC") || ndx == "UND") continue;
    const uint64_t addr = std::stoull(value, nullptr, 16);
    if (addr != 0) out.emplace(addr, name.substr(0, name.find('@')));
  }
  return out;
}

TEST(symbol_table, python3_functions_are_its_dynsym_functions) {
  const std::string path = "/usr/bin/python3.11";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not installed";
  // Debian ships python3.11 without .symtab or .gnu_debugdata: its exported .dynsym (the
  // interpreter's C API) is all it names. No debug roots: a python3.11-dbg would add names.
  DebugSearchPaths none;
  none.debug_roots = {};
  const SymbolTable t = load(path, none);
  const auto expected = readelf_dynsym_functions(path);
  ASSERT_GT(expected.size(), 1000u) << "readelf lists too few: not Debian's python3.11?";
  std::set<std::pair<uint64_t, std::string>> got;
  for (const auto& f : t.functions()) got.emplace(f.addr, f.name);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(t.functions().size(), expected.size());
  EXPECT_EQ(t.find("PyObject_GetAttr").size(), 1u);
  EXPECT_EQ(t.find("Py_Initialize").size(), 1u);
}

}  // namespace
}  // namespace uscope
