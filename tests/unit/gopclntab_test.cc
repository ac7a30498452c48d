// Go's function table against the Go toolchain's own reading of the same binaries: `go tool nm`
// for functions, `go tool addr2line` for positions (inlined frames included).
#include "discover/gopclntab.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "tool_output.h"

namespace uscope {
namespace {

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/go/" + name;
}

struct Opened {
  std::unique_ptr<ElfFile> elf;
  std::optional<GoPclntab> table;
};

Opened open_table(const std::string& path) {
  Opened o;
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf.has_value()) << path;
  if (!elf) return o;
  o.elf = std::make_unique<ElfFile>(std::move(*elf));
  auto t = GoPclntab::read(*o.elf);
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
  if (t && *t) o.table = std::move(**t);
  return o;
}

// `go tool nm`'s text symbols: name -> address (names nm lists twice, an assembly function and
// its ABI wrapper, are left out).
std::map<std::string, uint64_t> go_nm_functions(const std::string& path) {
  std::map<std::string, uint64_t> out;
  std::set<std::string> twice;
  std::istringstream in(test::command_output("go tool nm " + path + " 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string addr, type, name;
    if (!(l >> addr >> type) || (type != "T" && type != "t")) continue;
    std::getline(l >> std::ws, name);
    if (!out.emplace(name, std::stoull(addr, nullptr, 16)).second) twice.insert(name);
  }
  for (const auto& n : twice) out.erase(n);
  return out;
}

TEST(gopclntab, lists_the_functions_go_tool_nm_lists_also_when_stripped) {
  auto nm = go_nm_functions(fixture("gohttp_client"));
  ASSERT_GT(nm.size(), 1000u);
  for (const char* name : {"gohttp_client", "gohttp_client_stripped"}) {
    auto o = open_table(fixture(name));
    ASSERT_TRUE(o.table.has_value()) << name;
    const auto& fs = o.table->functions();
    EXPECT_GT(fs.size(), 1000u);
    // The table names an assembly function and its ABI wrapper alike (nm calls one "x.abi0").
    std::multimap<std::string, uint64_t> mine;
    for (const auto& f : fs) {
      EXPECT_LT(f.entry, f.end) << f.name;
      mine.emplace(f.name, f.entry);
    }
    size_t checked = 0;
    for (const auto& [n, addr] : nm) {
      auto [lo, hi] = mine.equal_range(n);
      if (lo == hi) continue;  // nm lists assembly labels the table does not
      EXPECT_TRUE(std::any_of(lo, hi, [&](const auto& e) { return e.second == addr; })) << n;
      ++checked;
    }
    EXPECT_GT(checked, nm.size() * 9 / 10) << name;
    ASSERT_TRUE(mine.count("main.fetch")) << name;
    ASSERT_TRUE(mine.count("net/http.(*Client).do")) << name;
    const GoFunction* f = o.table->containing(mine.find("main.fetch")->second + 1);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->name, "main.fetch");
    auto at_entry = o.table->frames_at(f->entry);
    ASSERT_FALSE(at_entry.empty());
    EXPECT_NE(at_entry.back().file.find("gohttp_client.go"), std::string::npos)
        << at_entry.back().file;
  }
}

// Positions are the ones `go tool addr2line` gives for every pc of main.fetch, where http.Get is
// inlined: addr2line (Go's debug/gosym) names the outermost function and the innermost position.
TEST(gopclntab, frames_match_go_tool_addr2line) {
  for (const char* name : {"gohttp_client", "gohttp_client_stripped"}) {
    auto o = open_table(fixture(name));
    ASSERT_TRUE(o.table.has_value());
    const GoFunction* fetch = nullptr;
    for (const auto& f : o.table->functions())
      if (f.name == "main.fetch") fetch = &f;
    ASSERT_NE(fetch, nullptr);
    std::string pcs;
    for (uint64_t pc = fetch->entry; pc < fetch->end; pc += 7) pcs += fmt::format("{:#x}\n", pc);
    std::string out = test::command_output(fmt::format(
        "printf '{}' | go tool addr2line {} 2>/dev/null", pcs, fixture("gohttp_client")));
    std::istringstream in(out);
    bool saw_inlined_get = false;
    for (uint64_t pc = fetch->entry; pc < fetch->end; pc += 7) {
      std::string fn, pos;
      ASSERT_TRUE(std::getline(in, fn) && std::getline(in, pos)) << out;
      auto frames = o.table->frames_at(pc);
      ASSERT_FALSE(frames.empty());
      EXPECT_EQ(frames.back().function, fn) << fmt::format("{:#x}", pc);
      if (!pos.starts_with(":") && !pos.starts_with("?")) {  // padding after the last line
        EXPECT_EQ(fmt::format("{}:{}", frames.front().file, frames.front().line), pos)
            << fmt::format("{:#x}", pc);
      }
      if (frames.front().function == "net/http.Get") saw_inlined_get = true;
    }
    EXPECT_TRUE(saw_inlined_get) << name;
  }
}

