// uscope against tests/fixtures/matrix, one program built 24 ways (-O0/-O2/-O3, frame pointers or
// not, -fcf-protection or not, PIE or not): `count` counts every call exactly once wherever the
// mover put the probe, `trace` prints every argument right with and without --no-move, and `-U`
// stacks name the caller (from the return address at entry) and, with frame pointers, main.
// One uscope run per variant per check.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../fixtures/matrix/matrix_variants.h"
#include "e2e_support.h"

namespace uscope::e2e {
namespace {

constexpr long kCalls = 3;  // iterations of the fixture's loop

// Each function, the probe that prints its arguments, and the messages iteration i prints.
struct Probe {
  std::string function;
  std::string spec;
  std::vector<std::string> (*expected)(long i);
};

const char* const kNames[] = {"alpha", "beta", "gamma"};

const std::vector<Probe> kProbes = {
    {"mx_args1", R"(p::mx_args1 "%ld", arg1)",
     [](long i) { return std::vector{std::to_string(i)}; }},
    {"mx_args2", R"(p::mx_args2 "%ld %ld", arg1, arg2)",
     [](long i) { return std::vector{fmt::format("{} {}", i, -i)}; }},
    {"mx_args3", R"(p::mx_args3 "%ld %ld %ld", arg1, arg2, arg3)",
     [](long i) { return std::vector{fmt::format("{} {} {}", i, i + 1, i + 2)}; }},
    {"mx_args4", R"(p::mx_args4 "%ld %ld %ld %ld", arg1, arg2, arg3, arg4)",
     [](long i) { return std::vector{fmt::format("{} {} {} {}", i, i + 1, i + 2, i + 3)}; }},
    {"mx_args5", R"(p::mx_args5 "%ld %ld %ld %ld %ld", arg1, arg2, arg3, arg4, arg5)",
     [](long i) {
       return std::vector{fmt::format("{} {} {} {} {}", i, i + 1, i + 2, i + 3, i + 4)};
     }},
    {"mx_args6", R"(p::mx_args6 "%ld %ld %ld %ld %ld %ld", arg1, arg2, arg3, arg4, arg5, arg6)",
     [](long i) {
       return std::vector{
           fmt::format("{} {} {} {} {} {}", i, -i, i + 100, i << 32, i + 1000, 6 - i)};
     }},
    {"mx_pointer", R"(p::mx_pointer "%ld", *(s64*)arg1)",
     [](long i) { return std::vector{std::to_string(1000 + i)}; }},
    {"mx_string", R"(p::mx_string "%s", arg1)",
     [](long i) { return std::vector<std::string>{kNames[i % 3]}; }},
    {"mx_recurse", R"(p::mx_recurse "%ld", arg1)",
     [](long) {
       return std::vector<std::string>{"2", "1", "0"};
     }},
    {"mx_leaf", R"(p::mx_leaf "%ld", arg1)", [](long i) { return std::vector{std::to_string(i)}; }},
    {"mx_caller", R"(p::mx_caller "%ld", arg1)",
     [](long i) { return std::vector{std::to_string(i)}; }},
};

class matrix : public ::testing::TestWithParam<std::string> {
 protected:
  std::string path() const { return fixture("matrix/" + GetParam()); }
  bool frame_pointers() const { return GetParam().find("-fp-") != std::string::npos; }

