// Perf maps (/tmp/perf-PID.map): parsing untrusted text, overlapping JIT code, and reading the
// file the way the process names it.
#include "symbolize/perf_map.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace uscope {
namespace {

std::string name_at(const PerfMap& map, uint64_t address) {
  const auto* s = map.find(address);
  return s ? s->name : "";
}

TEST(perf_map, parses_node_and_java_lines) {
  auto map = PerfMap::parse(
      "3a0b6c84040 1f LazyCompile:~foo /app/server.js:12:15\n"
      "0x00007f6c3d01c120 0x00000000000001E8 void java.lang.Object.<init>()\n");
  ASSERT_EQ(map.size(), 2u);
  EXPECT_EQ(map.malformed_lines(), 0u);
  const auto* s = map.find(0x3a0b6c84040);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->start, 0x3a0b6c84040u);
  EXPECT_EQ(s->size, 0x1fu);
  EXPECT_EQ(s->name, "LazyCompile:~foo /app/server.js:12:15");
  EXPECT_EQ(name_at(map, 0x3a0b6c8405e), "LazyCompile:~foo /app/server.js:12:15");
  EXPECT_EQ(name_at(map, 0x3a0b6c8405f), "");  // one past the end
  EXPECT_EQ(name_at(map, 0x3a0b6c8403f), "");
  EXPECT_EQ(name_at(map, 0x7f6c3d01c307), "void java.lang.Object.<init>()");
}

TEST(perf_map, tolerates_tabs_runs_of_blanks_and_crlf) {
  auto map = PerfMap::parse("\t 2000\t20 \t spaced  name  \r\n1000 10 ok\r\n");
  EXPECT_EQ(map.malformed_lines(), 0u);
  EXPECT_EQ(name_at(map, 0x2010), "spaced  name");
  EXPECT_EQ(name_at(map, 0x1000), "ok");
}

TEST(perf_map, malformed_lines_are_skipped_and_counted) {
  auto map = PerfMap::parse(
      "nothex 10 x\n"
      "1000 zz y\n"
      "1000 10\n"   // no name
      "1000 10 \n"  // a blank name is none
      "0x 10 n\n"   // 0x without digits
      "11112222333344445 1 seventeen_digits\n"
      "1000-10 dash\n"
      "ffffffffffffff00 101 past_the_top\n"
      "\n   \n"  // blank lines are not malformed, just empty
      "3000 10 good\n");
  EXPECT_EQ(map.malformed_lines(), 8u);
  ASSERT_EQ(map.size(), 1u);
  EXPECT_EQ(name_at(map, 0x3000), "good");
}

TEST(perf_map, a_range_must_end_below_the_top_of_the_address_space) {
  // No user-space code lives there; an end that wraps to 0 is a corrupt line.
  auto map = PerfMap::parse("ffffffffffffff00 ff top\nffffffffffffff00 100 wraps\n");
  EXPECT_EQ(map.malformed_lines(), 1u);
  EXPECT_EQ(name_at(map, 0xfffffffffffffffeull), "top");
}

TEST(perf_map, zero_size_entries_name_nothing) {
  auto map = PerfMap::parse("1000 0 empty\n");
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.malformed_lines(), 0u);
  EXPECT_EQ(map.find(0x1000), nullptr);
}

TEST(perf_map, later_lines_win_where_code_ranges_overlap) {
  auto map = PerfMap::parse(
      "1000 100 old\n"
      "1040 40 middle\n"    // splits old in two
      "1000 10 head\n"      // cuts old's front
      "10f0 20 over_end\n"  // cuts old's tail and reaches past it
      "2000 10 a\n2010 10 b\n2000 20 both_replaced\n");
  EXPECT_EQ(name_at(map, 0x1000), "head");
  EXPECT_EQ(name_at(map, 0x1010), "old");
  EXPECT_EQ(name_at(map, 0x103f), "old");
  EXPECT_EQ(name_at(map, 0x1040), "middle");
  EXPECT_EQ(name_at(map, 0x107f), "middle");
  EXPECT_EQ(name_at(map, 0x1080), "old");
  EXPECT_EQ(name_at(map, 0x10ef), "old");
  EXPECT_EQ(name_at(map, 0x10f0), "over_end");
  EXPECT_EQ(name_at(map, 0x110f), "over_end");
  EXPECT_EQ(name_at(map, 0x1110), "");
  EXPECT_EQ(name_at(map, 0x2000), "both_replaced");
  EXPECT_EQ(name_at(map, 0x201f), "both_replaced");
  // head, old, middle, old, over_end, both_replaced: disjoint pieces.
  EXPECT_EQ(map.size(), 6u);
}

TEST(perf_map, unsorted_lines_are_found) {
  auto map = PerfMap::parse("5000 10 e\n1000 10 a\n3000 10 c\n");
  EXPECT_EQ(name_at(map, 0x1005), "a");
  EXPECT_EQ(name_at(map, 0x3005), "c");
  EXPECT_EQ(name_at(map, 0x5005), "e");
  EXPECT_EQ(name_at(map, 0x4000), "");
}

// The test process's own map, as a JIT in it would write it.
class OwnPerfMap : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_ = "/tmp/perf-" + std::to_string(getpid()) + ".map";
};

TEST_F(OwnPerfMap, reads_the_processs_own_map) {
  std::ofstream(path_) << "7f0000001000 80 jitted_function\n";
  auto map = PerfMap::read(getpid());
  ASSERT_TRUE(map.has_value()) << map.error().message;
  ASSERT_TRUE(map->has_value());
  EXPECT_EQ(name_at(**map, 0x7f0000001010), "jitted_function");
}

TEST_F(OwnPerfMap, a_process_without_a_map_has_none) {
  std::filesystem::remove(path_);
  auto map = PerfMap::read(getpid());
  ASSERT_TRUE(map.has_value()) << map.error().message;
  EXPECT_FALSE(map->has_value());
}

TEST_F(OwnPerfMap, a_fifo_in_its_place_is_refused_without_blocking) {
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  auto map = PerfMap::read(getpid());
  ASSERT_FALSE(map.has_value());
  EXPECT_NE(map.error().message.find("not a regular file"), std::string::npos)
      << map.error().message;
}

TEST_F(OwnPerfMap, a_map_planted_by_another_user_is_refused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the file away";
  std::ofstream(path_) << "1000 10 planted\n";
  ASSERT_EQ(chown(path_.c_str(), 4242, 4242), 0);
  auto map = PerfMap::read(getpid());
  ASSERT_FALSE(map.has_value());
  EXPECT_NE(map.error().message.find("owned by uid 4242"), std::string::npos)
      << map.error().message;
}

TEST(perf_map, reading_a_process_that_does_not_exist_fails) {
  auto map = PerfMap::read(0x7ffffff0);
  ASSERT_FALSE(map.has_value());
  EXPECT_NE(map.error().message.find("no such process"), std::string::npos) << map.error().message;
}

}  // namespace
}  // namespace uscope
