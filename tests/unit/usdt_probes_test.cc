// read_usdt_probes against binutils: every probe, location, semaphore and file offset must agree
// with what `readelf -n/-l/-S/-s` report, for the fixtures (PIE, non-PIE, shared library) and for
// the machine's own python3.11 and libjvm.so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "discover/elf_file.h"
#include "discover/usdt.h"
#include "tool_output.h"

namespace uscope {
namespace {

constexpr const char* kPython = "/usr/bin/python3.11";
constexpr const char* kLibjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so";

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/usdt/" + name;
}

bool exists(const std::string& path) {
  return access(path.c_str(), R_OK) == 0;
}

using test::command_output;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string readelf(const std::string& flags, const std::string& path) {
  return command_output("LC_ALL=C readelf " + flags + " '" + path + "' 2>/dev/null");
}

// One stapsdt note as readelf -n prints it.
struct NoteLine {
  std::string provider, name, args;
  uint64_t location = 0, base = 0, semaphore = 0;
};

std::vector<NoteLine> readelf_notes(const std::string& path) {
  std::vector<NoteLine> notes;
  for (const std::string& line : lines_of(readelf("-nW", path))) {
    auto after = [&](const char* key) -> std::optional<std::string> {
      const size_t at = line.find(key);
      if (at == std::string::npos) return std::nullopt;
      return line.substr(at + strlen(key));
    };
    if (auto v = after("    Provider: ")) {
      notes.emplace_back();
      notes.back().provider = *v;
    } else if (notes.empty()) {
      continue;
    } else if (auto n = after("    Name: ")) {
      notes.back().name = *n;
    } else if (line.find("    Location: ") == 0) {
      unsigned long long loc, base, sem;
      if (sscanf(line.c_str(), " Location: %llx, Base: %llx, Semaphore: %llx", &loc, &base, &sem) ==
          3) {
        notes.back().location = loc;
        notes.back().base = base;
        notes.back().semaphore = sem;
      }
    } else if (auto a = after("    Arguments: ")) {
      notes.back().args = *a;
    }
  }
  return notes;
}

struct Load {
  uint64_t offset, vaddr, filesz;
};

std::vector<Load> readelf_loads(const std::string& path) {
  std::vector<Load> loads;
  for (const std::string& line : lines_of(readelf("-lW", path))) {
    unsigned long long off, vaddr, paddr, filesz, memsz;
    if (sscanf(line.c_str(), " LOAD %llx %llx %llx %llx %llx", &off, &vaddr, &paddr, &filesz,
               &memsz) == 5) {
      loads.push_back({off, vaddr, filesz});
    }
  }
  return loads;
}

// The file offset the segment table gives an address: the fact uprobes depend on.
std::optional<uint64_t> offset_via_loads(const std::vector<Load>& loads, uint64_t addr) {
  for (const Load& l : loads) {
    if (addr >= l.vaddr && addr - l.vaddr < l.filesz) return addr - l.vaddr + l.offset;
  }
  return std::nullopt;
}

struct Section {
  uint64_t addr = 0, offset = 0, size = 0;
};

std::optional<Section> readelf_section(const std::string& path, const std::string& want) {
  for (const std::string& line : lines_of(readelf("-SW", path))) {
    const size_t close = line.find("] ");
    if (line.find("  [") != 0 || close == std::string::npos) continue;
    std::istringstream in(line.substr(close + 2));
    std::string name, type;
    Section s;
    in >> name >> type >> std::hex >> s.addr >> s.offset >> s.size;
    if (in && name == want) return s;
  }
  return std::nullopt;
}

std::optional<uint64_t> readelf_symbol(const std::string& path, const std::string& want) {
  for (const std::string& line : lines_of(readelf("-sW", path))) {
    std::istringstream in(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    in >> num >> value >> size >> type >> bind >> vis >> ndx >> name;
    if (in && name == want) return std::stoull(value, nullptr, 16);
  }
  return std::nullopt;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string write_temp(const std::string& tag, const std::vector<uint8_t>& bytes) {
  const std::string path =
      testing::TempDir() + "/usdt_probes_test_" + tag + "_" + std::to_string(getpid());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::vector<UsdtProbe> probes_of(const std::string& path) {
  auto elf = ElfFile::open(path);
  if (!elf) {
    ADD_FAILURE() << path << ": " << elf.error().message;
    return {};
  }
  auto probes = read_usdt_probes(*elf);
  if (!probes) {
    ADD_FAILURE() << path << ": " << probes.error().message;
    return {};
  }
  return std::move(*probes);
}

const UsdtProbe* find(const std::vector<UsdtProbe>& probes, const std::string& name) {
  for (const auto& p : probes) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// Everything readelf knows about the notes must come back, grouped by provider:name in
// first-seen order, with addresses adjusted by .stapsdt.base and offsets from the LOAD table.
void expect_matches_binutils(const std::string& path) {
  SCOPED_TRACE(path);
  const std::vector<NoteLine> notes = readelf_notes(path);
  ASSERT_FALSE(notes.empty()) << "readelf shows no stapsdt notes";
  const std::vector<Load> loads = readelf_loads(path);
  ASSERT_FALSE(loads.empty());
  const std::optional<Section> base = readelf_section(path, ".stapsdt.base");
  const std::vector<uint8_t> bytes = read_bytes(path);
  const std::vector<UsdtProbe> probes = probes_of(path);

  std::vector<std::string> want_order;
  std::map<std::string, std::vector<const NoteLine*>> by_key;
  for (const NoteLine& n : notes) {
    const std::string key = n.provider + ":" + n.name;
    if (by_key.find(key) == by_key.end()) want_order.push_back(key);
    by_key[key].push_back(&n);
  }
  std::vector<std::string> got_order;
  for (const auto& p : probes) got_order.push_back(p.provider + ":" + p.name);
  ASSERT_EQ(got_order, want_order);

  for (const UsdtProbe& p : probes) {
    const auto& want = by_key[p.provider + ":" + p.name];
    ASSERT_EQ(p.locations.size(), want.size()) << p.provider << ":" << p.name;
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(p.provider + ":" + p.name + " #" + std::to_string(i));
      const NoteLine& n = *want[i];
      const UsdtLocation& loc = p.locations[i];
      const uint64_t shift = base ? base->addr - n.base : 0;
      EXPECT_EQ(loc.addr, n.location + shift);
      EXPECT_EQ(loc.semaphore, n.semaphore == 0 ? 0 : n.semaphore + shift);
      EXPECT_EQ(loc.args_text, n.args);

      const auto off = offset_via_loads(loads, loc.addr);
      ASSERT_TRUE(off);
      EXPECT_EQ(loc.offset, *off);
      // sys/sdt.h marks the probe site with a one-byte nop on x86_64.
      ASSERT_LT(loc.offset, bytes.size());
      EXPECT_EQ(bytes[loc.offset], 0x90) << "no nop at offset " << loc.offset;
      if (loc.semaphore != 0) {
        const auto sem_off = offset_via_loads(loads, loc.semaphore);
        ASSERT_TRUE(sem_off);
        EXPECT_EQ(loc.semaphore_offset, *sem_off);
      } else {
        EXPECT_EQ(loc.semaphore_offset, 0u);
      }
    }
  }
}

TEST(usdt_probes, matches_readelf_for_pie_fixture) {
  expect_matches_binutils(fixture("usdt_demo"));
}

TEST(usdt_probes, matches_readelf_for_non_pie_fixture) {
  expect_matches_binutils(fixture("usdt_demo_nopie"));
}

TEST(usdt_probes, matches_readelf_for_shared_library_fixture) {
  expect_matches_binutils(fixture("libusdt_lib.so"));
}

TEST(usdt_probes, matches_readelf_for_python) {
  if (!exists(kPython)) GTEST_SKIP() << kPython << " is not installed";
  expect_matches_binutils(kPython);
}

TEST(usdt_probes, matches_readelf_for_libjvm) {
  if (!exists(kLibjvm)) GTEST_SKIP() << kLibjvm << " is not installed";
  expect_matches_binutils(kLibjvm);
}

TEST(usdt_probes, parses_every_argument_of_python_and_libjvm) {
  for (const char* path : {kPython, kLibjvm}) {
    if (!exists(path)) continue;
    SCOPED_TRACE(path);
    const auto probes = probes_of(path);
    ASSERT_FALSE(probes.empty());
    for (const auto& p : probes) {
      for (const auto& loc : p.locations) {
        EXPECT_FALSE(loc.args_error) << p.provider << ":" << p.name << " '" << loc.args_text
                                     << "': " << loc.args_error->message;
        for (const auto& a : loc.args) {
          EXPECT_TRUE(a.size == 1 || a.size == 2 || a.size == 4 || a.size == 8) << a.text;
        }
      }
    }
  }
}

TEST(usdt_probes, python_function_entry_has_a_semaphore) {
  if (!exists(kPython)) GTEST_SKIP() << kPython << " is not installed";
  const auto probes = probes_of(kPython);
  const UsdtProbe* entry = find(probes, "function__entry");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->provider, "python");
  ASSERT_EQ(entry->locations.size(), 1u);
  const UsdtLocation& loc = entry->locations[0];
  EXPECT_NE(loc.semaphore, 0u);
  // The semaphore is in .probes, and its offset there matches its address there.
  const auto sec = readelf_section(kPython, ".probes");
  ASSERT_TRUE(sec);
  ASSERT_GE(loc.semaphore, sec->addr);
  ASSERT_LT(loc.semaphore, sec->addr + sec->size);
  EXPECT_EQ(loc.semaphore_offset - sec->offset, loc.semaphore - sec->addr);
  ASSERT_EQ(loc.args.size(), 3u);
  EXPECT_EQ(loc.args[2].size, 4);
  EXPECT_TRUE(loc.args[2].is_signed);
}

// The fixtures' own source decides these, whatever the compiler picks for operands.
void expect_demo_probes(const std::string& path) {
  SCOPED_TRACE(path);
  const auto probes = probes_of(path);
  std::set<std::string> names;
  for (const auto& p : probes) {
    EXPECT_EQ(p.provider, "usdt_demo");
    names.insert(p.name);
    for (const auto& loc : p.locations) {
      EXPECT_FALSE(loc.args_error) << p.name << ": " << loc.args_error->message;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"start", "one", "six", "many", "twice", "guarded",
                                          "guarded2", "memory"}));

  const UsdtProbe* twice = find(probes, "twice");
  ASSERT_NE(twice, nullptr);
  ASSERT_EQ(twice->locations.size(), 2u);
  EXPECT_NE(twice->locations[0].addr, twice->locations[1].addr);

  ASSERT_NE(find(probes, "start"), nullptr);
  EXPECT_TRUE(find(probes, "start")->locations.at(0).args.empty());

  // int8_t, uint16_t, int32_t, uint64_t, const char*, int64_t
  const UsdtProbe* six = find(probes, "six");
  ASSERT_NE(six, nullptr);
  const auto& args = six->locations.at(0).args;
  ASSERT_EQ(args.size(), 6u);
  const std::vector<std::pair<int, bool>> want = {{1, true},  {2, false}, {4, true},
                                                  {8, false}, {8, false}, {8, true}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(args[i].size, want[i].first) << args[i].text;
    EXPECT_EQ(args[i].is_signed, want[i].second) << args[i].text;
  }
  ASSERT_NE(find(probes, "many"), nullptr);
  EXPECT_EQ(find(probes, "many")->locations.at(0).args.size(), 10u);

  // Semaphores are exactly the `provider_name_semaphore` objects; unguarded probes have none.
  for (const auto& p : probes) {
    for (const auto& loc : p.locations) {
      if (p.name == "guarded" || p.name == "guarded2") {
        EXPECT_EQ(loc.semaphore, readelf_symbol(path, "usdt_demo_" + p.name + "_semaphore"));
        EXPECT_NE(loc.semaphore_offset, 0u);
      } else {
        EXPECT_EQ(loc.semaphore, 0u) << p.name;
      }
    }
  }

  // STAP_SDT_ARG_CONSTRAINT m: every operand is memory, some base+index*scale.
  const UsdtProbe* memory = find(probes, "memory");
  ASSERT_NE(memory, nullptr);
  bool indexed = false;
  for (const auto& a : memory->locations.at(0).args) {
    EXPECT_NE(a.kind, UsdtArg::Kind::Register) << a.text;
    EXPECT_NE(a.kind, UsdtArg::Kind::Constant) << a.text;
    indexed = indexed || a.kind == UsdtArg::Kind::Indexed;
  }
  EXPECT_TRUE(indexed);
}

TEST(usdt_probes, reads_demo_probes_from_pie) {
  expect_demo_probes(fixture("usdt_demo"));
  auto elf = ElfFile::open(fixture("usdt_demo"));
  ASSERT_TRUE(elf);
  EXPECT_TRUE(elf->is_pie());
}

TEST(usdt_probes, reads_demo_probes_from_non_pie) {
  const std::string path = fixture("usdt_demo_nopie");
  expect_demo_probes(path);
  const auto probes = probes_of(path);
  // Linked at 0x400000: offsets and addresses really differ, unlike in the PIE.
  for (const auto& p : probes) {
    for (const auto& loc : p.locations) EXPECT_NE(loc.offset, loc.addr) << p.name;
  }
  // -O0 keeps locals in the frame: every `six` operand is a stack slot off %rbp.
  for (const auto& a : find(probes, "six")->locations.at(0).args) {
    EXPECT_EQ(a.kind, UsdtArg::Kind::Memory) << a.text;
    EXPECT_EQ(a.base_reg, "rbp") << a.text;
    EXPECT_LT(a.offset, 0) << a.text;
  }
}

TEST(usdt_probes, reads_shared_library_probes_and_semaphores) {
  const std::string path = fixture("libusdt_lib.so");
  const auto probes = probes_of(path);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].provider, "usdt_lib");
  EXPECT_EQ(probes[0].name, "call");
  EXPECT_EQ(probes[1].name, "guarded");
  for (const auto& p : probes) {
    ASSERT_EQ(p.locations.size(), 1u);
    EXPECT_EQ(p.locations[0].semaphore, readelf_symbol(path, "usdt_lib_" + p.name + "_semaphore"));
  }
  ASSERT_EQ(probes[0].locations[0].args.size(), 4u);
  EXPECT_TRUE(probes[0].locations[0].args[0].is_signed);  // int32_t a
  EXPECT_EQ(probes[0].locations[0].args[0].size, 4);
}

