#include "discover/library_names.h"

#include "discover/target.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace uscope;

namespace {

struct Lib {
  uint32_t flags;
  std::string soname;
  std::string path;
  uint64_t hwcap = 0;
};

template <class T>
void put(std::vector<uint8_t>& out, size_t at, T v) {
  if (out.size() < at + sizeof v) out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

void put_str(std::vector<uint8_t>& out, size_t at, std::string_view s) {
  if (out.size() < at + s.size()) out.resize(at + s.size());
  std::memcpy(out.data() + at, s.data(), s.size());
}

// A cache in glibc's new format as ldconfig writes it: header, entries, then strings whose
// offsets count from the header.
std::vector<uint8_t> new_cache(const std::vector<Lib>& libs, uint8_t endian = 2) {
  std::vector<uint8_t> out(48 + 24 * libs.size());
  put_str(out, 0, "glibc-ld.so.cache1.1");
  put<uint32_t>(out, 20, static_cast<uint32_t>(libs.size()));
  out[28] = endian;
  size_t strings = out.size();
  for (size_t i = 0; i < libs.size(); ++i) {
    size_t at = 48 + 24 * i;
    put<int32_t>(out, at, static_cast<int32_t>(libs[i].flags));
    put<uint32_t>(out, at + 4, static_cast<uint32_t>(out.size()));
    put_str(out, out.size(), libs[i].soname + '\0');
    put<uint32_t>(out, at + 8, static_cast<uint32_t>(out.size()));
    put_str(out, out.size(), libs[i].path + '\0');
    put<uint64_t>(out, at + 16, libs[i].hwcap);
  }
  put<uint32_t>(out, 24, static_cast<uint32_t>(out.size() - strings));
  return out;
}

// The compatibility layout of glibc < 2.32: an old "ld.so-1.7.0" table, then the new format at
// the next 8-byte boundary.
std::vector<uint8_t> old_and_new_cache(const std::vector<Lib>& libs) {
  std::vector<uint8_t> out(16 + 12 * libs.size());
  put_str(out, 0, "ld.so-1.7.0");
  put<uint32_t>(out, 12, static_cast<uint32_t>(libs.size()));
  size_t old_end = out.size();
  out.resize((out.size() + 7) & ~size_t{7});
  size_t new_base = out.size();
  auto tail = new_cache(libs);
  out.insert(out.end(), tail.begin(), tail.end());
  // ldconfig points the old entries into the shared string table, relative to their own end.
  for (size_t i = 0; i < libs.size(); ++i) {
    size_t at = 16 + 12 * i, new_at = new_base + 48 + 24 * i;
    put<int32_t>(out, at, static_cast<int32_t>(libs[i].flags));
    for (size_t field : {4, 8}) {
      uint32_t off = 0;
      std::memcpy(&off, out.data() + new_at + field, sizeof off);
      put<uint32_t>(out, at + field, static_cast<uint32_t>(new_base - old_end + off));
    }
  }
  return out;
}

// Only the old table: strings follow the entries and count from their end.
std::vector<uint8_t> old_cache(const std::vector<Lib>& libs) {
  std::vector<uint8_t> out(16 + 12 * libs.size());
  put_str(out, 0, "ld.so-1.7.0");
  put<uint32_t>(out, 12, static_cast<uint32_t>(libs.size()));
  size_t strings = out.size();
  for (size_t i = 0; i < libs.size(); ++i) {
    size_t at = 16 + 12 * i;
    put<int32_t>(out, at, static_cast<int32_t>(libs[i].flags));
    put<uint32_t>(out, at + 4, static_cast<uint32_t>(out.size() - strings));
    put_str(out, out.size(), libs[i].soname + '\0');
    put<uint32_t>(out, at + 8, static_cast<uint32_t>(out.size() - strings));
    put_str(out, out.size(), libs[i].path + '\0');
  }
  return out;
}

const std::vector<Lib> kLibs = {
    {0x0003, "libc.so.6", "/lib32/libc.so.6"},
    {0x0303, "libcap.so.2", "/lib/x86_64-linux-gnu/libcap.so.2"},
    {0x0303, "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"},
    {0x0303, "libssl3.so", "/lib/x86_64-linux-gnu/libssl3.so"},
    {0x0303, "libssl.so", "/lib/x86_64-linux-gnu/libssl.so"},
    {0x0303, "libssl.so.3", "/lib/x86_64-linux-gnu/libssl.so.3"},
    {0x0303, "libz.so.1", "/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libz.so.1",
     (1ull << 62) | 1},
    {0x0303, "libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"},
    {0x0003, "libonly32.so.1", "/lib32/libonly32.so.1"},
};

std::vector<std::pair<std::string, std::string>> pairs(const std::vector<LdCacheEntry>& es) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : es) out.emplace_back(e.soname, e.path);
  return out;
}