  // trace of every probe with -U over `kCalls` iterations; the fixture then holds, alive for the
  // stacks to be symbolized, until -M ends the session.
  void trace_all(bool no_move) {
    std::map<std::string, std::vector<std::string>> want;
    size_t total = 0;
    std::vector<std::string> args = {"trace", "--json", "-U", "-d", "30"};
    if (no_move) args.push_back("--no-move");
    for (const auto& p : kProbes) {
      for (long i = 0; i < kCalls; ++i)
        for (auto& m : p.expected(i)) want[p.function].push_back(m);
      total += want[p.function].size();
      args.push_back(p.spec);
    }
    args.insert(args.begin() + 1, {"-M", std::to_string(total), "-c",
                                   path() + " " + std::to_string(kCalls) + " hold"});
    auto r = uscope(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, std::vector<std::string>> got;
    int leaf_stacks = 0;
    for (const auto& j : json_lines(r.out)) {
      if (j["kind"] != "event") continue;
      std::string fn = j["function"];
      got[fn].push_back(j["message"]);
      if (!j.contains("stack")) continue;
      const auto& stack = j["stack"];
      ASSERT_GE(stack.size(), 1u) << j.dump();
      EXPECT_EQ(stack[0]["function"], fn) << j.dump();
      if (fn != "mx_leaf") continue;
      ++leaf_stacks;
      // The caller comes from the return address at entry, frame pointers or not.
      ASSERT_GE(stack.size(), 2u) << j.dump();
      EXPECT_EQ(stack[1]["function"], "mx_caller") << j.dump();
      if (frame_pointers()) {
        ASSERT_GE(stack.size(), 3u) << j.dump();
        EXPECT_EQ(stack[2]["function"], "main") << j.dump();
      }
    }
    EXPECT_EQ(got, want) << r.out;
    // Frame pointers make every stack walkable; without them the kernel may give up.
    if (frame_pointers()) {
      EXPECT_EQ(leaf_stacks, kCalls) << r.out;
    }
  }
};

TEST_P(matrix, count_counts_every_call_once) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "--json", "-c", path() + " " + std::to_string(kCalls), "mx_*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> counts;
  for (const auto& j : json_lines(r.out))
    if (j.contains("function")) counts[j["function"]] = j["count"];
  std::map<std::string, uint64_t> want;
  for (const auto& p : kProbes) want[p.function] = p.function == "mx_recurse" ? 3 * kCalls : kCalls;
  EXPECT_EQ(counts, want) << r.out;
}

TEST_P(matrix, trace_prints_arguments_and_stacks) {
  USCOPE_REQUIRE_ROOT();
  trace_all(false);
}

TEST_P(matrix, trace_prints_arguments_and_stacks_without_moving_probes) {
  USCOPE_REQUIRE_ROOT();
  trace_all(true);
}

// str(p) == "alph" must not match "alpha": the BPF side reads one byte past the literal. The
// first call finds the string's page not yet mapped: the probe, sleepable, faults it in, so
// both calls with "alpha" (i = 0 and 3 of 6) match.
TEST(matrix_strings, string_compare_matches_the_whole_string_only) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "--json", "-c", fixture("matrix/matrix-O2-fp-cet-pie") + " 6",
                   R"(p::mx_string (str(arg1) == "alph") "prefix %s", arg1)",
                   R"(p::mx_string (str(arg1) == "alpha") "whole %s", arg1)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int prefix = 0, whole = 0;
  for (const auto& j : json_lines(r.out)) {
    if (j["kind"] != "event") continue;
    std::string m = j["message"];
    prefix += m.starts_with("prefix");
    whole += m == "whole alpha";
  }
  EXPECT_EQ(prefix, 0) << r.out;
  EXPECT_EQ(whole, 2) << r.out;
}

// Three 1000-byte pointer + length strings and a value do not fit one event (TRACE_MAX_DATA): the
// planner shortens the strings instead of the BPF side dropping every such event as malformed.
TEST(matrix_strings, long_strings_are_shortened_to_fit_the_event) {
  USCOPE_REQUIRE_ROOT();
  // arg1 points at a local of main: the stack above it is mapped and touched.
  const std::string len = "arg1 - arg1 + 1000";  // an expression: exactly that many bytes
  auto r = uscope({"trace", "--json", "-c", fixture("matrix/matrix-O2-fp-cet-pie") + " 2",
                   "p::mx_pointer \"%s|%s|%s|%ld\", str(arg1, " + len + "), str(arg1, " + len +
                       "), str(arg1, " + len + "), *(s64*)arg1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<uint64_t> values;  // before the fix: none, every event dropped
  for (const auto& j : json_lines(r.out)) {
    if (j["kind"] != "event") continue;
    ASSERT_EQ(j["values"].size(), 4u) << j.dump();
    values.push_back(j["values"][3]);
  }
  EXPECT_EQ(values, (std::vector<uint64_t>{1000, 1001})) << r.out;
}

INSTANTIATE_TEST_SUITE_P(fixture, matrix, ::testing::ValuesIn(matrix_variants()),
                         [](const auto& info) {
                           std::string name = info.param.substr(7);  // without "matrix-"
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace uscope::e2e
