// `uscope trace` attached for real: -c and -p targets, entry/return/USDT probes with arguments,
// predicates, $entry(), user stacks, JSON, lifecycle, and nothing left attached afterwards.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_support.h"
#include "session_support.h"

namespace uscope::e2e {
namespace {

std::string loop_cmd(int n) {
  return fixture("native/target_loop") + " " + std::to_string(n);
}

TEST(trace, entry_probe_with_predicate_and_string_arg) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"trace", "-c", loop_cmd(1000), "p::work (arg1 % 100 == 7) \"i=%d tag=%s\", arg1, arg2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto hits = lines_with(r.out, " work ");
  ASSERT_EQ(hits.size(), 10u) << r.out;
  EXPECT_NE(hits[0].find("i=7 tag=xyz"), std::string::npos) << hits[0];
  EXPECT_NE(hits[9].find("i=907 tag=xyz"), std::string::npos) << hits[9];
  EXPECT_NE(r.err.find("target exited"), std::string::npos) << r.err;
  EXPECT_EQ(summary_count(r.err, " lost"), 0) << r.err;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(trace, string_on_untouched_page_is_read_from_the_live_process) {
  USCOPE_REQUIRE_ROOT();
  // The first work() call reads "xyz" only after the probe fired: its page is not mapped yet.
  // Without sleepable programs (as on kernels before 6.1) the BPF read fails and uscope reads the
  // string from the process instead.
  auto r = run({"env", "USCOPE_NO_SLEEPABLE=1", USCOPE_BIN, "trace", "--json", "-M", "1", "-c",
                loop_cmd(100000), "p::work \"%s\", arg2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"message\":\"xyz\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"late_string_reads\":1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"unreadable_strings\":0"), std::string::npos) << r.out;
}

TEST(trace, string_on_untouched_page_is_read_in_the_kernel) {
  USCOPE_REQUIRE_ROOT();
  // The same first call, with sleepable programs: the probe faults the page in itself.
  auto r = uscope({"trace", "--json", "-M", "1", "-c", loop_cmd(100000), "p::work \"%s\", arg2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"message\":\"xyz\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"late_string_reads\":0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"read_errors\":0"), std::string::npos) << r.out;
}

TEST(trace, return_probe_reads_entry_argument_and_retval) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"trace", "-c", loop_cmd(50), "r::work (retval > 90) \"%ld -> %ld\", $entry(arg1), retval"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto hits = lines_with(r.out, " -> ");
  ASSERT_EQ(hits.size(), 5u) << r.out;  // i = 45..49: 2i+1 > 90
  EXPECT_NE(hits[0].find("45 -> 91"), std::string::npos) << hits[0];
  EXPECT_NE(hits[4].find("49 -> 99"), std::string::npos) << hits[4];
}

TEST(trace, libc_function_in_running_process) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/alloc_loop")});
  target.start();
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  auto r = uscope({"trace", "-p", std::to_string(target.pid()), "-M", "5", "--json",
                   "p:c:malloc (arg1 == 42) \"size=%zu\", arg1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int events = 0;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("{")) continue;
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "event") {
      ++events;
      EXPECT_EQ(j["pid"], target.pid());
      EXPECT_EQ(j["function"], "malloc");
      EXPECT_EQ(j["message"], "size=42");
      EXPECT_EQ(j["values"][0], 42);
      EXPECT_EQ(j["comm"], "alloc_loop");
    } else {
      EXPECT_EQ(j["kind"], "summary");
      EXPECT_EQ(j["lost"], 0);
      EXPECT_EQ(j["stop"], "event limit reached");
    }
  }
  EXPECT_EQ(events, 5);
  EXPECT_TRUE(links_released("trace_"));
}

TEST(trace, system_wide_probe_never_traces_uscope_itself) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/alloc_loop")});
  target.start();
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  // Printing allocates: were uscope's own mallocs traced, each event would cause more. Other
  // uscope processes (another session on the machine) are fair game: only this one is itself.
  auto session = RunningCommand::uscope({"trace", "--json", "-d", "1", "p:c:malloc"});
  const pid_t self = session.pid();
  auto r = session.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int events = 0;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] != "event") continue;
    ++events;
    EXPECT_NE(j["pid"], self) << line;
  }
  EXPECT_GT(events, 100);
}

TEST(trace, lost_events_are_counted_not_dropped_silently) {
  USCOPE_REQUIRE_ROOT();
  // A one-page ring buffer cannot keep up with 200000 events in a tight loop.
  auto r = uscope({"trace", "--json", "--buffer-kb", "4", "-c", loop_cmd(200000),
                   "p::work \"%d %s\", arg1, arg2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t events = 0;
  nlohmann::json summary;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("{")) continue;
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "event") ++events;
    if (j["kind"] == "summary") summary = j;
  }
  ASSERT_FALSE(summary.is_null()) << r.out.substr(r.out.size() - 500);
  EXPECT_GT(summary["lost"].get<uint64_t>(), 0u);
  EXPECT_EQ(summary["events"].get<uint64_t>(), events);
  EXPECT_EQ(events + summary["lost"].get<uint64_t>(), 200000u);
}