std::vector<std::pair<std::string, std::string>> pairs(const std::vector<Lib>& libs) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& l : libs) out.emplace_back(l.soname, l.path);
  return out;
}

}  // namespace

TEST(library_names, short_names) {
  EXPECT_TRUE(is_library_short_name("c"));
  EXPECT_TRUE(is_library_short_name("libssl"));
  EXPECT_TRUE(is_library_short_name("libssl.so.3"));
  EXPECT_FALSE(is_library_short_name(""));
  EXPECT_FALSE(is_library_short_name("/lib/libc.so.6"));
  EXPECT_FALSE(is_library_short_name("./libfoo.so"));
  EXPECT_FALSE(is_library_short_name(".."));
}

TEST(library_names, matches_short_names) {
  EXPECT_TRUE(library_name_matches("c", "/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_TRUE(library_name_matches("c", "libc.so.6"));
  EXPECT_TRUE(library_name_matches("c", "/lib/libc-2.31.so"));
  EXPECT_TRUE(library_name_matches("libc", "libc.so.6"));
  EXPECT_FALSE(library_name_matches("c", "libcap.so.2"));
  EXPECT_FALSE(library_name_matches("cap", "libc.so.6"));
  EXPECT_FALSE(library_name_matches("c", "libc++.so.1"));
  EXPECT_TRUE(library_name_matches("ssl", "libssl.so.3"));
  EXPECT_TRUE(library_name_matches("libssl", "/usr/lib/libssl.so.3"));
  EXPECT_TRUE(library_name_matches("libssl.so.3", "libssl.so.3"));
  EXPECT_TRUE(library_name_matches("libssl.so", "libssl.so.3"));
  EXPECT_FALSE(library_name_matches("libssl.so.3", "libssl.so.30"));
  EXPECT_FALSE(library_name_matches("ssl", "libssl3.so"));
  EXPECT_TRUE(library_name_matches("ssl3", "libssl3.so"));
  EXPECT_TRUE(library_name_matches("stdc++", "libstdc++.so.6"));
  EXPECT_TRUE(library_name_matches("python3.11", "libpython3.11.so.1.0"));
  EXPECT_TRUE(library_name_matches("ld-linux-x86-64", "/lib64/ld-linux-x86-64.so.2"));
  // A name with a dot in its stem is not a shared object.
  EXPECT_FALSE(library_name_matches("python3", "/usr/bin/python3.11"));
  EXPECT_FALSE(library_name_matches("", "libc.so.6"));
  EXPECT_FALSE(library_name_matches("/lib/libc.so.6", "/lib/libc.so.6"));
}

TEST(library_cache, parses_new_format) {
  auto es = parse_ld_so_cache(new_cache(kLibs));
  ASSERT_TRUE(es) << es.error().message;
  EXPECT_EQ(pairs(*es), pairs(kLibs));
  EXPECT_EQ((*es)[0].flags, 0x0003u);
  EXPECT_EQ((*es)[2].flags, 0x0303u);
  EXPECT_EQ((*es)[6].hwcap, (1ull << 62) | 1);
}

TEST(library_cache, parses_new_format_after_old_header) {
  // An odd number of old entries leaves the new header 4 bytes of padding further on.
  for (size_t n : {kLibs.size(), kLibs.size() - 1}) {
    std::vector<Lib> libs(kLibs.begin(), kLibs.begin() + static_cast<ptrdiff_t>(n));
    auto es = parse_ld_so_cache(old_and_new_cache(libs));
    ASSERT_TRUE(es) << es.error().message;
    EXPECT_EQ(pairs(*es), pairs(libs));
  }
}

TEST(library_cache, parses_old_format_alone) {
  auto es = parse_ld_so_cache(old_cache(kLibs));
  ASSERT_TRUE(es) << es.error().message;
  EXPECT_EQ(pairs(*es), pairs(kLibs));
  EXPECT_EQ((*es)[2].flags, 0x0303u);
}

TEST(library_cache, empty_cache_is_valid) {
  auto es = parse_ld_so_cache(new_cache({}));
  ASSERT_TRUE(es) << es.error().message;
  EXPECT_TRUE(es->empty());
}

TEST(library_cache, rejects_truncated_caches) {
  for (const auto& full : {new_cache(kLibs), old_and_new_cache(kLibs), old_cache(kLibs)}) {
    // Every proper prefix cuts a header, an entry or a string: none may parse, none may crash.
    for (size_t len = 0; len < full.size(); ++len) {
      auto es = parse_ld_so_cache(std::span(full.data(), len));
      EXPECT_FALSE(es) << "prefix of " << len << " bytes parsed";
    }
  }
  auto es = parse_ld_so_cache(std::span(new_cache(kLibs).data(), 48 + 24));
  ASSERT_FALSE(es);
  EXPECT_NE(es.error().message.find("truncated"), std::string::npos) << es.error().message;
}

TEST(library_cache, rejects_string_offsets_out_of_range) {
  auto bytes = new_cache(kLibs);
  put<uint32_t>(bytes, 48 + 24 * 3 + 8, static_cast<uint32_t>(bytes.size()));
  auto es = parse_ld_so_cache(bytes);
  ASSERT_FALSE(es);
  EXPECT_NE(es.error().message.find("entry 3"), std::string::npos) << es.error().message;

  bytes = new_cache(kLibs);
  put<uint32_t>(bytes, 48 + 4, 0xffffffffu);
  EXPECT_FALSE(parse_ld_so_cache(bytes));

  // A string running into the end of the file without its NUL.
  bytes = new_cache(kLibs);
  bytes.pop_back();
  EXPECT_FALSE(parse_ld_so_cache(bytes));
}

TEST(library_cache, rejects_bad_headers) {
  EXPECT_FALSE(parse_ld_so_cache({}));
  std::vector<uint8_t> junk(100, 'x');
  auto es = parse_ld_so_cache(junk);
  ASSERT_FALSE(es);
  EXPECT_NE(es.error().message.find("magic"), std::string::npos);
  // Entry count far beyond the file, in both layouts.
  auto bytes = new_cache(kLibs);
  put<uint32_t>(bytes, 20, 0xffffffffu);
  EXPECT_FALSE(parse_ld_so_cache(bytes));
  bytes = old_cache(kLibs);
  put<uint32_t>(bytes, 12, 0xffffffffu);
  EXPECT_FALSE(parse_ld_so_cache(bytes));
  EXPECT_FALSE(parse_ld_so_cache(new_cache(kLibs, /*endian=*/3)));
  EXPECT_FALSE(parse_ld_so_cache(new_cache(kLibs, /*endian=*/1)));
  EXPECT_TRUE(parse_ld_so_cache(new_cache(kLibs, /*endian=*/0)));
}

TEST(library_cache, agrees_with_ldconfig) {
  if (!std::filesystem::exists("/etc/ld.so.cache")) GTEST_SKIP() << "no /etc/ld.so.cache";
  const char* ldconfig = access("/sbin/ldconfig", X_OK) == 0 ? "/sbin/ldconfig" : "ldconfig";
  std::string cmd = std::string(ldconfig) + " -p 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  // Lines look like "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6".
  std::multiset<std::pair<std::string, std::string>> expected;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    std::string_view s(line);
    if (s.empty() || s[0] != '\t') continue;
    s.remove_prefix(1);
    if (s.ends_with('\n')) s.remove_suffix(1);
    size_t paren = s.find(" (");
    size_t arrow = s.find(" => ");
    if (paren == std::string_view::npos || arrow == std::string_view::npos) continue;
    expected.emplace(std::string(s.substr(0, paren)), std::string(s.substr(arrow + 4)));
  }
  if (pclose(f) != 0 || expected.empty()) GTEST_SKIP() << "ldconfig -p is not usable here";

  auto es = read_ld_so_cache();
  ASSERT_TRUE(es) << es.error().message;
  std::multiset<std::pair<std::string, std::string>> got;
  for (const auto& e : *es) got.emplace(e.soname, e.path);
  EXPECT_EQ(got, expected);

  // And the short name resolves to a libc that exists.
  auto libc = resolve_library("c", *es);
  ASSERT_TRUE(libc) << libc.error().message;
  EXPECT_TRUE(library_name_matches("c", *libc)) << *libc;
  EXPECT_TRUE(std::filesystem::exists(*libc)) << *libc;
}

TEST(library_cache, read_errors_name_the_file) {
  auto es = read_ld_so_cache("/nonexistent/ld.so.cache");
  ASSERT_FALSE(es);
  EXPECT_NE(es.error().message.find("/nonexistent/ld.so.cache"), std::string::npos);
}

#if defined(__x86_64__)
TEST(resolve_library, prefers_native_exact_and_versioned_entries) {
  auto es = parse_ld_so_cache(new_cache(kLibs));
  ASSERT_TRUE(es);
  EXPECT_EQ(resolve_library("c", *es), "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(resolve_library("libc.so.6", *es), "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(resolve_library("cap", *es), "/lib/x86_64-linux-gnu/libcap.so.2");
  EXPECT_EQ(resolve_library("ssl", *es), "/lib/x86_64-linux-gnu/libssl.so.3");
  EXPECT_EQ(resolve_library("libssl.so", *es), "/lib/x86_64-linux-gnu/libssl.so");
  EXPECT_EQ(resolve_library("ssl3", *es), "/lib/x86_64-linux-gnu/libssl3.so");
  EXPECT_EQ(resolve_library("z", *es), "/lib/x86_64-linux-gnu/libz.so.1");
}

TEST(resolve_library, unknown_name_suggests_close_ones) {
  auto es = parse_ld_so_cache(new_cache(kLibs));
  ASSERT_TRUE(es);
  auto r = resolve_library("sssl", *es);
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.starts_with("no library 'sssl' in ld.so.cache; closest: "))
      << r.error().message;
  EXPECT_NE(r.error().message.find("libssl.so.3"), std::string::npos) << r.error().message;

  r = resolve_library("only32", *es);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/lib32/libonly32.so.1"), std::string::npos)
      << r.error().message;

  r = resolve_library("qqqqqqqqqqqq", *es);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.find("closest"), std::string::npos) << r.error().message;
  EXPECT_FALSE(resolve_library("/lib/libc.so.6", *es));
}
#endif

