// `uscope count` and `uscope latency` attached for real, including mass attach over libc and the
// honest accounting of return probes the kernel skips in deep recursion.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(count, counts_exact_calls_of_a_command) {
  USCOPE_REQUIRE_ROOT();
  auto r =
      uscope({"count", "--json", "-c", fixture("native/target_loop") + " 12345", "work", "mai*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> counts;
  for (const auto& j : json_lines(r.out)) counts[j["function"]] = j["count"];
  EXPECT_EQ(counts["work"], 12345u) << r.out;
  EXPECT_EQ(counts["main"], 1u) << r.out;
  EXPECT_TRUE(links_released("count_hit"));
}

// How fast is bench/'s to measure; here: every libc function, in a process already running.
TEST(count, all_of_libc_attaches_in_a_running_process) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/alloc_loop")});
  target.start();
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  auto r = uscope({"count", "-p", std::to_string(target.pid()), "-d", "1", "c:*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m,
      std::regex(R"(counting (\d+) sites.*attached in [0-9.]+ ms through \d+ uprobe_multi)")))
      << r.err;
  EXPECT_GT(std::stoi(m[1]), 1000);
  EXPECT_NE(r.out.find("malloc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("free"), std::string::npos);
  EXPECT_TRUE(links_released("count_hit"));
}

TEST(count, calls_entering_mid_prologue_are_not_counted_for_the_other_function) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "--json", "-c", fixture("native/mempcpy_loop") + " 1000", "c:*cpy*",
                   "c:*memmove*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t mempcpy = 0, others = 0;
  for (const auto& j : json_lines(r.out)) {
    std::string f = j["function"];
    (f.find("mempcpy") != std::string::npos ? mempcpy : others) += j["count"].get<uint64_t>();
  }
  EXPECT_EQ(mempcpy, 1000u) << r.out;
  // mempcpy_loop calls nothing else these match: a mempcpy entering memmove's body mid-prologue
  // counted for memmove would show here.
  EXPECT_EQ(others, 0u) << r.out;
}

TEST(count, prints_every_interval_and_at_exit) {
  USCOPE_REQUIRE_ROOT();
  auto r =
      uscope({"count", "-i", "0.3", "-d", "1.1", "-c", fixture("native/alloc_loop"), "c:malloc"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t tables = 0;
  for (size_t pos = 0; (pos = r.out.find("FUNC ", pos)) != std::string::npos; ++pos) ++tables;
  EXPECT_GE(tables, 4u) << r.out;  // 3 intervals + the final table
  EXPECT_NE(r.err.find("duration reached"), std::string::npos) << r.err;
}

TEST(latency, histogram_counts_every_call) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"latency", "--json", "-c", fixture("native/target_loop") + " 2000", "work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0]["calls"], 2000);
  EXPECT_EQ(rows[0]["entries"], 2000);
  EXPECT_EQ(rows[0]["entries_without_return"], 0);
  uint64_t total = 0;
  for (const auto& b : rows[0]["buckets"]) total += b["count"].get<uint64_t>();
  EXPECT_EQ(total, 2000u);
  EXPECT_TRUE(links_released("trace_"));
}

TEST(latency, reports_entries_the_kernel_never_returned_from) {
  USCOPE_REQUIRE_ROOT();
  // 10 rounds of recursion 100 deep: the kernel keeps at most 64 pending return probes per task.
  auto r = uscope({"latency", "-c", fixture("native/recurse") + " 100 10", "descend"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(descend \(.*\): (\d+) calls)"))) << r.out;
  uint64_t calls = std::stoull(m[1]);
  EXPECT_LT(calls, 1010u);
  EXPECT_GE(calls, 640u);
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"((\d+) entries without a return)")))
      << r.out;
  EXPECT_EQ(std::stoull(m[1]) + calls, 1010u);
}

TEST(latency, refuses_go_style_misuse_of_usdt) {
  auto r = uscope({"latency", "u:/usr/bin/python3.11:python:gc__start"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("USDT"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uscope::e2e