TEST(usdt_probes, returns_nothing_for_a_binary_without_notes) {
  auto elf = ElfFile::open(fixture("usdt_demo_lib"));
  ASSERT_TRUE(elf) << elf.error().message;
  auto probes = read_usdt_probes(*elf);
  ASSERT_TRUE(probes) << probes.error().message;
  EXPECT_TRUE(probes->empty());
}

// Finds the note descriptor of the probe at `pc` in the file image: its pc, base and semaphore
// words are unique enough to search for.
size_t find_descriptor(const std::vector<uint8_t>& bytes, const NoteLine& n) {
  uint8_t pattern[24];
  const uint64_t words[3] = {n.location, n.base, n.semaphore};
  memcpy(pattern, words, sizeof pattern);
  for (size_t i = 0; i + sizeof pattern <= bytes.size(); ++i) {
    if (memcmp(&bytes[i], pattern, sizeof pattern) == 0) return i;
  }
  return std::string::npos;
}

// What prelink does to a library, simulated by editing the base a note was written against.
TEST(usdt_probes, adjusts_addresses_by_stapsdt_base) {
  const std::string path = fixture("usdt_demo_nopie");
  const auto notes = readelf_notes(path);
  const NoteLine* guarded = nullptr;
  const NoteLine* start = nullptr;
  for (const auto& n : notes) {
    if (n.name == "guarded") guarded = &n;
    if (n.name == "start") start = &n;
  }
  ASSERT_NE(guarded, nullptr);
  ASSERT_NE(start, nullptr);
  const std::vector<uint8_t> original = read_bytes(path);
  const size_t at = find_descriptor(original, *guarded);
  ASSERT_NE(at, std::string::npos);

  // Small shifts keep both the probe and its semaphore inside their segments' file images.
  for (int64_t shift : {2, -2}) {
    SCOPED_TRACE(shift);
    std::vector<uint8_t> bytes = original;
    const uint64_t moved_base = guarded->base - static_cast<uint64_t>(shift);
    memcpy(&bytes[at + 8], &moved_base, 8);
    const std::string tmp = write_temp("prelink", bytes);
    const auto probes = probes_of(tmp);
    unlink(tmp.c_str());
    const UsdtProbe* p = find(probes, "guarded");
    ASSERT_NE(p, nullptr);
    const UsdtLocation& loc = p->locations.at(0);
    EXPECT_EQ(loc.addr, guarded->location + static_cast<uint64_t>(shift));
    EXPECT_EQ(loc.semaphore, guarded->semaphore + static_cast<uint64_t>(shift));
    EXPECT_EQ(loc.offset, offset_via_loads(readelf_loads(path), loc.addr));
    EXPECT_EQ(loc.semaphore_offset, offset_via_loads(readelf_loads(path), loc.semaphore));
    // The other notes were written against the real base and stay put.
    ASSERT_NE(find(probes, "start"), nullptr);
    EXPECT_EQ(find(probes, "start")->locations.at(0).addr, start->location);
  }
}