TEST(resolve_library, finds_libc_in_own_process) {
  auto p = Process::open(getpid());
  ASSERT_TRUE(p) << p.error().message;
  auto libc = resolve_library("c", *p);
  ASSERT_TRUE(libc) << libc.error().message;
  EXPECT_TRUE(library_name_matches("c", (*libc)->path)) << (*libc)->path;
  EXPECT_FALSE(library_name_matches("cap", (*libc)->path)) << (*libc)->path;
  // The address of a libc function is inside the object found.
  EXPECT_EQ(p->object_containing(reinterpret_cast<uint64_t>(&::getpid)), *libc);
  auto same = resolve_library("libc", *p);
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, *libc);
}

TEST(resolve_library, process_error_lists_mapped_libraries) {
  auto p = Process::from_maps(123,
                              "00400000-00401000 r-xp 00000000 08:01 1 /usr/bin/app\n"
                              "7f0000000000-7f0000001000 r-xp 00000000 08:01 2 /lib/libc.so.6\n"
                              "7f0000100000-7f0000101000 r-xp 00000000 08:01 3 /lib/libm.so.6\n",
                              "/nonexistent-proc");
  ASSERT_TRUE(p);
  auto r = resolve_library("foo", *p);
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.starts_with("process 123 maps no library 'foo'; mapped: "))
      << r.error().message;
  EXPECT_NE(r.error().message.find("libc.so.6"), std::string::npos) << r.error().message;
  auto m = resolve_library("m", *p);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)->path, "/lib/libm.so.6");
  auto typo = resolve_library("mm", *p);
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("libm.so.6"), std::string::npos) << typo.error().message;
}

