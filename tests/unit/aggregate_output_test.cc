// `count` tables and `latency` histograms: row filtering and order, exact percentile bucket bounds,
// the text layout and the JSON Lines fields.
#include "sink/aggregate_output.h"
#include "mem_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace uscope {
namespace {

using test::MemFile;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<uint64_t> buckets(std::initializer_list<std::pair<size_t, uint64_t>> set) {
  std::vector<uint64_t> b(64, 0);
  for (auto [i, n] : set) b[i] = n;
  return b;
}

TEST(aggregate_output, counts_drop_zero_rows_and_sort_ascending) {
  std::vector<CountRow> rows = {{"malloc", "/lib/libc.so.6", 5},
                                {"free", "/lib/libc.so.6", 0},
                                {"strlen", "/lib/libc.so.6", 2},
                                {"calloc", "/lib/libc.so.6", 5},
                                {"work", "/usr/bin/x", 1000000}};
  MemFile out;
  print_counts(rows, OutputFormat::Text, out.get());
  EXPECT_EQ(out.str(),
            "FUNC          COUNT  OBJECT\n"
            "strlen            2  /lib/libc.so.6\n"
            "malloc            5  /lib/libc.so.6\n"  // equal counts keep their order
            "calloc            5  /lib/libc.so.6\n"
            "work        1000000  /usr/bin/x\n");
}

TEST(aggregate_output, counts_column_widens_to_the_longest_name_up_to_60) {
  std::string longer(12, 'f');
  MemFile out;
  print_counts({{longer, "o", 1}, {"g", "o", 2}}, OutputFormat::Text, out.get());
  auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "FUNC" + std::string(8, ' ') + "        COUNT  OBJECT");
  EXPECT_EQ(lines[1], longer + "            1  o");
  EXPECT_EQ(lines[2], "g" + std::string(11, ' ') + "            2  o");

  std::string huge(80, 'h');
  MemFile out2;
  print_counts({{huge, "o", 1}, {"g", "o", 2}}, OutputFormat::Text, out2.get());
  auto l2 = lines_of(out2.str());
  ASSERT_EQ(l2.size(), 3u);
  EXPECT_EQ(l2[0], "FUNC" + std::string(56, ' ') + "        COUNT  OBJECT");
  EXPECT_EQ(l2[1], huge + "            1  o");  // not cut
  EXPECT_EQ(l2[2], "g" + std::string(59, ' ') + "            2  o");
}

TEST(aggregate_output, counts_with_no_hits_print_only_the_header) {
  MemFile out;
  print_counts({{"a", "o", 0}}, OutputFormat::Text, out.get());
  EXPECT_EQ(out.str(), "FUNC        COUNT  OBJECT\n");
  MemFile json;
  print_counts({{"a", "o", 0}}, OutputFormat::Json, json.get());
  EXPECT_EQ(json.str(), "");
}

TEST(aggregate_output, counts_json_rows) {
  MemFile out;
  print_counts({{"b", "/o2", 9}, {"a", "/o1", 0}, {"c\"q", "/o1", 3}}, OutputFormat::Json,
               out.get());
  auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 2u);
  auto first = nlohmann::json::parse(lines[0]);
  auto second = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(first, (nlohmann::json{
                       {"kind", "count"}, {"function", "c\"q"}, {"object", "/o1"}, {"count", 3}}));
  EXPECT_EQ(second, (nlohmann::json{
                        {"kind", "count"}, {"function", "b"}, {"object", "/o2"}, {"count", 9}}));
}

TEST(aggregate_output, percentile_of_empty_histogram_is_zero) {
  EXPECT_EQ(histogram_percentile(buckets({}), 0.5), 0u);
  EXPECT_EQ(histogram_percentile({}, 0.99), 0u);
}

TEST(aggregate_output, percentile_is_the_upper_bound_of_its_bucket) {
  // Bucket b holds [2^b, 2^(b+1)) ns: its upper bound is 2^(b+1) - 1.
  EXPECT_EQ(histogram_percentile(buckets({{0, 1}}), 0.5), 1u);
  EXPECT_EQ(histogram_percentile(buckets({{5, 1}}), 0.5), 63u);
  EXPECT_EQ(histogram_percentile(buckets({{3, 10}}), 0.5), 15u);
  EXPECT_EQ(histogram_percentile(buckets({{3, 10}}), 0.99), 15u);
  EXPECT_EQ(histogram_percentile(buckets({{20, 1}}), 0.99), (1ull << 21) - 1);
  EXPECT_EQ(histogram_percentile(buckets({{62, 1}}), 0.5), (1ull << 63) - 1);
  EXPECT_EQ(histogram_percentile(buckets({{63, 1}}), 0.5), UINT64_MAX);
}

