// Strings on pages the process has not touched yet (tests/fixtures/native/cold_strings.c), on their
// first call: a sleepable program faults the page in, so aggregation keys, predicates and trace
// read them right in the kernel. With USCOPE_NO_SLEEPABLE=1 (the path of kernels without
// sleepable uprobes) trace still reads them late from the live process, and a key says it could
// not.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

std::string fixture_path() {
  return fixture("native/cold_strings");
}
std::string probe(const std::string& kind) {
  return kind + ":" + fixture_path() + ":name";
}

// What the fixture says it did: the calls per string, and which strings' pages were not mapped
// at their first call (the first one's never is: else this test would prove nothing).
struct FixtureReport {
  std::map<std::string, uint64_t> calls;
  uint64_t cold_first_calls = 0;
};

FixtureReport fixture_report(const std::string& out) {
  FixtureReport f;
  std::smatch m;
  if (std::regex_search(out, m, std::regex("calls: first-cold (\\d+) second-cold (\\d+)"))) {
    f.calls["first-cold"] = std::stoull(m[1]);
    f.calls["second-cold"] = std::stoull(m[2]);
  }
  EXPECT_EQ(f.calls.size(), 2u) << out;
  if (std::regex_search(
          out, m, std::regex("mapped at the first call: first-cold (\\d) second-cold (\\d)"))) {
    EXPECT_EQ(m[1], "0") << out;
    f.cold_first_calls = (m[1] == "0") + (m[2] == "0");
  } else {
    ADD_FAILURE() << "no page report from the fixture: " << out;
  }
  return f;
}
std::map<std::string, uint64_t> fixture_calls(const std::string& out) {
  return fixture_report(out).calls;
}

// uscope with USCOPE_NO_SLEEPABLE=1: as on a kernel without sleepable uprobe programs.
CommandResult uscope_without_sleepable(std::vector<std::string> args) {
  args.insert(args.begin(), {"env", "USCOPE_NO_SLEEPABLE=1", USCOPE_BIN});
  return run(args);
}

std::map<std::string, uint64_t> counts_by_key(const std::string& out) {
  std::map<std::string, uint64_t> got;
  for (const auto& j : json_lines(out))
    if (j["kind"] == "count") got[j["key"]["str(arg1)"].dump()] += j["count"].get<uint64_t>();
  return got;
}

std::map<std::string, uint64_t> quoted(const std::map<std::string, uint64_t>& calls) {
  std::map<std::string, uint64_t> out;
  for (const auto& [k, n] : calls) out[nlohmann::json(k).dump()] = n;
  return out;
}

TEST(cold_strings, count_by_string_keys_the_first_call_right) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "--json", "--by", "str(arg1)", "-c", fixture_path(), probe("p")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(counts_by_key(r.out), quoted(fixture_calls(r.out))) << r.out;
}

TEST(cold_strings, count_by_string_with_one_link_per_site) {
  USCOPE_REQUIRE_ROOT();
  // --no-multi: the sleepable program of perf-event uprobe links (trace_single_sleepable).
  auto r = uscope(
      {"count", "--json", "--no-multi", "--by", "str(arg1)", "-c", fixture_path(), probe("p")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(counts_by_key(r.out), quoted(fixture_calls(r.out))) << r.out;
}

TEST(cold_strings, a_string_predicate_takes_the_first_call) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"trace", "--json", "-c", fixture_path(), probe("p") + " (str(arg1) == \"first-cold\")"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto calls = fixture_calls(r.out);
  uint64_t events = 0;
  for (const auto& j : json_lines(r.out)) events += j["kind"] == "event";
  EXPECT_EQ(events, calls["first-cold"]) << r.out;
}

TEST(cold_strings, hist_by_string_keys_the_first_call_right) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"hist", "--json", "--by", "str(arg1)", "-c", fixture_path(), probe("p"), "$pid - $pid"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> got;
  for (const auto& j : json_lines(r.out))
    if (j["kind"] == "hist") got[j["key"]["str(arg1)"].dump()] += j["count"].get<uint64_t>();
  EXPECT_EQ(got, quoted(fixture_calls(r.out))) << r.out;
}

TEST(cold_strings, trace_reads_them_in_the_kernel) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "--json", "-c", fixture_path(), probe("p") + " \"%s\", arg1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> got;
  nlohmann::json summary;
  for (const auto& j : json_lines(r.out)) {
    if (j["kind"] == "event") ++got[j["message"].get<std::string>()];
    if (j["kind"] == "summary") summary = j;
  }
  EXPECT_EQ(got, fixture_calls(r.out)) << r.out;
  ASSERT_FALSE(summary.is_null()) << r.out;
  EXPECT_EQ(summary["late_string_reads"], 0) << r.out;
  EXPECT_EQ(summary["read_errors"], 0) << r.out;
}

TEST(cold_strings, without_sleepable_programs_trace_reads_them_late) {
  USCOPE_REQUIRE_ROOT();
  // A late read needs the process alive: it waits to exit until uscope has printed the first
  // call of the second string (events come in order, so every late read is done by then).
  GatedProcess target({fixture_path(), "hold"});
  RunningCommand u({"env", "USCOPE_NO_SLEEPABLE=1", USCOPE_BIN, "trace", "--json", "-p",
                    std::to_string(target.pid()), probe("p") + " \"%s\", arg1"});
  ASSERT_TRUE(wait_for_links(u.pid(), "trace_"));
  target.start();
  ASSERT_TRUE(u.wait_for_output("\"message\":\"second-cold\""));
  target.send("x");
  std::string fixture_out;
  EXPECT_EQ(target.wait(&fixture_out), 0);
  auto r = u.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto report = fixture_report(fixture_out);
  std::map<std::string, uint64_t> got;
  nlohmann::json summary;
  for (const auto& j : json_lines(r.out)) {
    if (j["kind"] == "event") ++got[j["message"].get<std::string>()];
    if (j["kind"] == "summary") summary = j;
  }
  EXPECT_EQ(got, report.calls) << r.out;
  ASSERT_FALSE(summary.is_null()) << r.out;
  // Each first call that found its page unmapped: read from the process after the event.
  EXPECT_EQ(summary["late_string_reads"], report.cold_first_calls) << r.out;
  EXPECT_EQ(summary["unreadable_strings"], 0) << r.out;
}

TEST(cold_strings, without_sleepable_programs_a_key_says_it_was_unreadable) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope_without_sleepable(
      {"count", "--json", "--by", "str(arg1)", "-c", fixture_path(), probe("p")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto report = fixture_report(r.out);
  auto want = quoted(report.calls);
  // The first call of a string whose page was not mapped yet: a key that says so (JSON null).
  want["null"] = report.cold_first_calls;
  want["\"first-cold\""] -= 1;
  if (report.cold_first_calls == 2) want["\"second-cold\""] -= 1;
  EXPECT_EQ(counts_by_key(r.out), want) << r.out;
}

}  // namespace
}  // namespace uscope::e2e
