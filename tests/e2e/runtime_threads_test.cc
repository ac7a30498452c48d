// `uscope threads` on the runtime fixtures (tests/fixtures/runtime): the threads it shows starting
// and ending are the ones the program started: Java's with the names, Java ids and daemon flags
// the program gave them (HotSpot's probes), Python's and Ruby's under the native ids the program
// read (the kernel's process events: they have no thread probe).
#include <gtest/gtest.h>

#include <map>

#include "e2e_support.h"
#include "runtime_fixture.h"

namespace uscope::e2e {
namespace {

TEST(threads, java_threads_are_the_ones_the_program_started) {
  USCOPE_REQUIRE_ROOT();
  RuntimeFixture java({"/usr/bin/java", "-Xmx64m", "-cp", fixture("runtime"), "RuntimeEvents"},
                      {"threads", "--format", "json"});
  ASSERT_TRUE(java.attached);
  const auto ids = java.ask("threads 6");
  ASSERT_EQ(ids.size(), 6u);
  auto lines = java.finish();
  // Each worker: one start and one end, under the program's name, id and daemon flag, on one
  // native thread of the process. The JVM's own threads (started before uscope) may end too.
  std::map<std::string, std::vector<nlohmann::json>> workers;
  const nlohmann::json summary = RuntimeFixture::split_summary(lines);
  for (const auto& j : lines) {
    EXPECT_EQ(j["pid"], java.program->pid());
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

// CPython and Ruby have no thread probe: their threads are the kernel's, each thread the program
// started one start and one end under the native id the program read for it.
// `ends_seen`: each native thread exits with its thread (Ruby keeps a finished thread's native
// thread a while for reuse, its thread cache: that one's end comes when the native thread goes).
void check_kernel_threads(std::vector<std::string> program, const std::string& runtime,
                          bool ends_seen) {
  RuntimeFixture p(std::move(program), {"threads", "--format", "json"});
  ASSERT_TRUE(p.attached);
  const auto tids = p.ask("threads 5");
  ASSERT_EQ(tids.size(), 5u);
  auto lines = p.finish();
  EXPECT_NE(p.result.err.find("as the kernel announces them"), std::string::npos) << p.result.err;
  std::map<int64_t, std::vector<std::string>> seen;  // tid -> its events in order
  const nlohmann::json summary = RuntimeFixture::split_summary(lines);
  for (const auto& j : lines) {
    EXPECT_EQ(j["pid"], p.program->pid());
    EXPECT_EQ(j["runtime"], runtime);
    seen[j["tid"].get<int64_t>()].push_back(j["event"]);
  }
  for (int64_t tid : tids) {
    if (ends_seen) {
      EXPECT_EQ(seen[tid], (std::vector<std::string>{"start", "end"})) << tid;
    } else {
      ASSERT_FALSE(seen[tid].empty()) << tid;
      EXPECT_EQ(seen[tid][0], "start") << tid;
      EXPECT_LE(seen[tid].size(), 2u) << tid;
    }
  }
  // The runtime may start threads of its own (Ruby's timer thread once a second thread runs).
  EXPECT_GE(summary["started"].get<int64_t>(), 5);
  EXPECT_EQ(summary["losses"]["ring_full"], 0);  // the kernel dropped no process event
}

TEST(threads, python_threads_come_from_the_kernel_with_their_native_ids) {
  USCOPE_REQUIRE_ROOT();
  check_kernel_threads({"/usr/bin/python3.11", fixture("runtime/runtime_events.py")}, "python",
                       true);
}

TEST(threads, ruby_threads_come_from_the_kernel_with_their_native_ids) {
  USCOPE_REQUIRE_ROOT();
  check_kernel_threads({"/usr/bin/ruby", fixture("runtime/runtime_events.rb")}, "ruby", false);
}

}  // namespace
}  // namespace uscope::e2e
