// `-c`: the command starts as it would from a shell (signal dispositions and mask, environment,
// cwd, fds 0-2 only), and only the command is traced, from its exec on: never uscope's forked
// launcher, which runs uscope's code until the exec.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// The lines start_state reports about itself, without uscope's output around them.
std::string start_state_report(const std::string& out) {
  std::istringstream in(out);
  std::string line, report;
  while (std::getline(in, line))
    if (line.starts_with("Sig") || line.starts_with("fds:") || line.starts_with("env:") ||
        line.starts_with("cwd:"))
      report += line + "\n";
  return report;
}

TEST(launcher, command_starts_as_from_a_shell) {
  USCOPE_REQUIRE_ROOT();
  const std::string state = fixture("native/start_state");
  // The same command run by a shell from the same directory with the same environment.
  const std::string env = "USCOPE_LAUNCHER_TEST=passed-through";
  auto plain =
      run({"/bin/sh", "-c", "cd / && " + env + " exec " + state + " 0 USCOPE_LAUNCHER_TEST"});
  ASSERT_EQ(plain.exit_code, 0);
  std::string expected = start_state_report(plain.out);
  // Whatever fds this test inherited, the command gets only uscope's 0, 1 and 2.
  size_t fds = expected.find("fds:");
  ASSERT_NE(fds, std::string::npos) << expected;
  expected.replace(fds, expected.find('\n', fds) - fds, "fds: 0 1 2");
  ASSERT_NE(expected.find("SigIgn:\t0000000000000000"), std::string::npos) << expected;
  ASSERT_NE(expected.find("SigBlk:\t0000000000000000"), std::string::npos) << expected;

  for (const char* cmd : {"trace", "count", "latency"}) {
    std::string probe = std::string(cmd) == "trace" ? "p:c:getpid" : "c:getpid";
    auto r = run({"/bin/sh", "-c",
                  "cd / && " + env + " exec " + USCOPE_BIN + " " + cmd + " -c '" + state +
                      " 0 USCOPE_LAUNCHER_TEST' " + probe});
    ASSERT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_EQ(start_state_report(r.out), expected) << cmd;
  }
}

TEST(launcher, launcher_is_never_traced) {
  USCOPE_REQUIRE_ROOT();
  // Between its fork and its exec the launcher calls sigaction and execve (and, before this was
  // fixed, malloc): a user probing them must see the command's calls only. start_state calls
  // malloc exactly 25 times, and neither sigaction nor execve.
  auto r = uscope({"trace", "--json", "-c", fixture("native/start_state") + " 25", "p:c:malloc",
                   "p:c:sigaction", "p:c:execve"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, int> calls;
  for (const auto& j : json_lines(r.out))
    if (j["kind"] == "event") {
      ++calls[j["function"]];
      EXPECT_EQ(j["comm"], "start_state") << j.dump();
    }
  EXPECT_EQ(calls, (std::map<std::string, int>{{"malloc", 25}})) << r.out;
}

TEST(launcher, count_counts_exactly_the_commands_calls) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"count", "--json", "-c", fixture("native/start_state") + " 777", "c:malloc", "c:execve"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> counts;
  for (const auto& j : json_lines(r.out))
    if (j["kind"] == "count") counts[j["function"]] += j["count"].get<uint64_t>();
  EXPECT_EQ(counts["malloc"], 777u) << r.out;
  EXPECT_EQ(counts["execve"], 0u) << "the launcher's own execve is not the command's" << r.out;
}

}  // namespace
}  // namespace uscope::e2e
