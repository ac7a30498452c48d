// Unwind tables on disk: they read back as written, bad files are never trusted, the directory
// stays under its limit, and a cache that cannot be written costs nothing but the message.
#include "discover/unwind_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "discover/object_unwind_table.h"
#include "temp_dir.h"

namespace uscope {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

UnwindRule rsp(int32_t off) {
  return UnwindRule{.cfa = UNWIND_CFA_RSP, .cfa_offset = off};
}

UnwindTable sample_table(size_t functions = 3) {
  UnwindTable t;
  uint64_t at = 0x1000;
  for (size_t i = 0; i < functions; ++i) {
    t.rows.push_back({at, rsp(8)});
    t.rows.push_back({at + 1, UnwindRule{.cfa = UNWIND_CFA_RBP,
                                         .rbp = UNWIND_RBP_AT_CFA,
                                         .cfa_offset = 16,
                                         .rbp_offset = -16}});
    t.rows.push_back({at + 0x20, UnwindRule{}});
    at += 0x40;
  }
  t.rows.push_back({at, UnwindRule{.cfa = UNWIND_CFA_SIGNAL,
                                   .rbp = UNWIND_RBP_AT_CFA,
                                   .ra_offset = 168,
                                   .cfa_offset = 160,
                                   .rbp_offset = 120}});
  t.rows.push_back({at + 9, UnwindRule{}});
  t.source = ".eh_frame";
  t.fdes = functions + 1;
  t.signal_frames = 1;
  return t;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

void expect_same(const UnwindTable& a, const UnwindTable& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.fdes, b.fdes);
  EXPECT_EQ(a.unsupported, b.unsupported);
  EXPECT_EQ(a.signal_frames, b.signal_frames);
}

TEST(unwind_cache, a_table_reads_back_as_written) {
  auto t = sample_table();
  auto back = parse_unwind_table(serialize_unwind_table(t, "build-id:ab"), "build-id:ab");
  ASSERT_TRUE(back) << back.error().message;
  expect_same(*back, t);
  auto empty = parse_unwind_table(serialize_unwind_table(UnwindTable{}));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->rows.empty());
}

TEST(unwind_cache, truncated_or_altered_files_are_rejected) {
  const auto bytes = serialize_unwind_table(sample_table(), "build-id:ab");
  for (size_t n = 0; n < bytes.size(); n += 7)
    EXPECT_FALSE(parse_unwind_table(std::span(bytes.data(), n))) << n << " bytes";
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto flipped = bytes;
    flipped[i] ^= 0x20;
    EXPECT_FALSE(parse_unwind_table(flipped, "build-id:ab")) << "byte " << i;
  }
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(parse_unwind_table(longer));
  auto other = parse_unwind_table(bytes, "build-id:cd");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("build-id:ab"), std::string::npos) << other.error().message;
}

TEST(unwind_cache, rows_that_break_the_table_invariants_are_rejected) {
  auto unsorted = sample_table();
  std::swap(unsorted.rows[0], unsorted.rows[1]);
  EXPECT_FALSE(parse_unwind_table(serialize_unwind_table(unsorted)));
  auto bad_kind = sample_table();
  // 7: no kind, yet a value the enum can hold (0..6 take 3 bits), so that making it is defined.
  bad_kind.rows[0].rule.cfa = static_cast<unwind_cfa_kind>(UNWIND_CFA_UNSUPPORTED + 1);
  EXPECT_FALSE(parse_unwind_table(serialize_unwind_table(bad_kind)));
  auto open_end = sample_table();
  open_end.rows.pop_back();
  EXPECT_FALSE(parse_unwind_table(serialize_unwind_table(open_end)));
}

TEST(unwind_cache, stores_and_loads_by_key) {
  TempDir dir;
  UnwindCache cache(dir.str() + "/unwind");
  EXPECT_FALSE(cache.load("build-id:ab"));
  auto t = sample_table();
  ASSERT_TRUE(cache.store("build-id:ab", t));
  auto back = cache.load("build-id:ab");
  ASSERT_TRUE(back);
  expect_same(*back, t);
  EXPECT_FALSE(cache.load("build-id:cd"));
  // Nothing but the table is left behind: the temporary file was renamed.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(cache.dir())) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".unw") << e.path();
  }
  EXPECT_EQ(files, 1u);
}

