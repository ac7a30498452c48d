// `uscope threads` on the Java fixture (tests/fixtures/runtime): the threads it shows starting
// and ending are the ones the program started, with the names, Java ids and daemon flags the
// program gave them; a runtime without thread probes is told so.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(threads, java_threads_are_the_ones_the_program_started) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess java({"/usr/bin/java", "-Xmx64m", "-cp", fixture("runtime"), "RuntimeEvents"});
  ASSERT_TRUE(java.wait_for_line("ready"));
  RunningCommand threads(
      {USCOPE_BIN, "threads", "--format", "json", "-p", std::to_string(java.pid())});
  ASSERT_TRUE(threads.wait_for_stderr("Ctrl-C to stop"));
  java.send("threads 6\n");
  ASSERT_TRUE(java.wait_for_line("threads"));
  std::vector<int64_t> ids;
  std::istringstream in(java.last_line().substr(7));
  for (int64_t id; in >> id;) ids.push_back(id);
  ASSERT_EQ(ids.size(), 6u);
  java.send("exit\n");
  java.wait();
  CommandResult r = threads.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each worker: one start and one end, under the program's name, id and daemon flag, on one
  // native thread of the process. The JVM's own threads (started before uscope) may end too.
  std::map<std::string, std::vector<nlohmann::json>> workers;
  nlohmann::json summary;
  for (const auto& j : json_lines(r.out)) {
    if (j.contains("summary")) {
      summary = j["summary"];
      continue;
    }
    EXPECT_EQ(j["pid"], java.pid());
    if (j["name"].get<std::string>().starts_with("worker-")) workers[j["name"]].push_back(j);
  }
  ASSERT_EQ(workers.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    const auto& events = workers["worker-" + std::to_string(i)];
    ASSERT_EQ(events.size(), 2u) << i;
    EXPECT_EQ(events[0]["event"], "start");
    EXPECT_EQ(events[1]["event"], "end");
    for (const auto& e : events) {
      EXPECT_EQ(e["id"], ids[i]);
      EXPECT_EQ(e["daemon"], i % 2 == 1);
      EXPECT_EQ(e["tid"], events[0]["tid"]);
    }
  }
  EXPECT_EQ(summary["started"], 6);
  EXPECT_EQ(summary["losses"]["ring_full"], 0);
  EXPECT_EQ(summary["losses"]["truncated_names"], 0);
}

TEST(threads, a_runtime_without_thread_probes_is_said_so) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess py({"/usr/bin/python3.11", fixture("runtime/runtime_events.py")});
  ASSERT_TRUE(py.wait_for_line("ready"));
  auto r = uscope({"threads", "-p", std::to_string(py.pid())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Python (CPython)'s probes (python in /usr/bin/python3.11) mark no thread "
                       "start, thread end"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace uscope::e2e
