// .go.buildinfo: the real Go fixture against `go version`, hand-made sections in the Go 1.18+
// inline layout and the older pointer layout, and every way a truncated or corrupt one is refused.
#include "discover/go_buildinfo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "discover/elf_file.h"
#include "tool_output.h"

namespace uscope {
namespace {

using Bytes = std::vector<uint8_t>;

std::string gowork_path() {
  return std::string(USCOPE_FIXTURE_DIR) + "/go/gowork";
}

using test::command_output;

// The 16-byte sentinels cmd/go wraps module info in (cmd/go/internal/modload infoStart/infoEnd).
// Sized explicitly: the end sentinel holds a NUL.
const std::string kStart("\x30\x77\xaf\x0c\x92\x74\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6", 16);
const std::string kEnd("\xf9\x32\x43\x31\x86\x18\x20\x72\x00\x82\x42\x10\x41\x16\xd8\xf2", 16);

std::string framed(const std::string& text) {
  return kStart + text + kEnd;
}

void append(Bytes& b, const std::string& s) {
  b.insert(b.end(), s.begin(), s.end());
}

void append_uvarint(Bytes& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}

void append_uint(Bytes& b, uint64_t v, size_t size, bool big_endian) {
  for (size_t i = 0; i < size; ++i) {
    const size_t shift = 8 * (big_endian ? size - 1 - i : i);
    b.push_back(static_cast<uint8_t>(v >> shift));
  }
}

// The 32-byte header: magic, pointer size, flags, then two pointers (zero for the inline layout).
Bytes header(uint8_t ptr_size, uint8_t flags, uint64_t version_addr = 0, uint64_t mod_addr = 0) {
  Bytes b;
  append(b, std::string("\xff Go buildinf:"));
  b.push_back(ptr_size);
  b.push_back(flags);
  const size_t size = ptr_size == 4 ? 4 : 8;
  append_uint(b, version_addr, size, flags & 1);
  append_uint(b, mod_addr, size, flags & 1);
  b.resize(32, 0);
  return b;
}

Bytes inline_section(const std::string& version, const std::string& mod) {
  Bytes b = header(8, 2);
  append_uvarint(b, version.size());
  append(b, version);
  append_uvarint(b, mod.size());
  append(b, mod);
  return b;
}

// Sparse program memory for the pointer layout: regions keyed by their start address.
struct FakeMemory {
  std::map<uint64_t, Bytes> regions;
  uint64_t max_len_seen = 0;

  GoReadAt reader() {
    return [this](uint64_t addr, uint64_t len) -> std::optional<std::span<const uint8_t>> {
      if (len > max_len_seen) max_len_seen = len;
      for (const auto& [start, bytes] : regions) {
        if (addr < start || addr - start > bytes.size()) continue;
        const uint64_t off = addr - start;
        if (len > bytes.size() - off) continue;
        return std::span<const uint8_t>(bytes).subspan(off, len);
      }
      return std::nullopt;
    };
  }
};

const GoReadAt kNoMemory = [](uint64_t, uint64_t) -> std::optional<std::span<const uint8_t>> {
  return std::nullopt;
};

// A Go 1.16-style binary: header in .go.buildinfo, string headers in .data, bytes in .rodata.
struct PointerLayout {
  FakeMemory mem;
  Bytes section;