TEST(unwind_cache, a_corrupt_file_is_ignored_then_replaced) {
  TempDir dir;
  UnwindCache cache(dir.str());
  auto t = sample_table();
  ASSERT_TRUE(cache.store("file:1:2:3", t));
  auto bytes = read_file(cache.path_of("file:1:2:3"));
  bytes.resize(bytes.size() / 2);
  write_file(cache.path_of("file:1:2:3"), bytes);
  EXPECT_FALSE(cache.load("file:1:2:3"));
  // Another key's file copied under this key's name is foreign.
  ASSERT_TRUE(cache.store("build-id:ef", t));
  fs::copy_file(cache.path_of("build-id:ef"), cache.path_of("file:1:2:3"),
                fs::copy_options::overwrite_existing);
  EXPECT_FALSE(cache.load("file:1:2:3"));
  ASSERT_TRUE(cache.store("file:1:2:3", t));
  EXPECT_TRUE(cache.load("file:1:2:3"));
}

void set_mtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(unwind_cache, the_least_recently_used_tables_go_beyond_the_limit) {
  TempDir dir;
  const auto t = sample_table(20);
  const uint64_t size = serialize_unwind_table(t, "build-id:01").size();
  UnwindCache cache(dir.str(), 3 * size + size / 2);  // room for three
  for (const char* k : {"build-id:01", "build-id:02", "build-id:03"})
    ASSERT_TRUE(cache.store(k, t));
  set_mtime(cache.path_of("build-id:01"), 1000);
  set_mtime(cache.path_of("build-id:02"), 2000);
  set_mtime(cache.path_of("build-id:03"), 3000);
  // Using 01 makes it the most recent: 02 is the oldest when 04 arrives.
  ASSERT_TRUE(cache.load("build-id:01"));
  ASSERT_TRUE(cache.store("build-id:04", t));
  EXPECT_TRUE(fs::exists(cache.path_of("build-id:01")));
  EXPECT_FALSE(fs::exists(cache.path_of("build-id:02")));
  EXPECT_TRUE(fs::exists(cache.path_of("build-id:03")));
  EXPECT_TRUE(fs::exists(cache.path_of("build-id:04")));
}

TEST(unwind_cache, an_unwritable_directory_fails_the_store_only) {
  TempDir dir;
  write_file(dir.str() + "/not-a-dir", {1});
  UnwindCache cache(dir.str() + "/not-a-dir/unwind");  // even root cannot create this one
  auto stored = cache.store("build-id:ab", sample_table());
  ASSERT_FALSE(stored);
  EXPECT_NE(stored.error().message.find("not-a-dir"), std::string::npos) << stored.error().message;
  EXPECT_FALSE(cache.load("build-id:ab"));
}

TEST(unwind_cache, uscope_cache_dir_overrides_the_default_directory) {
  const char* old = std::getenv("USCOPE_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("USCOPE_CACHE_DIR", "/somewhere/else", 1);
  EXPECT_EQ(UnwindCache::default_dir(), "/somewhere/else");
  unsetenv("USCOPE_CACHE_DIR");
  EXPECT_TRUE(UnwindCache::default_dir().ends_with("/uscope/unwind"));
  EXPECT_EQ(UnwindCache::open_default().max_bytes(), 256ull << 20);
  if (old) setenv("USCOPE_CACHE_DIR", saved.c_str(), 1);
}

TEST(unwind_cache, an_objects_table_is_built_once_then_loaded) {
  TempDir dir;
  UnwindCache cache(dir.str());
  ObjectStore store;
  auto object = store.open(std::string(USCOPE_FIXTURE_DIR) + "/unwind/cfi_shapes_o2");
  ASSERT_TRUE(object) << object.error().message;
  auto built = unwind_table_of(**object, &cache);
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_FALSE(built->from_cache);
  EXPECT_FALSE(built->cache_error);
  ASSERT_FALSE(built->table->rows.empty());
  auto loaded = unwind_table_of(**object, &cache);
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(loaded->from_cache);
  expect_same(*loaded->table, *built->table);

  write_file(dir.str() + "/file", {1});
  UnwindCache broken(dir.str() + "/file/unwind");
  auto uncached = unwind_table_of(**object, &broken);
  ASSERT_TRUE(uncached);
  EXPECT_TRUE(uncached->cache_error);
  EXPECT_EQ(uncached->table->rows, built->table->rows);
}

}  // namespace
}  // namespace uscope