TEST(trace, user_stack_is_symbolized) {
  USCOPE_REQUIRE_ROOT();
  // Long enough a run that the process is alive when its stack is symbolized.
  auto r = uscope({"trace", "-U", "-M", "1", "-c", loop_cmd(20000000), "p::work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The first frame is the probed instruction: after endbr64 when the site moved.
  EXPECT_TRUE(r.out.find("        work+0x0 [target_loop]\n") != std::string::npos ||
              r.out.find("        work+0x4 [target_loop]\n") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("main+0x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("__libc_start_call_main"), std::string::npos) << r.out;
}

TEST(trace, moves_entry_probe_past_endbr64_and_says_so) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "-v", "-c", loop_cmd(3), "p::work \"%d\", arg1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("emulated"), std::string::npos) << r.err;
  EXPECT_EQ(lines_with(r.out, " work ").size(), 3u) << r.out;
  auto stay = uscope({"trace", "-v", "--no-move", "-c", loop_cmd(3), "p::work \"%d\", arg1"});
  EXPECT_NE(stay.err.find("single-stepped (endbr64)"), std::string::npos) << stay.err;
}

TEST(trace, stops_cleanly_on_sigterm_and_detaches) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/alloc_loop")});
  target.start();
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  auto tracer = RunningCommand::uscope({"trace", "-p", std::to_string(target.pid()), "p:c:free"});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  tracer.signal(SIGTERM);
  auto r = tracer.finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(trace, target_killed_mid_trace_ends_session) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/alloc_loop")});
  target.start();
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  auto tracer = RunningCommand::uscope(
      {"trace", "-p", std::to_string(target.pid()), "p:c:malloc (arg1 == 3)"});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  kill(target.pid(), SIGKILL);
  auto r = tracer.finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("target exited"), std::string::npos) << r.err;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(trace, bad_specs_name_the_problem) {
  USCOPE_REQUIRE_ROOT();
  auto unknown = uscope({"trace", "-c", loop_cmd(1), "p::wrok"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("closest: work"), std::string::npos) << unknown.err;

  auto column = uscope({"trace", "-c", loop_cmd(1), "p::work (arg1 > ) \"%d\", arg1"});
  EXPECT_EQ(column.exit_code, 2);
  EXPECT_NE(column.err.find("column 17"), std::string::npos) << column.err;
  EXPECT_NE(column.err.find("^"), std::string::npos) << column.err;

  auto mismatch = uscope({"trace", "-c", loop_cmd(1), "p::work \"%d %d\", arg1"});
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_EQ(summary_count(mismatch.err, " conversions"), 2) << mismatch.err;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(trace, python_usdt_raises_semaphore_only_while_attached) {
  USCOPE_REQUIRE_ROOT();
  const std::string python = "/usr/bin/python3.11";
  auto listed = uscope({"list", "--json", python, "python:function__return"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto probe = nlohmann::json::parse(listed.out.substr(0, listed.out.find('\n')));
  uint64_t sem_offset = probe["locations"][0]["semaphore_offset"];

  GatedProcess py({python, fixture("python/workload.py"), "20", "--ready"});
  py.start();
  ASSERT_TRUE(py.wait_for_line("ready"));
  EXPECT_EQ(read_usdt_semaphore(py.pid(), sem_offset, python), 0);

  auto tracer =
      RunningCommand::uscope({"trace", "-p", std::to_string(py.pid()), "-d", "2.5", "--json",
                              "u:" + python + ":python:function__return \"%s:%s\", arg1, arg2",
                              "u:" + python + ":python:gc__start \"gen=%d\", arg1"});
  EXPECT_TRUE(wait_until("the USDT semaphore is raised",
                         [&] { return read_usdt_semaphore(py.pid(), sem_offset, python) >= 1; }));
  auto r = tracer.finish();
  EXPECT_EQ(read_usdt_semaphore(py.pid(), sem_offset, python), 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("workload.py:handle_request"), std::string::npos);
  EXPECT_NE(r.out.find("workload.py:leaf"), std::string::npos);
  EXPECT_NE(r.out.find("gen=2"), std::string::npos);
  // Counted, not necessarily 0: on a loaded machine uscope may fall behind the interpreter, and
  // then the kernel drops and counts (lost_events_are_counted_not_dropped_silently checks that).
  EXPECT_NE(r.out.find("\"lost\":"), std::string::npos)
      << r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
