// `uscope gc` on the same small program in each runtime (tests/fixtures/runtime): the collections
// uscope shows while the program forces N of them equal what the runtime itself counted
// (gc.get_stats(), GC.stat, the JVM's GarbageCollectorMXBeans), kind by kind; and every way it
// cannot work says so with what would.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>

#include "e2e_support.h"
#include "runtime_fixture.h"

namespace uscope::e2e {
namespace {

// `gc` on `program` while it forces collections with `command`: the program's answer, the
// collections gc showed by kind, and its summary.
struct GcRun {
  std::vector<int64_t> counted;
  std::map<std::string, int64_t> seen;
  nlohmann::json summary;
};

GcRun gc_while(std::vector<std::string> program, const std::string& command) {
  GcRun run;
  RuntimeFixture f(std::move(program), {"gc", "--format", "json"});
  EXPECT_TRUE(f.attached);
  if (!f.attached) return run;
  run.counted = f.ask(command);
  auto lines = f.finish();
  run.summary = RuntimeFixture::split_summary(lines);
  for (const auto& j : lines) {
    EXPECT_GT(j.value("duration_ns", 0), 0) << j.dump();
    ++run.seen[j.value("kind", "?")];
  }
  return run;
}

TEST(gc, python_collections_are_the_ones_gc_get_stats_counted) {
  USCOPE_REQUIRE_ROOT();
  auto [counted, seen, summary] =
      gc_while({"/usr/bin/python3.11", fixture("runtime/runtime_events.py")}, "gc 7");
  ASSERT_EQ(counted.size(), 3u);  // generations 0, 1, 2
  ASSERT_GE(counted[2], 7);
  EXPECT_EQ(seen["generation 0"], counted[0]);
  EXPECT_EQ(seen["generation 1"], counted[1]);
  EXPECT_EQ(seen["generation 2"], counted[2]);
  EXPECT_EQ(summary["collections"], counted[0] + counted[1] + counted[2]);
  EXPECT_EQ(summary["runtime"], "python");
  EXPECT_EQ(summary["losses"]["ring_full"], 0);
  EXPECT_EQ(summary["losses"]["ends_without_begin"], 0);
  EXPECT_EQ(summary["losses"]["open_at_stop"], 0);
}

TEST(gc, java_collections_are_the_ones_the_jvm_counted) {
  USCOPE_REQUIRE_ROOT();
  auto [counted, seen, summary] =
      gc_while({"/usr/bin/java", "-Xmx64m", "-cp", fixture("runtime"), "RuntimeEvents"}, "gc 5");
  ASSERT_EQ(counted.size(), 1u);
  // System.gc() is a full collection; nothing else ran (the program allocates nothing).
  EXPECT_EQ(seen["full"], 5);
  EXPECT_EQ(summary["collections"], counted[0]);
  EXPECT_EQ(summary["runtime"], "java");
}

TEST(gc, ruby_mark_phases_are_the_collections_gc_stat_counted) {
  USCOPE_REQUIRE_ROOT();
  auto [counted, seen, summary] =
      gc_while({"/usr/bin/ruby", fixture("runtime/runtime_events.rb")}, "gc 4");
  ASSERT_EQ(counted.size(), 3u);  // count, major, minor
  ASSERT_EQ(counted[0], 4);
  // One mark phase per collection (GC.start marks at once); sweeping is lazy, in steps.
  EXPECT_EQ(seen["mark"], counted[0]);
  EXPECT_GE(seen["sweep"], counted[0]);
  EXPECT_EQ(summary["runtime"], "ruby");
}

TEST(gc, what_cannot_be_read_is_said_with_what_would_work) {
  USCOPE_REQUIRE_ROOT();
  // PHP's probes mark no collection.
  {
    GatedProcess php({"/usr/bin/php8.2", fixture("runtime/runtime_events.php")});
    ASSERT_TRUE(php.wait_for_line("ready"));
    auto r = uscope({"gc", "-p", std::to_string(php.pid())});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("PHP (Zend)'s probes (php in /usr/bin/php8.2) mark no GC begin, GC end"),
              std::string::npos)
        << r.err;
  }
  // A program that is no runtime: the runtimes uscope knows, and stat for Go.
  {
    GatedProcess c({fixture("native/target_loop"), "1"});
    auto r = uscope({"gc", "-p", std::to_string(c.pid())});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("runs no runtime uscope gc knows: java (libjvm.so), python"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("uscope stat"), std::string::npos) << r.err;
  }
  // A Python without probes (as pyenv builds it): Debian's with its notes taken out.
  {
    const std::string dir = fmt::format("{}uscope_gc_{}", ::testing::TempDir(), getpid());
    const std::string bare = dir + "/python3.11";  // named as Python is, to be found as Python
    ASSERT_EQ(shell(fmt::format("mkdir -p {} && objcopy --remove-section .note.stapsdt "
                                "/usr/bin/python3.11 {} && echo ok",
                                dir, bare)),
              "ok\n");
    GatedProcess py({bare, fixture("runtime/runtime_events.py")});
    ASSERT_TRUE(py.wait_for_line("ready"));
    auto r = uscope({"gc", "-p", std::to_string(py.pid())});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(bare + " has no python USDT probes: this Python was built without "
                                "--with-dtrace"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("Debian's /usr/bin/python3.11 has the probes"), std::string::npos);
    shell("rm -rf " + dir);
  }
  // -l names a runtime uscope does not know, or one the process does not run.
  auto r = uscope({"gc", "-l", "cobol", "-p", std::to_string(getpid())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("-l cobol: uscope knows the runtimes java, python, ruby, php"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace uscope::e2e