TEST(aggregate_output, percentile_picks_the_bucket_holding_the_rank) {
  // 3 samples at 2^2, 1 at 2^10: p50 is in bucket 2, p99 in bucket 10.
  auto b = buckets({{2, 3}, {10, 1}});
  EXPECT_EQ(histogram_percentile(b, 0.5), 7u);
  EXPECT_EQ(histogram_percentile(b, 0.99), 2047u);
  // One sample in each of three buckets.
  auto c = buckets({{1, 1}, {4, 1}, {9, 1}});
  EXPECT_EQ(histogram_percentile(c, 0.0), 3u);
  EXPECT_EQ(histogram_percentile(c, 0.5), 31u);
  EXPECT_EQ(histogram_percentile(c, 0.99), 1023u);
  EXPECT_EQ(histogram_percentile(c, 1.0), 1023u);
  // 1000 samples: 989 fast, 11 slow; p99 (rank 991) is slow, p98 fast.
  auto d = buckets({{6, 989}, {16, 11}});
  EXPECT_EQ(histogram_percentile(d, 0.98), 127u);
  EXPECT_EQ(histogram_percentile(d, 0.99), (1ull << 17) - 1);
  // Works on a histogram shorter than 64 buckets too.
  std::vector<uint64_t> short_hist = {0, 2, 0, 1};
  EXPECT_EQ(histogram_percentile(short_hist, 0.5), 3u);
  EXPECT_EQ(histogram_percentile(short_hist, 1.0), 15u);
}

TEST(aggregate_output, latency_text_histogram_and_unmatched_lines) {
  LatencyRow row;
  row.function = "work";
  row.object = "/usr/bin/x";
  row.buckets = buckets({{3, 2}, {5, 4}});
  row.entries = 8;
  row.matched = 6;
  row.returns_without_entry = 1;
  MemFile out;
  print_latency(row, OutputFormat::Text, out.get());
  EXPECT_EQ(out.str(),
            "\n"
            "work (/usr/bin/x): 6 calls, p50 < 64 ns, p99 < 64 ns\n"
            "                   nsecs : count      distribution\n"
            "         8 -> 15         : 2          |********************                    |\n"
            "        16 -> 31         : 0          |                                        |\n"
            "        32 -> 63         : 4          |****************************************|\n"
            "  2 entries without a return: still running at exit, the thread exited, or "
            "recursion deeper than the kernel's 64 return probes\n"
            "  1 returns without a recorded entry (called before the probes were attached, or the "
            "entry table was full)\n");
}

TEST(aggregate_output, latency_text_bucket_zero_starts_at_zero) {
  LatencyRow row;
  row.function = "f";
  row.object = "o";
  row.buckets = buckets({{0, 1}, {1, 3}});
  row.entries = 4;
  row.matched = 4;
  MemFile out;
  print_latency(row, OutputFormat::Text, out.get());
  EXPECT_EQ(out.str(),
            "\n"
            "f (o): 4 calls, p50 < 4 ns, p99 < 4 ns\n"
            "                   nsecs : count      distribution\n"
            "         0 -> 1          : 1          |*************                           |\n"
            "         2 -> 3          : 3          |****************************************|\n");
}

TEST(aggregate_output, latency_text_without_calls) {
  LatencyRow row;
  row.function = "f";
  row.object = "o";
  row.buckets = buckets({});
  row.entries = 3;
  row.matched = 0;
  MemFile out;
  print_latency(row, OutputFormat::Text, out.get());
  EXPECT_EQ(out.str(),
            "\n"
            "f (o): 0 calls\n"
            "  3 entries without a return: still running at exit, the thread exited, or "
            "recursion deeper than the kernel's 64 return probes\n");
  // More matched returns than entries (counters read at different times): nothing unmatched.
  row.entries = 1;
  row.matched = 2;
  row.buckets = buckets({{4, 2}});
  MemFile out2;
  print_latency(row, OutputFormat::Text, out2.get());
  EXPECT_EQ(out2.str().find("without a return"), std::string::npos) << out2.str();
}

TEST(aggregate_output, latency_json_fields) {
  LatencyRow row;
  row.function = "work";
  row.object = "/usr/bin/x";
  row.buckets = buckets({{0, 1}, {3, 2}, {5, 4}});
  row.entries = 9;
  row.matched = 7;
  row.returns_without_entry = 1;
  MemFile out;
  print_latency(row, OutputFormat::Json, out.get());
  std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  auto j = nlohmann::json::parse(s);
  EXPECT_EQ(j, nlohmann::json::parse(R"({
    "kind": "latency", "function": "work", "object": "/usr/bin/x",
    "calls": 7, "entries": 9, "entries_without_return": 2, "returns_without_entry": 1,
    "entries_repeated": 0, "entries_not_recorded": 0, "p50_ns_upper": 63, "p99_ns_upper": 63,
    "buckets": [{"low_ns": 0, "high_ns": 1, "count": 1},
                {"low_ns": 8, "high_ns": 15, "count": 2},
                {"low_ns": 32, "high_ns": 63, "count": 4}]})"));
}

TEST(aggregate_output, latency_json_without_calls) {
  LatencyRow row;
  row.function = "f";
  row.object = "o";
  row.buckets = buckets({});
  MemFile out;
  print_latency(row, OutputFormat::Json, out.get());
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["calls"], 0);
  EXPECT_EQ(j["entries_without_return"], 0);
  EXPECT_EQ(j["p50_ns_upper"], 0);
  EXPECT_EQ(j["p99_ns_upper"], 0);
  EXPECT_EQ(j["buckets"], nlohmann::json::array());
}

}  // namespace
}  // namespace uscope