TEST(gopclntab, lists_inlined_calls) {
  struct Want {
    const char* binary;
    const char* function;
    const char* caller;
  };
  for (const Want& w : {Want{"gohttp_client", "net/http.Get", "main.fetch"},
                        Want{"gohttp_client_stripped", "net/http.Get", "main.fetch"},
                        Want{"gohi", "fmt.Println", "main.main"},
                        Want{"gohi_stripped", "fmt.Println", "main.main"}}) {
    auto o = open_table(fixture(w.binary));
    ASSERT_TRUE(o.table.has_value());
    const auto& calls = o.table->inlined_calls();
    auto it = std::find_if(calls.begin(), calls.end(), [&](const GoInlinedCall& c) {
      return c.function == w.function && c.caller == w.caller;
    });
    ASSERT_NE(it, calls.end()) << w.binary << " " << w.function;
    EXPECT_EQ(it->depth, 1);
    const GoFunction* caller = o.table->containing(it->pc);
    ASSERT_NE(caller, nullptr);
    EXPECT_EQ(caller->name, w.caller);
    EXPECT_EQ(o.table->frames_at(it->pc).front().function, w.function);
    EXPECT_NE(it->call_file.find(".go"), std::string::npos);
    EXPECT_GT(it->call_line, 0);
  }
}

TEST(gopclntab, rejects_truncated_and_garbage_tables) {
  auto elf = ElfFile::open(fixture("gohi"));
  ASSERT_TRUE(elf.has_value());
  auto sec = elf->section(".gopclntab");
  ASSERT_TRUE(sec.has_value());
  auto data = elf->section_data(*sec);
  ASSERT_TRUE(data.has_value());
  EXPECT_TRUE(GoPclntab::parse(*data, sec->addr).has_value());
  for (size_t n : {0, 4, 16, 64, 4096})
    EXPECT_FALSE(GoPclntab::parse(data->subspan(0, n), sec->addr).has_value()) << n;
  std::vector<uint8_t> bad(data->begin(), data->end());
  bad[0] ^= 0xff;
  EXPECT_FALSE(GoPclntab::parse(bad, sec->addr).has_value());
  // A header pointing past the end.
  std::vector<uint8_t> far(data->begin(), data->end());
  std::fill(far.begin() + 8 + 8 * 3, far.begin() + 8 + 8 * 4, 0xff);
  EXPECT_FALSE(GoPclntab::parse(far, sec->addr).has_value());
}

// The fuzzer's hand-made seed: one function, one file, its pc-file and pc-line tables.
TEST(gopclntab, reads_the_smallest_table) {
  std::ifstream in(
      std::string(USCOPE_SOURCE_DIR) + "/fuzz/seeds/gopclntab_fuzz/one_function_go1.18",
      std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  auto t = GoPclntab::parse(bytes, 0x400000);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->functions().size(), 1u);
  const GoFunction& f = t->functions()[0];
  EXPECT_EQ(f.name, "main.f");
  EXPECT_EQ(f.entry, 0x401000u);
  EXPECT_EQ(f.end, 0x401010u);
  auto at_entry = t->frames_at(f.entry);
  ASSERT_EQ(at_entry.size(), 1u);
  EXPECT_EQ(at_entry[0].file, "a.go");
  EXPECT_EQ(at_entry[0].line, 7);
  auto frames = t->frames_at(0x401008);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "main.f");
  EXPECT_EQ(frames[0].line, 7);
  EXPECT_TRUE(t->frames_at(0x401010).empty());
}

TEST(gopclntab, is_absent_from_other_objects) {
  auto elf = ElfFile::open("/bin/true");
  ASSERT_TRUE(elf.has_value());
  auto t = GoPclntab::read(*elf);
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(t->has_value());
}

}  // namespace
}  // namespace uscope
