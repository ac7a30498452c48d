// `uscope calls`, `objnew` and `flow` on the runtime fixtures (tests/fixtures/runtime): the calls
// of Widget's work method and the Widgets created are the numbers the programs counted
// themselves; timed calls add up to less than the fixture's own clock says their loop took; flow
// pairs every return with its call at the same depth.
#include <gtest/gtest.h>

#include <map>

#include "e2e_support.h"
#include "runtime_fixture.h"

namespace uscope::e2e {
namespace {

std::vector<std::string> java(bool extended = true) {
  std::vector<std::string> args{"/usr/bin/java", "-Xmx64m"};
  if (extended) args.emplace_back("-XX:+ExtendedDTraceProbes");
  args.insert(args.end(), {"-cp", fixture("runtime"), "RuntimeEvents"});
  return args;
}
std::vector<std::string> ruby() {
  return {"/usr/bin/ruby", fixture("runtime/runtime_events.rb")};
}
std::vector<std::string> python() {
  return {"/usr/bin/python3.11", fixture("runtime/runtime_events.py")};
}
std::vector<std::string> php() {
  return {"/usr/bin/env", "USE_ZEND_DTRACE=1", "/usr/bin/php",
          fixture("runtime/runtime_events.php")};
}

struct TallyRun {
  std::vector<int64_t> answer;
  std::map<std::string, nlohmann::json> rows;  // by name
  nlohmann::json keys;                         // the "keys" line: totals and losses
  std::string err;
};

// `tool` in JSON on `program` while it runs `command`.
TallyRun tally(std::vector<std::string> program, std::vector<std::string> tool,
               const std::string& command) {
  TallyRun out;
  tool.insert(tool.end(), {"--all", "--format", "json"});
  RuntimeFixture f(std::move(program), tool);
  EXPECT_TRUE(f.attached);
  if (!f.attached) return out;
  out.answer = f.ask(command);
  for (const auto& j : f.finish()) {
    if (j["kind"] == "keys")
      out.keys = j;
    else
      out.rows[j["name"].get<std::string>()] = j;
  }
  out.err = f.result.err;
  return out;
}

int64_t count_of(const TallyRun& r, const std::string& name) {
  auto it = r.rows.find(name);
  return it == r.rows.end() ? 0 : it->second["count"].get<int64_t>();
}

TEST(runtime_calls, java_calls_are_the_ones_the_method_counted) {
  USCOPE_REQUIRE_ROOT();
  TallyRun r = tally(java(), {"calls"}, "calls 5000");
  ASSERT_EQ(r.answer.size(), 2u);
  EXPECT_EQ(r.answer[0], 5000);
  EXPECT_EQ(count_of(r, "RuntimeEvents$Widget.work"), r.answer[0]) << r.err;
  EXPECT_EQ(r.keys["not_counted_map_full"], 0);
  // What the probes cost is said before they are on.
  EXPECT_NE(r.err.find("Java (HotSpot)'s per-call probes (method__entry) are on: "),
            std::string::npos)
      << r.err;
}

TEST(runtime_calls, java_timed_calls_fit_in_the_time_the_fixture_measured) {
  USCOPE_REQUIRE_ROOT();
  TallyRun r = tally(java(), {"calls", "-L"}, "calls 5000");
  ASSERT_EQ(r.answer.size(), 2u);
  const auto& work = r.rows["RuntimeEvents$Widget.work"];
  ASSERT_TRUE(work.is_object()) << r.err;
  EXPECT_EQ(work["count"], r.answer[0]);
  // Each call is timed from its entry to its return, inside the loop the fixture timed.
  EXPECT_GT(work["total_ns"].get<int64_t>(), 0);
  EXPECT_LT(work["total_ns"].get<int64_t>(), r.answer[1]);
  EXPECT_EQ(r.keys["entries_not_recorded"], 0);
  EXPECT_EQ(r.keys["read_errors"], 0);
}

// `tool` on `program`, which is refused: its exit code and stderr.
CommandResult refused(std::vector<std::string> program, std::vector<std::string> tool) {
  GatedProcess p(std::move(program));
  EXPECT_TRUE(p.wait_for_line("ready"));
  tool.insert(tool.begin(), USCOPE_BIN);
  tool.insert(tool.end(), {"-p", std::to_string(p.pid())});
  CommandResult r = run(tool);
  p.send("exit\n");
  p.wait();
  return r;
}

// The JVM's own flags say whether its method and allocation probes can fire (HotSpot reads them
// only at its start), and PHP's environment whether its call probes can: a process where they
// cannot is refused with what would work, not watched for nothing.
TEST(runtime_calls, a_runtime_whose_probes_cannot_fire_is_refused_with_what_would_work) {
  USCOPE_REQUIRE_ROOT();
  for (const char* tool : {"calls", "flow"}) {
    CommandResult r = refused(java(false), {tool});
    EXPECT_EQ(r.exit_code, 1) << tool;
    EXPECT_NE(r.err.find("runs with DTraceMethodProbes off, so hotspot:method__"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("start it with -XX:+ExtendedDTraceProbes or -XX:+DTraceMethodProbes"),
              std::string::npos)
        << r.err;
  }
  CommandResult alloc = refused(java(false), {"objnew"});
  EXPECT_EQ(alloc.exit_code, 1);
  EXPECT_NE(alloc.err.find("runs with DTraceAllocProbes off, so hotspot:object__alloc never fires"),
            std::string::npos)
      << alloc.err;
  CommandResult php = refused({"/usr/bin/php", fixture("runtime/runtime_events.php")}, {"calls"});
  EXPECT_EQ(php.exit_code, 1);
  EXPECT_NE(php.err.find("was started without USE_ZEND_DTRACE in its environment"),
            std::string::npos)
      << php.err;
  EXPECT_NE(php.err.find("start it with USE_ZEND_DTRACE=1"), std::string::npos);
}

TEST(runtime_calls, ruby_calls_and_timed_calls_are_the_ones_the_method_counted) {
  USCOPE_REQUIRE_ROOT();
  TallyRun counted = tally(ruby(), {"calls"}, "calls 3000");
  ASSERT_EQ(counted.answer.size(), 1u);
  EXPECT_EQ(counted.answer[0], 3000);
  EXPECT_EQ(count_of(counted, "Widget#work"), 3000) << counted.err;
  // Integer#times (a C method) ran once for them.
  EXPECT_EQ(count_of(counted, "Integer#times"), 1);
  TallyRun timed = tally(ruby(), {"calls", "-L"}, "calls 3000");
  EXPECT_EQ(count_of(timed, "Widget#work"), 3000) << timed.err;
  EXPECT_EQ(count_of(timed, "Integer#times"), 1);
  // The loop's time holds every call of work.
  EXPECT_GT(timed.rows["Integer#times"]["total_ns"].get<int64_t>(),
            timed.rows["Widget#work"]["total_ns"].get<int64_t>());
}

TEST(runtime_calls, php_calls_are_the_ones_the_method_counted) {
  USCOPE_REQUIRE_ROOT();
  TallyRun r = tally(php(), {"calls", "-L"}, "calls 2000");
  ASSERT_EQ(r.answer.size(), 1u);
  EXPECT_EQ(count_of(r, "Widget::work"), r.answer[0]) << r.err;
  EXPECT_EQ(r.answer[0], 2000);
}

TEST(runtime_calls, python_calls_are_counted_at_their_return_and_not_timed) {
  USCOPE_REQUIRE_ROOT();
  TallyRun r = tally(python(), {"calls"}, "calls 2000");
  ASSERT_EQ(r.answer.size(), 1u);
  EXPECT_EQ(count_of(r, fixture("runtime/runtime_events.py") + ":work"), 2000) << r.err;

  GatedProcess p(python());
  ASSERT_TRUE(p.wait_for_line("ready"));
  CommandResult timed = run({USCOPE_BIN, "calls", "-L", "-p", std::to_string(p.pid())});
  EXPECT_EQ(timed.exit_code, 1);
  EXPECT_NE(timed.err.find("function__entry fires for only some calls (in Python 3.11, those "
                           "entered from C), so its calls cannot be paired"),
            std::string::npos)
      << timed.err;
  p.send("exit\n");
  p.wait();
}

TEST(runtime_objnew, java_and_ruby_widgets_are_the_ones_created) {
  USCOPE_REQUIRE_ROOT();
  TallyRun j = tally(java(), {"objnew"}, "objects 3000");
  ASSERT_EQ(j.answer.size(), 1u);
  EXPECT_EQ(count_of(j, "RuntimeEvents$Widget"), 3000) << j.err;
  TallyRun r = tally(ruby(), {"objnew"}, "objects 700");
  EXPECT_EQ(count_of(r, "Widget"), 700) << r.err;
}

TEST(runtime_objnew, python_has_no_allocation_probe) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess p(python());
  ASSERT_TRUE(p.wait_for_line("ready"));
  CommandResult r = run({USCOPE_BIN, "objnew", "-p", std::to_string(p.pid())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Python (CPython)'s probes (python in /usr/bin/python3.11) mark no object "
                       "creation"),
            std::string::npos)
      << r.err;
  p.send("exit\n");
  p.wait();
}

// flow's events of Widget's work: each call, then its return at the same depth with its time.
void expect_paired_flow(std::vector<std::string> program, const std::string& glob,
                        const std::string& name, int calls) {
  RuntimeFixture f(std::move(program), {"flow", glob, "--format", "json"});
  ASSERT_TRUE(f.attached);
  f.ask("calls " + std::to_string(calls));
  auto lines = f.finish();
  const nlohmann::json summary = RuntimeFixture::split_summary(lines);
  EXPECT_EQ(summary["calls"], calls) << f.result.err;
  EXPECT_EQ(summary["returns"], calls);
  EXPECT_EQ(summary["losses"]["ring_full"], 0);
  ASSERT_EQ(lines.size(), 2u * static_cast<size_t>(calls));
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    EXPECT_EQ(lines[i]["kind"], "call");
    EXPECT_EQ(lines[i]["name"], name);
    EXPECT_EQ(lines[i + 1]["kind"], "return");
    EXPECT_EQ(lines[i + 1]["name"], name);
    EXPECT_EQ(lines[i + 1]["depth"], lines[i]["depth"]);
    EXPECT_EQ(lines[i + 1]["tid"], lines[i]["tid"]);
    EXPECT_GE(lines[i]["depth"].get<int>(), 1);
    EXPECT_EQ(lines[i + 1]["time_unix_ns"].get<int64_t>() - lines[i]["time_unix_ns"].get<int64_t>(),
              lines[i + 1]["duration_ns"].get<int64_t>());
  }
}

TEST(runtime_flow, ruby_calls_return_at_their_depth) {
  USCOPE_REQUIRE_ROOT();
  expect_paired_flow(ruby(), "Widget#*", "Widget#work", 7);
}

TEST(runtime_flow, java_calls_return_at_their_depth) {
  USCOPE_REQUIRE_ROOT();
  expect_paired_flow(java(), "*Widget.work", "RuntimeEvents$Widget.work", 7);
}

}  // namespace
}  // namespace uscope::e2e