TEST(usdt_probes, rejects_a_probe_outside_every_segment) {
  const std::string path = fixture("usdt_demo_nopie");
  const auto notes = readelf_notes(path);
  const NoteLine* start = nullptr;
  for (const auto& n : notes) {
    if (n.name == "start") start = &n;
  }
  ASSERT_NE(start, nullptr);
  std::vector<uint8_t> bytes = read_bytes(path);
  const size_t at = find_descriptor(bytes, *start);
  ASSERT_NE(at, std::string::npos);
  const uint64_t far_pc = 0x7f0000000000;
  memcpy(&bytes[at], &far_pc, 8);
  const std::string tmp = write_temp("far", bytes);
  auto elf = ElfFile::open(tmp);
  unlink(tmp.c_str());
  ASSERT_TRUE(elf) << elf.error().message;
  auto probes = read_usdt_probes(*elf);
  ASSERT_FALSE(probes);
  EXPECT_NE(probes.error().message.find("usdt_demo:start at 0x7f0000000000 is in no loadable"),
            std::string::npos)
      << probes.error().message;
}

TEST(usdt_probes, rejects_a_semaphore_outside_the_file_image) {
  const std::string path = fixture("usdt_demo_nopie");
  const NoteLine* guarded = nullptr;
  const auto notes = readelf_notes(path);
  for (const auto& n : notes) {
    if (n.name == "guarded") guarded = &n;
  }
  ASSERT_NE(guarded, nullptr);
  std::vector<uint8_t> bytes = read_bytes(path);
  const size_t at = find_descriptor(bytes, *guarded);
  ASSERT_NE(at, std::string::npos);
  const uint64_t far_semaphore = 0x7f0000000000;
  memcpy(&bytes[at + 16], &far_semaphore, 8);
  const std::string tmp = write_temp("farsem", bytes);
  auto elf = ElfFile::open(tmp);
  unlink(tmp.c_str());
  ASSERT_TRUE(elf) << elf.error().message;
  auto probes = read_usdt_probes(*elf);
  ASSERT_FALSE(probes);
  EXPECT_NE(probes.error().message.find("semaphore of USDT probe usdt_demo:guarded at "
                                        "0x7f0000000000"),
            std::string::npos)
      << probes.error().message;
}