namespace uscope {
namespace {

TEST(target, bare_name_that_is_no_library_is_found_in_path) {
  // bcc's order: a library first ("c" is libc), then an executable in PATH ("bash").
  auto libc = resolve_object("c", nullptr);
  ASSERT_TRUE(libc) << libc.error().message;
  EXPECT_NE(libc->open_path.find("libc.so"), std::string::npos) << libc->open_path;
  auto bash = resolve_object("bash", nullptr);
  ASSERT_TRUE(bash) << bash.error().message;
  EXPECT_EQ(bash->open_path, *find_in_path("bash", std::getenv("PATH")));
  EXPECT_TRUE(bash->open_path.ends_with("/bash")) << bash->open_path;

  auto none = resolve_object("nosuchprog_xyz", nullptr);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no library 'nosuchprog_xyz' in ld.so.cache"),
            std::string::npos)
      << none.error().message;
  EXPECT_NE(none.error().message.find("no executable 'nosuchprog_xyz' in PATH ("),
            std::string::npos)
      << none.error().message;
}

// A process maps a library later (dlopen): a file that exists, by path or through ld.so.cache, is
// a target whose probes wait for the mapping; a path that names no file is still refused.
TEST(target, file_the_process_does_not_map_yet_is_a_target_marked_not_mapped) {
  auto p = Process::from_maps(123,
                              "00400000-00401000 r-xp 00000000 08:01 1 /usr/bin/app\n"
                              "7f0000000000-7f0000001000 r-xp 00000000 08:01 2 /lib/libc.so.6\n",
                              "/nonexistent-proc");
  ASSERT_TRUE(p);
  auto mapped = resolve_object("c", &*p);
  ASSERT_TRUE(mapped) << mapped.error().message;
  EXPECT_FALSE(mapped->not_mapped);

  auto cache = read_ld_so_cache();
  ASSERT_TRUE(cache) << cache.error().message;
  auto libz = resolve_library("z", *cache);
  ASSERT_TRUE(libz) << libz.error().message;  // zlib1g is in every Debian
  auto later = resolve_object("z", &*p);
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_TRUE(later->not_mapped);
  EXPECT_EQ(later->display_path, *libz);
  // Opened through the process's root (/proc/PID/root) when it has one: a container's file.
  EXPECT_TRUE(later->open_path.ends_with(*libz)) << later->open_path;

  auto by_path = resolve_object(*libz, &*p);
  ASSERT_TRUE(by_path) << by_path.error().message;
  EXPECT_TRUE(by_path->not_mapped);
  EXPECT_EQ(by_path->display_path, *libz);

  // A real process: its root is /proc/PID/root. (This test never maps the USDT fixture library.)
  const std::string lib = std::string(USCOPE_FIXTURE_DIR) + "/usdt/libusdt_lib.so";
  auto self = Process::open(getpid());
  ASSERT_TRUE(self) << self.error().message;
  auto rooted = resolve_object(lib, &*self);
  ASSERT_TRUE(rooted) << rooted.error().message;
  EXPECT_TRUE(rooted->not_mapped);
  EXPECT_EQ(rooted->display_path, lib);
  EXPECT_EQ(rooted->open_path, "/proc/" + std::to_string(getpid()) + "/root" + lib);

  auto none = resolve_object("/nonexistent/libx.so", &*p);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find(
                "process 123 does not map /nonexistent/libx.so, and no such file exists"),
            std::string::npos)
      << none.error().message;
  auto dir = resolve_object("/usr/lib", &*p);
  ASSERT_FALSE(dir);

