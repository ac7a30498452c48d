// Keyed aggregations as a person and a program read them: bpftrace-like maps (sorted, aligned,
// bars, the top N and how many keys are left out), bucket labels, JSON Lines.
#include "sink/map_output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "mem_file.h"

namespace uscope {
namespace {

using test::MemFile;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

MapKeyPart str(std::string s) {
  MapKeyPart p;
  p.is_string = true;
  p.text = std::move(s);
  return p;
}
MapKeyPart num(int64_t n) {
  MapKeyPart p;
  p.number = n;
  return p;
}

MapTable count_table() {
  MapTable t;
  t.kind = "count";
  t.key_names = {"comm", "arg1"};
  t.rows.push_back({{str("worker-a"), num(10)}, {}, false, 5, 0, {}});
  t.rows.push_back({{str("worker-b"), num(-1)}, {}, false, 70, 0, {}});
  t.rows.push_back({{str("w"), num(3)}, {}, false, 12, 0, {}});
  t.rows.push_back({{str("idle"), num(0)}, {}, false, 0, 0, {}});
  return t;
}

TEST(map_output, counts_sorted_largest_last_and_aligned) {
  MemFile f;
  print_map(count_table(), OutputFormat::Text, f.get());
  auto lines = lines_of(f.str());
  ASSERT_EQ(lines.size(), 4u) << f.str();
  EXPECT_EQ(lines[0], "@[comm, arg1]  3 keys");
  EXPECT_EQ(lines[1], "@[worker-a, 10]:          5");
  EXPECT_EQ(lines[2], "@[w, 3]:                 12");
  EXPECT_EQ(lines[3], "@[worker-b, -1]:         70");
}

TEST(map_output, top_n_says_how_many_keys_are_left_out) {
  MapTable t = count_table();
  t.top = 2;
  MemFile f;
  print_map(t, OutputFormat::Text, f.get());
  auto lines = lines_of(f.str());
  ASSERT_EQ(lines.size(), 4u) << f.str();
  EXPECT_EQ(lines[0], "@[comm, arg1]  top 2 of 3 keys by count");
  EXPECT_NE(lines[1].find("@[w, 3]:"), std::string::npos);
  EXPECT_EQ(lines[3], "(1 more key; --all)");
}

TEST(map_output, full_map_is_reported_never_silent) {
  MapTable t = count_table();
  t.not_counted = 4;
  t.max_keys = 3;
  MemFile f;
  print_map(t, OutputFormat::Text, f.get());
  EXPECT_NE(f.str().find("(4 hits not counted: the map of 3 keys was full"), std::string::npos);
  MemFile j;
  print_map(t, OutputFormat::Json, j.get());
  auto lines = lines_of(j.str());
  auto last = nlohmann::json::parse(lines.back());
  EXPECT_EQ(last["kind"], "keys");
  EXPECT_EQ(last["not_counted_map_full"], 4);
}

TEST(map_output, counts_json_one_object_per_key) {
  MapTable t = count_table();
  t.interval = 2;
  MemFile f;
  print_map(t, OutputFormat::Json, f.get());
  auto lines = lines_of(f.str());
  ASSERT_EQ(lines.size(), 4u);
  auto j = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(j["kind"], "count");
  EXPECT_EQ(j["key"]["comm"], "worker-b");
  EXPECT_EQ(j["key"]["arg1"], -1);
  EXPECT_EQ(j["count"], 70);
  EXPECT_EQ(j["interval"], 2);
  auto s = nlohmann::json::parse(lines[3]);
  EXPECT_EQ(s["keys"], 3);
  EXPECT_EQ(s["shown"], 3);
}

TEST(map_output, log2_labels_follow_bpftrace) {
  MapScale s;
  s.mode = TRACE_AGG_LOG2;
  EXPECT_EQ(bucket_label(s, 0), "(..., 0)");
  EXPECT_EQ(bucket_label(s, 1), "[0]");
  EXPECT_EQ(bucket_label(s, 2), "[1]");
  EXPECT_EQ(bucket_label(s, 3), "[2, 4)");
  EXPECT_EQ(bucket_label(s, 12), "[1K, 2K)");
  EXPECT_EQ(bucket_label(s, 22), "[1M, 2M)");
  EXPECT_EQ(bucket_label(s, 64), "[4E, ...)");
}

TEST(map_output, linear_labels_have_open_ends) {
  MapScale s{TRACE_AGG_LINEAR, 0, 100, 10, 10};
  EXPECT_EQ(bucket_label(s, 0), "(..., 0)");
  EXPECT_EQ(bucket_label(s, 1), "[0, 10)");
  EXPECT_EQ(bucket_label(s, 10), "[90, 100)");
  EXPECT_EQ(bucket_label(s, 11), "[100, ...)");
}

TEST(map_output, histogram_bars_scale_to_the_peak_between_first_and_last_bucket) {
  MapTable t;
  t.kind = "hist";
  t.key_names = {"comm"};
  t.scale.mode = TRACE_AGG_LOG2;
  MapRow r{{str("app")}, {}, false, 6, 0, std::vector<uint64_t>(TRACE_AGG_BUCKETS, 0)};
  r.buckets[3] = 2;
  r.buckets[5] = 4;
  t.rows.push_back(r);
  MemFile f;
  print_map(t, OutputFormat::Text, f.get());
  auto lines = lines_of(f.str());
  ASSERT_EQ(lines.size(), 6u) << f.str();
  EXPECT_EQ(lines[2], "@[app]: 6 values");
  EXPECT_EQ(lines[3], "[2, 4)         2 |" + std::string(26, '@') + std::string(26, ' ') + "|");
  EXPECT_EQ(lines[4], "[4, 8)         0 |" + std::string(52, ' ') + "|");
  EXPECT_EQ(lines[5], "[8, 16)        4 |" + std::string(52, '@') + "|");
  MemFile j;
  print_map(t, OutputFormat::Json, j.get());
  auto row = nlohmann::json::parse(lines_of(j.str())[0]);
  ASSERT_EQ(row["buckets"].size(), 2u);
  EXPECT_EQ(row["buckets"][0]["low"], 2);
  EXPECT_EQ(row["buckets"][0]["high"], 4);
  EXPECT_EQ(row["buckets"][0]["count"], 2);
}

TEST(map_output, ustack_frames_on_lines_of_their_own) {
  MapTable t;
  t.kind = "count";
  t.key_names = {"ustack", "comm"};
  t.rows.push_back({{str("app")}, {"leaf+0x4", "main+0x10"}, false, 3, 0, {}});
  t.rows.push_back({{str("app")}, {}, true, 1, 0, {}});
  MemFile f;
  print_map(t, OutputFormat::Text, f.get());
  std::string out = f.str();
  EXPECT_NE(out.find("@[\n        leaf+0x4\n        main+0x10\n, app]:"), std::string::npos) << out;
  EXPECT_NE(out.find("[stack unavailable]"), std::string::npos);
}

TEST(map_output, cut_and_unreadable_strings_are_marked) {
  MapTable t;
  t.kind = "count";
  t.key_names = {"str(arg1)"};
  MapKeyPart cut = str("abc");
  cut.truncated = true;
  MapKeyPart bad = str("");
  bad.unreadable = true;
  t.rows.push_back({{cut}, {}, false, 1, 0, {}});
  t.rows.push_back({{bad}, {}, false, 2, 0, {}});
  MemFile f;
  print_map(t, OutputFormat::Text, f.get());
  EXPECT_NE(f.str().find("@[abc…]:"), std::string::npos);
  EXPECT_NE(f.str().find("@[<unreadable>]:"), std::string::npos);
}

}  // namespace
}  // namespace uscope