TEST(usdt_probes, keeps_argument_errors_per_location) {
  const std::string path = fixture("usdt_demo");
  std::vector<uint8_t> bytes = read_bytes(path);
  // provider\0name\0args\0: break the first byte of `one`'s argument string.
  const std::string marker("usdt_demo\0one\0", 14);
  auto it = std::search(bytes.begin(), bytes.end(), marker.begin(), marker.end());
  ASSERT_NE(it, bytes.end());
  const size_t args_at = static_cast<size_t>(it - bytes.begin()) + marker.size();
  ASSERT_NE(bytes[args_at], 0) << "`one` has no arguments to break";
  bytes[args_at] = '@';
  const std::string tmp = write_temp("badargs", bytes);
  const auto probes = probes_of(tmp);
  unlink(tmp.c_str());
  for (const auto& p : probes) {
    for (const auto& loc : p.locations) {
      if (p.name == "one") {
        ASSERT_TRUE(loc.args_error);
        EXPECT_NE(loc.args_error->message.find("column 1: "), std::string::npos)
            << loc.args_error->message;
        EXPECT_TRUE(loc.args.empty());
        EXPECT_EQ(loc.args_text[0], '@');
      } else {
        EXPECT_FALSE(loc.args_error) << p.name;
      }
    }
  }
  EXPECT_NE(find(probes, "one"), nullptr);
}

}  // namespace
}  // namespace uscope