  auto nothing = resolve_object("nosuchlib_xyz", &*p);
  ASSERT_FALSE(nothing);
  EXPECT_NE(nothing.error().message.find("nor is there a library 'nosuchlib_xyz' in ld.so.cache"),
            std::string::npos)
      << nothing.error().message;
}

TEST(target, find_in_path_takes_the_first_executable_file) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("uscope-path-" + std::to_string(getpid()));
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  fs::create_directories(dir / "c" / "prog");  // a directory is not a program
  auto touch = [](const fs::path& p, fs::perms mode) {
    std::FILE* f = std::fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
    fs::permissions(p, mode);
  };
  touch(dir / "a" / "prog", fs::perms::owner_read);  // not executable
  touch(dir / "b" / "prog", fs::perms::owner_all);
  std::string path = (dir / "c").string() + ":" + (dir / "a").string() + ":" + (dir / "b").string();
  EXPECT_EQ(find_in_path("prog", path), (dir / "b" / "prog").string());
  EXPECT_EQ(find_in_path("nothing", path), std::nullopt);
  EXPECT_EQ(find_in_path("b/prog", dir.string()), std::nullopt);  // a path is not looked up
  EXPECT_EQ(find_in_path("", path), std::nullopt);
  fs::remove_all(dir);
}

// What ld.so maps to start a program, against ldd (ld.so itself, listing every object it loads):
// this test's own program, which links elfutils and libstdc++ and through them libz, liblzma.
TEST(library_names, startup_files_are_what_ldd_lists) {
  namespace fs = std::filesystem;
  std::string program = fs::canonical("/proc/self/exe").string();
  std::set<std::string> from_ldd;
  std::FILE* ldd = popen(("ldd " + program).c_str(), "r");
  ASSERT_NE(ldd, nullptr);
  char line[4096];
  while (std::fgets(line, sizeof line, ldd)) {
    std::string l(line);
    auto arrow = l.find("=> ");
    auto start = arrow != std::string::npos ? arrow + 3 : l.find('/');
    if (start == std::string::npos || l[start] != '/') continue;  // linux-vdso.so.1: no file
    from_ldd.insert(fs::canonical(l.substr(start, l.find(" (", start) - start)).string());
  }
  ASSERT_EQ(pclose(ldd), 0);
  ASSERT_GE(from_ldd.size(), 5u);  // libdw, libelf, libstdc++, libc, ld.so at least

  auto files = startup_files(program);
  ASSERT_GE(files.size(), 2u);
  EXPECT_EQ(files[0], program);
  EXPECT_EQ(fs::canonical(files[1]), fs::canonical("/lib64/ld-linux-x86-64.so.2"));
  std::set<std::string> ours;
  for (size_t i = 1; i < files.size(); ++i) ours.insert(fs::canonical(files[i]).string());
  EXPECT_EQ(ours, from_ldd);
  EXPECT_EQ(ours.size(), files.size() - 1) << "a file listed twice";

  EXPECT_EQ(startup_files("/nonexistent/prog"), std::vector<std::string>{"/nonexistent/prog"});
}

}  // namespace
}  // namespace uscope