  PointerLayout(const std::string& version, const std::string& mod, size_t ptr_size,
                bool big_endian) {
    section = header(static_cast<uint8_t>(ptr_size), big_endian ? 1 : 0, 0x6000, 0x6000 + 16);
    Bytes data;
    append_uint(data, 0x4000, ptr_size, big_endian);
    append_uint(data, version.size(), ptr_size, big_endian);
    data.resize(16, 0);
    append_uint(data, 0x4100, ptr_size, big_endian);
    append_uint(data, mod.size(), ptr_size, big_endian);
    mem.regions[0x6000] = data;
    mem.regions[0x4000] = Bytes(version.begin(), version.end());
    mem.regions[0x4100] = Bytes(mod.begin(), mod.end());
  }
};

TEST(go_buildinfo, gowork_fixture_matches_go_version) {
  // `go version FILE` prints "FILE: go1.19.8".
  const std::string out = command_output("go version " + gowork_path() + " 2>/dev/null");
  const size_t colon = out.rfind(": ");
  ASSERT_NE(colon, std::string::npos) << "go version printed: " << out;
  std::string expected = out.substr(colon + 2);
  while (!expected.empty() && (expected.back() == '\n' || expected.back() == ' ')) {
    expected.pop_back();
  }

  auto elf = ElfFile::open(gowork_path());
  ASSERT_TRUE(elf) << elf.error().message;
  auto info = read_go_buildinfo(*elf);
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_TRUE(info->has_value());
  const GoBuildInfo& bi = **info;
  EXPECT_EQ(bi.version, expected);
  EXPECT_EQ(bi.major, 1);
  EXPECT_EQ(bi.minor, 19);
  EXPECT_TRUE(bi.register_abi());
  // Built in GOPATH mode: a main package path but no main module.
  EXPECT_EQ(bi.mod_info.rfind("path\tcommand-line-arguments\n", 0), 0u) << bi.mod_info;
  EXPECT_EQ(bi.main_path, "");
  EXPECT_EQ(bi.mod_info.find(kEnd), std::string::npos);
}

TEST(go_buildinfo, non_go_elf_is_nullopt) {
  auto elf = ElfFile::open("/usr/bin/true");
  ASSERT_TRUE(elf) << elf.error().message;
  auto info = read_go_buildinfo(*elf);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_FALSE(info->has_value());
}

// gowork with its .go.buildinfo rewritten to the pointer layout, aimed at the "go1.19.8" bytes
// elsewhere in the file: exercises read_go_buildinfo's reads through the ELF's loaded sections.
TEST(go_buildinfo, elf_pointer_layout_reads_through_sections) {
  std::ifstream in(gowork_path(), std::ios::binary);
  Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(file.empty());
  auto orig = ElfFile::from_memory(file, "gowork");
  ASSERT_TRUE(orig) << orig.error().message;
  auto sec = orig->section(".go.buildinfo");
  ASSERT_TRUE(sec);
  ASSERT_GE(sec->size, 64u);

  // runtime.buildVersion's bytes live in .rodata, outside .go.buildinfo.
  const std::string needle = "go1.19.8";
  std::optional<uint64_t> version_vaddr;
  for (size_t i = 0; i + needle.size() <= file.size() && !version_vaddr; ++i) {
    if (i >= sec->offset && i < sec->offset + sec->size) continue;
    if (std::equal(needle.begin(), needle.end(), file.begin() + i)) {
      version_vaddr = orig->offset_to_vaddr(i);  // skips copies in unloaded (debug) sections
    }
  }
  ASSERT_TRUE(version_vaddr);

  // Header with pointers to two string headers placed right after it in the section; the module
  // info is empty, as in a Go 1.16 GOPATH build.
  Bytes patched = header(8, 0, sec->addr + 32, sec->addr + 48);
  append_uint(patched, *version_vaddr, 8, false);
  append_uint(patched, needle.size(), 8, false);
  append_uint(patched, 0, 8, false);
  append_uint(patched, 0, 8, false);
  std::copy(patched.begin(), patched.end(), file.begin() + sec->offset);

  auto elf = ElfFile::from_memory(std::move(file), "gowork-patched");
  ASSERT_TRUE(elf) << elf.error().message;
  auto info = read_go_buildinfo(*elf);
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->version, "go1.19.8");
  EXPECT_EQ((*info)->mod_info, "");
}

TEST(go_buildinfo, inline_layout) {
  const std::string mod =
      "path\texample.com/hello/cmd/hi\nmod\texample.com/hello\t(devel)\t\n"
      "dep\tgolang.org/x/sys\tv0.1.0\th1:abc=\n";
  auto r = parse_go_buildinfo(inline_section("go1.21rc2", framed(mod)), 0x1000, kNoMemory);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "go1.21rc2");
  EXPECT_EQ(r->major, 1);
  EXPECT_EQ(r->minor, 21);
  EXPECT_EQ(r->mod_info, mod);
  EXPECT_EQ(r->main_path, "example.com/hello");
  EXPECT_TRUE(r->register_abi());
}

