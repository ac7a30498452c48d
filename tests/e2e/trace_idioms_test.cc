// What bcc users type, attached for real: C++ (and Rust) functions by their demangled names in
// trace, count and latency; casts of expressions; STRCMP; a program named as in PATH.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

std::string orchard(int rounds) {
  return fixture("orchard/orchard") + " " + std::to_string(rounds);
}

// The message of each JSON event, in order.
std::vector<std::string> messages(const std::string& out) {
  std::vector<std::string> m;
  for (const auto& j : json_lines(out))
    if (j.contains("message")) m.push_back(j["message"]);
  return m;
}

TEST(trace_idioms, cxx_method_by_demangled_name_prints_its_argument) {
  USCOPE_REQUIRE_ROOT();
  // bcc's form with an empty target; `this` is arg1, so the int is arg2.
  auto r = uscope({"trace", "-c", orchard(10), R"(p::orchard::Pear::ripen "%d", arg2)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_with(r.out, "orchard::Pear::ripen(int)").size(), 10u) << r.out;
  EXPECT_EQ(lines_with(r.out, "orchard::Pear::ripen(char const*)").size(), 10u) << r.out;

  auto one = uscope({"trace", "--json", "-c", orchard(10),
                     R"x(p::"orchard::Pear::ripen(int)" "days=%d", arg2)x"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> want;
  for (int i = 0; i < 10; ++i) want.push_back("days=" + std::to_string(i));
  EXPECT_EQ(messages(one.out), want) << one.out;
}

TEST(trace_idioms, cxx_name_with_target_path_and_template) {
  USCOPE_REQUIRE_ROOT();
  const std::string bin = fixture("orchard/orchard");
  auto r = uscope({"trace", "--json", "-c", orchard(5),
                   "p:" + bin + R"(:orchard::Basket<long>::add "%d", arg2)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out), (std::vector<std::string>{"0", "2", "4", "6", "8"})) << r.out;
}

TEST(trace_idioms, int_cast_of_retval_sees_negative_returns) {
  USCOPE_REQUIRE_ROOT();
  // check() returns int -1 for odd rounds: eax = 0xffffffff, the upper half of rax zero.
  auto r = uscope({"trace", "--json", "-c", orchard(10),
                   R"(r::orchard::check ((int)retval < 0) "failed: %d", (int)retval)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out), std::vector<std::string>(5, "failed: -1")) << r.out;
  // Without the cast the 64-bit value is positive, as bcc's docs warn.
  auto uncast = uscope(
      {"trace", "--json", "-c", orchard(10), R"(r::orchard::check (retval < 0) "%d", retval)"});
  ASSERT_EQ(uncast.exit_code, 0) << uncast.err;
  EXPECT_TRUE(messages(uncast.out).empty()) << uncast.out;
}

TEST(trace_idioms, strcmp_filters_on_the_string_an_argument_points_to) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "--json", "-c", orchard(10),
                   R"x(p::"orchard::Pear::ripen(const char *)" (STRCMP("test.txt", arg2)) )x"
                   R"("why=%s", arg2)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out), std::vector<std::string>(5, "why=test.txt")) << r.out;
}

TEST(trace_idioms, count_and_latency_take_cxx_globs) {
  USCOPE_REQUIRE_ROOT();
  auto c = uscope({"count", "--json", "-c", orchard(300), "orchard::*"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::map<std::string, uint64_t> counts;
  for (const auto& j : json_lines(c.out)) counts[j["function"]] = j["count"];
  EXPECT_EQ(counts["orchard::Pear::ripen(int)"], 300u) << c.out;
  EXPECT_EQ(counts["orchard::Pear::ripen(char const*)"], 300u) << c.out;
  EXPECT_EQ(counts["orchard::Basket<int>::add(int)"], 300u) << c.out;
  EXPECT_EQ(counts["orchard::Pear::grow(int)"], 300u) << c.out;
  EXPECT_EQ(counts["orchard::harvest(long)"], 300u) << c.out;
  EXPECT_EQ(counts["orchard::Pear::operator+=(int)"], 300u) << c.out;

  auto l = uscope({"latency", "--json", "-c", orchard(200), "orchard::harvest"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  auto rows = json_lines(l.out);
  ASSERT_EQ(rows.size(), 1u) << l.out;
  EXPECT_EQ(rows[0]["calls"], 200);
}

TEST(trace_idioms, rust_path_of_legacy_mangled_binary) {
  USCOPE_REQUIRE_ROOT();
  const std::string bin = fixture("orchard/orchard_rs_legacy");
  ASSERT_EQ(access(bin.c_str(), X_OK), 0)
      << bin << " is missing: install rustc (scripts/install-deps.sh) and rebuild";
  auto r = uscope(
      {"trace", "--json", "-c", bin + " 4", "p:" + bin + R"(:myapp::server::handle "%d", arg1)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out), (std::vector<std::string>{"0", "1", "2", "3"})) << r.out;
}

TEST(trace_idioms, bare_program_name_is_found_in_path) {
  USCOPE_REQUIRE_ROOT();
  // bcc resolves "bash" as a library first, then in PATH. Non-interactive bash never calls
  // readline, so this probes a function every command runs through.
  auto r = uscope({"count", "--json", "-c", "bash -c 'true; true; true'", "bash:execute_command"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0]["function"], "execute_command");
  // Debian 12's bash 5.2 runs execute_command twice for this command line: bpftrace's
  // uprobe:/usr/bin/bash:execute_command, filtered by the pid of the same command, counts 2.
  EXPECT_EQ(rows[0]["count"].get<uint64_t>(), 2u) << r.out;

  auto missing = uscope({"trace", "-c", "bash -c true", "r:nosuchprog_xyz:readline"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no library 'nosuchprog_xyz' in ld.so.cache"), std::string::npos)
      << missing.err;
  EXPECT_NE(missing.err.find("no executable 'nosuchprog_xyz' in PATH"), std::string::npos)
      << missing.err;
}

}  // namespace
}  // namespace uscope::e2e
