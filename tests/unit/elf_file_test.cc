// ElfFile against what binutils (readelf, nm) say about the same files: fixtures built by
// tests/fixtures/elf and a few of the machine's own libraries.
#include "discover/elf_file.h"
#include "temp_dir.h"
#include "tool_output.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace uscope {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/elf/" + name;
}

using test::command_output;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

using test::nm_sized_symbols;
using test::NmSymbol;

struct Load {
  uint64_t offset, vaddr, filesz;
};

std::vector<Load> readelf_loads(const std::string& path) {
  std::vector<Load> out;
  std::istringstream in(command_output("readelf -lW " + path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string kind, off, vaddr, paddr, filesz;
    if (!(l >> kind >> off >> vaddr >> paddr >> filesz) || kind != "LOAD") continue;
    out.push_back({std::stoull(off, nullptr, 16), std::stoull(vaddr, nullptr, 16),
                   std::stoull(filesz, nullptr, 16)});
  }
  return out;
}

std::optional<uint64_t> expected_offset(const std::vector<Load>& loads, uint64_t vaddr) {
  for (const auto& l : loads) {
    if (vaddr >= l.vaddr && vaddr < l.vaddr + l.filesz) return l.offset + (vaddr - l.vaddr);
  }
  return std::nullopt;
}

std::string readelf_build_id(const std::string& path) {
  std::smatch m;
  const std::string out = command_output("readelf -n " + path + " 2>/dev/null");
  static const std::regex re("Build ID: ([0-9a-f]+)");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

const ElfSymbol* find_symbol(const std::vector<ElfSymbol>& syms, const std::string& name) {
  for (const auto& s : syms) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

using test::TempDir;

TEST(elf_file, reads_header_of_pie_non_pie_and_shared_library) {
  auto pie = ElfFile::open(fixture("hello_pie"));
  ASSERT_TRUE(pie) << pie.error().message;
  EXPECT_EQ(pie->type(), ET_DYN);
  EXPECT_TRUE(pie->is_pie());
  EXPECT_FALSE(pie->is_shared_library());
  EXPECT_TRUE(pie->is_64bit());
  EXPECT_EQ(pie->machine(), EM_X86_64);
  EXPECT_EQ(pie->base_vaddr(), 0u);

  auto exe = ElfFile::open(fixture("hello_nopie"));
  ASSERT_TRUE(exe) << exe.error().message;
  EXPECT_EQ(exe->type(), ET_EXEC);
  EXPECT_FALSE(exe->is_pie());
  EXPECT_FALSE(exe->is_shared_library());
  EXPECT_EQ(exe->base_vaddr(), 0x400000u);

  auto lib = ElfFile::open(fixture("libfixture.so"));
  ASSERT_TRUE(lib) << lib.error().message;
  EXPECT_EQ(lib->type(), ET_DYN);
  EXPECT_FALSE(lib->is_pie());
  EXPECT_TRUE(lib->is_shared_library());
}

TEST(elf_file, sections_match_readelf) {
  const std::string path = fixture("hello_pie");
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  std::istringstream in(command_output("readelf -SW " + path));
  static const std::regex re(
      R"(\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+))");
  std::string line;
  size_t checked = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    const size_t index = std::stoul(m[1].str());
    if (index == 0) continue;  // the null section has no name for the pattern to take
    ASSERT_LT(index, elf->sections().size() + 1);
    auto s = elf->section(m[2].str());
    ASSERT_TRUE(s) << m[2].str();
    EXPECT_EQ(s->index, index);
    EXPECT_EQ(s->addr, std::stoull(m[3].str(), nullptr, 16)) << s->name;
    EXPECT_EQ(s->offset, std::stoull(m[4].str(), nullptr, 16)) << s->name;
    EXPECT_EQ(s->size, std::stoull(m[5].str(), nullptr, 16)) << s->name;
    ++checked;
  }
  EXPECT_GT(checked, 20u);
  EXPECT_EQ(elf->section(".text")->type, uint32_t{SHT_PROGBITS});
  EXPECT_FALSE(elf->section(".no_such_section"));
}

TEST(elf_file, function_symbols_match_nm) {
  for (const char* name : {"hello_pie", "hello_nopie", "libfixture.so", "widget"}) {
    const std::string path = fixture(name);
    auto elf = ElfFile::open(path);
    ASSERT_TRUE(elf) << elf.error().message;
    auto syms = elf->symbols();
    ASSERT_TRUE(syms) << syms.error().message;
    size_t checked = 0;
    for (const auto& [sym, e] : nm_sized_symbols("--defined-only " + path)) {
      if (e.type != 'T' && e.type != 't' && e.type != 'W') continue;
      const ElfSymbol* s = find_symbol(*syms, sym);
      ASSERT_NE(s, nullptr) << name << ": " << sym;
      EXPECT_EQ(s->addr, e.addr) << sym;
      EXPECT_EQ(s->size, e.size) << sym;
      EXPECT_EQ(s->kind, SymbolKind::Function) << sym;
      EXPECT_EQ(s->binding, e.type == 't'   ? SymbolBinding::Local
                            : e.type == 'W' ? SymbolBinding::Weak
                                            : SymbolBinding::Global)
          << sym;
      ++checked;
    }
    EXPECT_GE(checked, 3u) << name;
  }
  auto elf = ElfFile::open(fixture("hello_pie"));
  auto syms = elf->symbols();
  ASSERT_TRUE(syms);
  const ElfSymbol* helper = find_symbol(*syms, "hello_helper");
  ASSERT_NE(helper, nullptr);
  EXPECT_EQ(helper->source, SymbolSource::Symtab);
  const ElfSymbol* counter = find_symbol(*syms, "hello_counter");
  ASSERT_NE(counter, nullptr);
  EXPECT_EQ(counter->kind, SymbolKind::Object);
  const ElfSymbol* printf_sym = find_symbol(*syms, "printf");
  ASSERT_NE(printf_sym, nullptr);
  EXPECT_FALSE(printf_sym->defined);
  EXPECT_EQ(printf_sym->source, SymbolSource::Dynsym);
}

void check_vaddr_mapping(const std::string& path) {
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  auto syms = elf->symbols();
  ASSERT_TRUE(syms);
  const auto loads = readelf_loads(path);
  ASSERT_FALSE(loads.empty());
  const auto file = read_file(path);
  auto text = elf->section(".text");
  ASSERT_TRUE(text);
  auto text_bytes = elf->section_data(*text);
  ASSERT_TRUE(text_bytes);
  for (const char* name : {"main", "hello_add", "hello_helper"}) {
    const ElfSymbol* s = find_symbol(*syms, name);
    ASSERT_NE(s, nullptr) << name;
    auto off = elf->vaddr_to_offset(s->addr);
    ASSERT_TRUE(off) << name;
    EXPECT_EQ(off, expected_offset(loads, s->addr)) << name;
    EXPECT_EQ(elf->offset_to_vaddr(*off), s->addr) << name;
    // The bytes at the file offset are the function's code as .text holds it.
    ASSERT_GT(s->size, 0u);
    ASSERT_LE(*off + s->size, file.size());
    ASSERT_LE(s->addr - text->addr + s->size, text_bytes->size());
    EXPECT_TRUE(std::equal(file.begin() + static_cast<long>(*off),
                           file.begin() + static_cast<long>(*off + s->size),
                           text_bytes->begin() + static_cast<long>(s->addr - text->addr)))
        << name;
  }
  // .bss has addresses but no bytes in the file, so nothing can be attached there.
  const ElfSymbol* counter = find_symbol(*syms, "hello_counter");
  ASSERT_NE(counter, nullptr);
  EXPECT_FALSE(elf->vaddr_to_offset(counter->addr));
  EXPECT_FALSE(elf->vaddr_to_offset(0xffffffff00000000ull));
}

TEST(elf_file, maps_pie_vaddr_to_offset) {
  check_vaddr_mapping(fixture("hello_pie"));
  auto elf = ElfFile::open(fixture("hello_pie"));
  auto symbols = elf->symbols();  // kept: find_symbol points into it
  ASSERT_TRUE(symbols) << symbols.error().message;
  auto main_sym = find_symbol(*symbols, "main");
  // GNU ld lays a PIE's text out at vaddr == offset.
  EXPECT_EQ(elf->vaddr_to_offset(main_sym->addr), main_sym->addr);
}

TEST(elf_file, maps_non_pie_vaddr_to_offset) {
  check_vaddr_mapping(fixture("hello_nopie"));
  auto elf = ElfFile::open(fixture("hello_nopie"));
  auto symbols = elf->symbols();  // kept: find_symbol points into it
  ASSERT_TRUE(symbols) << symbols.error().message;
  auto main_sym = find_symbol(*symbols, "main");
  EXPECT_GE(main_sym->addr, 0x400000u);
  EXPECT_EQ(elf->vaddr_to_offset(main_sym->addr), main_sym->addr - 0x400000u);
  EXPECT_FALSE(elf->vaddr_to_offset(0x1000));
  EXPECT_FALSE(elf->offset_to_vaddr(1u << 30));
}

TEST(elf_file, reads_build_id_like_readelf) {
  for (const char* name : {"hello_pie", "hello_nopie", "libfixture.so", "dbg_stripped"}) {
    auto elf = ElfFile::open(fixture(name));
    ASSERT_TRUE(elf) << elf.error().message;
    const std::string expected = readelf_build_id(fixture(name));
    ASSERT_EQ(expected.size(), 40u) << name;
    EXPECT_EQ(elf->build_id(), expected) << name;
  }
}

TEST(elf_file, reads_notes_from_sections_and_from_segments) {
  const std::string path = fixture("hello_pie");
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf);
  auto notes = elf->notes("GNU");
  ASSERT_TRUE(notes) << notes.error().message;
  auto section = elf->section(".note.gnu.build-id");
  ASSERT_TRUE(section);
  auto it = std::find_if(notes->begin(), notes->end(),
                         [](const ElfNote& n) { return n.type == NT_GNU_BUILD_ID; });
  ASSERT_NE(it, notes->end());
  EXPECT_EQ(it->owner, "GNU");
  EXPECT_EQ(it->desc.size(), 20u);
  EXPECT_EQ(it->section_addr, section->addr);
  EXPECT_TRUE(elf->notes("NoSuchOwner")->empty());
  EXPECT_GE(elf->notes()->size(), notes->size());

  // Without section headers the notes still come from PT_NOTE.
  auto bytes = read_file(path);
  ASSERT_GE(bytes.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(bytes.data(), &eh, sizeof eh);
  auto bare = ElfFile::from_memory(std::move(bytes), "bare");
  ASSERT_TRUE(bare) << bare.error().message;
  EXPECT_TRUE(bare->sections().empty());
  auto seg_notes = bare->notes("GNU");
  ASSERT_TRUE(seg_notes);
  ASSERT_TRUE(std::any_of(seg_notes->begin(), seg_notes->end(), [](const ElfNote& n) {
    return n.type == NT_GNU_BUILD_ID && n.section_addr == 0;
  }));
  EXPECT_EQ(bare->build_id(), elf->build_id());
  EXPECT_TRUE(bare->is_pie());
}

TEST(elf_file, decompresses_compressed_sections) {
  auto gz = ElfFile::open(fixture("hello_gz"));
  auto plain = ElfFile::open(fixture("hello_gz_plain"));
  ASSERT_TRUE(gz && plain);
  auto gz_info = gz->section(".debug_info");
  auto plain_info = plain->section(".debug_info");
  ASSERT_TRUE(gz_info && plain_info);
  EXPECT_TRUE(gz_info->flags & SHF_COMPRESSED);
  EXPECT_FALSE(plain_info->flags & SHF_COMPRESSED);
  auto a = gz->section_data(*gz_info);
  auto b = plain->section_data(*plain_info);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(a->size(), plain_info->size);
  EXPECT_TRUE(std::equal(a->begin(), a->end(), b->begin(), b->end()));
  // A second call serves the already decompressed bytes.
  auto again = gz->section_data(*gz_info);
  ASSERT_TRUE(again);
  EXPECT_TRUE(std::equal(again->begin(), again->end(), b->begin(), b->end()));
}

TEST(elf_file, nobits_section_data_is_empty) {
  auto elf = ElfFile::open(fixture("hello_pie"));
  auto bss = elf->section(".bss");
  ASSERT_TRUE(bss);
  EXPECT_EQ(bss->type, uint32_t{SHT_NOBITS});
  auto data = elf->section_data(*bss);
  ASSERT_TRUE(data);
  EXPECT_TRUE(data->empty());
}

TEST(elf_file, reports_missing_file) {
  auto elf = ElfFile::open("/nonexistent/uscope/file");
  ASSERT_FALSE(elf);
  EXPECT_EQ(elf.error().message, "/nonexistent/uscope/file: No such file or directory");
  EXPECT_EQ(elf.error().errnum, ENOENT);
}

TEST(elf_file, reports_directory) {
  auto elf = ElfFile::open("/etc");
  ASSERT_FALSE(elf);
  EXPECT_EQ(elf.error().message, "/etc: is a directory");
}

TEST(elf_file, reports_non_elf_and_empty_files) {
  TempDir dir;
  const std::string text = dir.str() + "/x";
  std::ofstream(text) << "#!/bin/sh\necho this is a script, not a binary\n";
  auto elf = ElfFile::open(text);
  ASSERT_FALSE(elf);
  EXPECT_EQ(elf.error().message, text + ": not an ELF file");

  const std::string empty = dir.str() + "/empty";
  std::ofstream{empty};
  elf = ElfFile::open(empty);
  ASSERT_FALSE(elf);
  EXPECT_EQ(elf.error().message, empty + ": empty file, not an ELF file");

  elf = ElfFile::open(text, "/shown/to/user");
  ASSERT_FALSE(elf);
  EXPECT_EQ(elf.error().message, "/shown/to/user: not an ELF file");

  auto mem = ElfFile::from_memory({'h', 'i'}, "memory");
  ASSERT_FALSE(mem);
  EXPECT_EQ(mem.error().message, "memory: not an ELF file");
}

TEST(elf_file, reports_truncated_elf) {
  TempDir dir;
  const auto bytes = read_file(fixture("hello_pie"));
  for (size_t keep : {bytes.size() / 2, size_t{100}, size_t{40}, size_t{10}}) {
    const std::string path = dir.str() + "/cut" + std::to_string(keep);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(keep));
    auto elf = ElfFile::open(path);
    ASSERT_FALSE(elf) << keep;
    const std::string& msg = elf.error().message;
    EXPECT_TRUE(msg.starts_with(path + ": truncated")) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(elf_file, libssl_dynamic_functions_match_nm) {
  const std::string path = "/usr/lib/x86_64-linux-gnu/libssl.so.3";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not installed";
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  auto syms = elf->symbols();
  ASSERT_TRUE(syms);
  std::set<std::string> ours;
  for (const auto& s : *syms) {
    bool function = s.kind == SymbolKind::Function || s.kind == SymbolKind::IndirectFunction;
    if (s.source == SymbolSource::Dynsym && s.defined && function) {
      ours.insert(s.name);
    }
  }
  std::set<std::string> theirs;
  std::istringstream in(command_output("nm -D --defined-only --without-symbol-versions " + path +
                                       " | awk '$2 ~ /^[TWi]$/ "
                                       "{ print $3 }'"));
  std::string name;
  while (in >> name) theirs.insert(name);
  EXPECT_GT(theirs.size(), 500u);
  EXPECT_EQ(ours, theirs);
  EXPECT_EQ(elf->build_id(), readelf_build_id(path));
  EXPECT_TRUE(elf->is_shared_library());
}

TEST(elf_file, libc_is_a_shared_library_despite_its_pt_interp) {
  const std::string path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not installed";
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  ASSERT_TRUE(std::any_of(elf->segments().begin(), elf->segments().end(),
                          [](const ElfSegment& s) { return s.type == PT_INTERP; }));
  EXPECT_FALSE(elf->is_pie());
  EXPECT_TRUE(elf->is_shared_library());
}

TEST(elf_file, python3_has_build_id_and_matching_type) {
  const std::string path = "/usr/bin/python3.11";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not installed";
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  const std::string expected = readelf_build_id(path);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(elf->build_id(), expected);
  const bool readelf_says_exec =
      command_output("readelf -h " + path).find("EXEC (") != std::string::npos;
  EXPECT_EQ(elf->type() == ET_EXEC, readelf_says_exec);
  EXPECT_EQ(elf->is_pie(), !readelf_says_exec);
  // Debian strips python3.11 to .dynsym and points .gnu_debuglink at the -dbg package.
  EXPECT_EQ(elf->section(".symtab").has_value(),
            command_output("readelf -SW " + path).find(" .symtab ") != std::string::npos);
}

// Code is read from the file in pieces as it is asked for (code_bytes) or once (read_code): both
// give the file's bytes at readelf's offset of .text, across the 64 KiB pieces' boundaries too.
TEST(elf_file, code_bytes_and_read_code_are_the_files_bytes_at_readelfs_offset) {
  const std::string path = "/usr/bin/python3.11";  // .text of 2.6 MB: many pieces
  ASSERT_TRUE(fs::exists(path)) << path << " not installed (apt-get install python3.11)";
  std::smatch m;
  const std::string sections = command_output("readelf -SW " + path);
  ASSERT_TRUE(std::regex_search(
      sections, m, std::regex(R"( \.text\s+PROGBITS\s+([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+))")));
  const uint64_t addr = std::stoull(m[1].str(), nullptr, 16),
                 off = std::stoull(m[2].str(), nullptr, 16),
                 size = std::stoull(m[3].str(), nullptr, 16);
  ASSERT_GT(size, 3u * 65536);
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> file(size);
  in.seekg(static_cast<std::streamoff>(off));
  in.read(reinterpret_cast<char*>(file.data()), static_cast<std::streamsize>(size));
  ASSERT_TRUE(in);

  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  auto expect_file_bytes = [&](uint64_t at, uint64_t len) {
    auto got = elf->code_bytes(addr + at, len);
    ASSERT_EQ(got.size(), std::min(len, size - at)) << "at +" << at;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), file.begin() + static_cast<ptrdiff_t>(at)))
        << "at +" << at;
  };
  expect_file_bytes(65536 - 10, 20);          // across the first pieces' boundary
  expect_file_bytes(2 * 65536 + 100, 65536);  // a piece and a half, from a third piece
  expect_file_bytes(0, 16);                   // an earlier piece after later ones
  expect_file_bytes(size - 8, 64);            // cut at the section's end
  std::vector<uint8_t> whole;
  ASSERT_TRUE(elf->read_code(addr, size, whole));
  EXPECT_EQ(whole, file);
  EXPECT_FALSE(elf->read_code(addr + size + (1u << 30), 16, whole));  // in no section
}

}  // namespace
}  // namespace uscope