TEST(go_buildinfo, inline_layout_unframed_and_empty_mod_info) {
  auto r = parse_go_buildinfo(inline_section("go1.18", "mod\tx.org/y\t(devel)"), 0, kNoMemory);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->mod_info, "mod\tx.org/y\t(devel)");
  EXPECT_EQ(r->main_path, "x.org/y");

  r = parse_go_buildinfo(inline_section("go1.18", ""), 0, kNoMemory);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->mod_info, "");
  EXPECT_EQ(r->main_path, "");
}

TEST(go_buildinfo, header_at_later_aligned_offset) {
  Bytes s(16, 0);
  const Bytes body = inline_section("go1.20.1", framed("path\tp\n"));
  s.insert(s.end(), body.begin(), body.end());
  auto r = parse_go_buildinfo(s, 0x1000, kNoMemory);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "go1.20.1");

  // Go only ever aligns the header to 16 bytes; a misaligned copy is not one.
  Bytes m(8, 0);
  m.insert(m.end(), body.begin(), body.end());
  EXPECT_FALSE(parse_go_buildinfo(m, 0x1000, kNoMemory));
}

TEST(go_buildinfo, pointer_layout_little_endian_64) {
  const std::string mod = "path\tex.com/a\nmod\tex.com/a\t(devel)\t\n";
  PointerLayout p("go1.16.15", framed(mod), 8, false);
  auto r = parse_go_buildinfo(p.section, 0x1000, p.mem.reader());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "go1.16.15");
  EXPECT_EQ(r->major, 1);
  EXPECT_EQ(r->minor, 16);
  EXPECT_FALSE(r->register_abi());
  EXPECT_EQ(r->mod_info, mod);
  EXPECT_EQ(r->main_path, "ex.com/a");
}

TEST(go_buildinfo, pointer_layout_big_endian_32) {
  PointerLayout p("go1.13", "", 4, true);
  auto r = parse_go_buildinfo(p.section, 0x1000, p.mem.reader());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "go1.13");
  EXPECT_EQ(r->minor, 13);
  EXPECT_EQ(r->mod_info, "");
}

TEST(go_buildinfo, pointer_layout_string_headers_inside_section) {
  // Pointers into the section itself are served from the section even without a reader.
  Bytes s = header(8, 0, 0x1000 + 32, 0x1000 + 48);
  append_uint(s, 0x1000 + 64, 8, false);
  append_uint(s, 8, 8, false);
  append_uint(s, 0, 8, false);
  append_uint(s, 0, 8, false);
  append(s, "go1.17.2");
  auto r = parse_go_buildinfo(s, 0x1000, GoReadAt{});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "go1.17.2");
  EXPECT_TRUE(r->register_abi());
}

TEST(go_buildinfo, pointer_layout_unreadable_memory_is_an_error) {
  PointerLayout p("go1.16", "", 8, false);
  EXPECT_FALSE(parse_go_buildinfo(p.section, 0x1000, kNoMemory));
  EXPECT_FALSE(parse_go_buildinfo(p.section, 0x1000, GoReadAt{}));

  // A reader that hands back fewer bytes than asked must not be read past.
  const GoReadAt short_reader = [&p](uint64_t addr,
                                     uint64_t len) -> std::optional<std::span<const uint8_t>> {
    auto full = p.mem.reader()(addr, len);
    if (!full || full->empty()) return full;
    return full->subspan(0, full->size() - 1);
  };
  EXPECT_FALSE(parse_go_buildinfo(p.section, 0x1000, short_reader));
}

TEST(go_buildinfo, pointer_layout_huge_lengths_never_reach_the_reader) {
  PointerLayout p("go1.16", "", 8, false);
  Bytes& data = p.mem.regions[0x6000];
  for (size_t i = 8; i < 16; ++i) data[i] = 0xff;  // version length 2^64-1
  EXPECT_FALSE(parse_go_buildinfo(p.section, 0x1000, p.mem.reader()));
  EXPECT_LE(p.mem.max_len_seen, 16u);

  // An oversized module info is dropped (never read) while the version survives.
  PointerLayout q("go1.16", "", 8, false);
  Bytes& qdata = q.mem.regions[0x6000];
  for (size_t i = 24; i < 32; ++i) qdata[i] = 0x7f;
  auto r = parse_go_buildinfo(q.section, 0x1000, q.mem.reader());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "go1.16");
  EXPECT_EQ(r->mod_info, "");
  EXPECT_LE(q.mem.max_len_seen, 16u);
}

TEST(go_buildinfo, oversized_inline_mod_info_is_dropped) {
  auto r = parse_go_buildinfo(inline_section("go1.22.0", std::string(70000, 'x')), 0, kNoMemory);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "go1.22.0");
  EXPECT_EQ(r->mod_info, "");
}

TEST(go_buildinfo, every_truncation_is_an_error) {
  const Bytes full = inline_section("go1.19.8", framed("path\tp\nmod\tm\t(devel)\t\n"));
  ASSERT_TRUE(parse_go_buildinfo(full, 0, kNoMemory));
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_FALSE(parse_go_buildinfo(std::span<const uint8_t>(full).first(n), 0, kNoMemory))
        << "prefix of " << n << " bytes";
  }
  PointerLayout p("go1.16", "", 8, false);
  for (size_t n = 0; n < p.section.size(); ++n) {
    EXPECT_FALSE(
        parse_go_buildinfo(std::span<const uint8_t>(p.section).first(n), 0x1000, p.mem.reader()));
  }
}

TEST(go_buildinfo, garbage_is_an_error) {
  EXPECT_FALSE(parse_go_buildinfo({}, 0, kNoMemory));
  Bytes noise(256);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 37 + 11);
  EXPECT_FALSE(parse_go_buildinfo(noise, 0, kNoMemory));

  // Pointer sizes other than 4 and 8.
  for (uint8_t ptr : {0, 2, 3, 16, 255}) {
    Bytes s = header(ptr, 0);
    EXPECT_FALSE(parse_go_buildinfo(s, 0, kNoMemory)) << int(ptr);
  }

  // Unterminated / over-long varint length.
  Bytes v = header(8, 2);
  v.insert(v.end(), 11, 0xff);
  EXPECT_FALSE(parse_go_buildinfo(v, 0, kNoMemory));

  // Lengths beyond the section, an over-long, empty and binary version.
  Bytes beyond = header(8, 2);
  append_uvarint(beyond, 1000);
  append(beyond, "go1.19");
  EXPECT_FALSE(parse_go_buildinfo(beyond, 0, kNoMemory));
  EXPECT_FALSE(parse_go_buildinfo(inline_section(std::string(65, 'g'), ""), 0, kNoMemory));
  EXPECT_TRUE(parse_go_buildinfo(inline_section(std::string(64, 'g'), ""), 0, kNoMemory));
  EXPECT_FALSE(parse_go_buildinfo(inline_section("", ""), 0, kNoMemory));
  EXPECT_FALSE(parse_go_buildinfo(inline_section(std::string("go1\0\n", 5), ""), 0, kNoMemory));
}

TEST(go_buildinfo, version_numbers) {
  struct Case {
    const char* text;
    int major, minor;
  };
  for (const Case& c :
       {Case{"go1.19.8", 1, 19}, Case{"go1.21rc2", 1, 21},
        Case{"devel go1.22-abc123 Tue Jan 2 15:04:05 2024 +0000", 1, 22}, Case{"go1", 1, 0},
        Case{"go1.9beta1", 1, 9}, Case{"go2.0", 2, 0}, Case{"devel +abc123 Tue Jan 2", 0, 0},
        Case{"go", 0, 0}, Case{"gogo go1.", 1, 0}, Case{"", 0, 0},
        Case{"go1.99999999999999", 1, 999999999}}) {
    int major = -1, minor = -1;
    parse_go_version(c.text, major, minor);
    EXPECT_EQ(major, c.major) << c.text;
    EXPECT_EQ(minor, c.minor) << c.text;
  }
}

TEST(go_buildinfo, register_abi_starts_at_1_17) {
  GoBuildInfo bi;
  EXPECT_FALSE(bi.register_abi());
  bi.major = 1;
  bi.minor = 16;
  EXPECT_FALSE(bi.register_abi());
  bi.minor = 17;
  EXPECT_TRUE(bi.register_abi());
  bi.major = 2;
  bi.minor = 0;
  EXPECT_TRUE(bi.register_abi());
}

}  // namespace
}  // namespace uscope
