// `uscope stat` on a program that is no Go (tests/fixtures/runtime): the totals of its intervals
// are what the runtime itself counted while the fixture worked: collections (gc.get_stats(),
// GC.stat, the JVM's MXBeans), the threads the Java program started, the exceptions the Ruby
// one raised.
#include <gtest/gtest.h>

#include <numeric>

#include "e2e_support.h"
#include "runtime_fixture.h"

namespace uscope::e2e {
namespace {

// `stat --format json` on `program` while it runs `commands`; the program's answers (the numbers
// after each answer's first word) and stat's summary totals.
struct StatRun {
  std::vector<std::vector<int64_t>> answers;
  nlohmann::json totals;
  size_t intervals = 0;
};

StatRun stat_while(std::vector<std::string> program, const std::vector<std::string>& commands) {
  StatRun out;
  RuntimeFixture f(std::move(program), {"stat", "-i", "0.2", "--format", "json"});
  EXPECT_TRUE(f.attached);
  if (!f.attached) return out;
  for (const auto& c : commands) out.answers.push_back(f.ask(c));
  auto lines = f.finish();
  const nlohmann::json summary = RuntimeFixture::split_summary(lines);
  out.totals = summary["totals"];
  EXPECT_EQ(summary["losses"]["ring_full"], 0);
  out.intervals = lines.size();
  EXPECT_EQ(summary["intervals"], out.intervals);
  // The intervals add up to the totals.
  nlohmann::json sum_of_intervals = nlohmann::json::object();
  for (const auto& j : lines)
    for (const auto& [k, v] : j.items())
      if (v.is_number()) sum_of_intervals[k] = sum_of_intervals.value(k, 0) + v.get<int64_t>();
  for (const auto& [k, v] : out.totals.items()) EXPECT_EQ(sum_of_intervals[k], v) << k;
  return out;
}

TEST(runtime_stat, java_collections_and_threads_are_the_jvms) {
  USCOPE_REQUIRE_ROOT();
  StatRun r = stat_while({"/usr/bin/java", "-Xmx64m", "-cp", fixture("runtime"), "RuntimeEvents"},
                         {"gc 3", "threads 4"});
  ASSERT_EQ(r.answers.size(), 2u);
  EXPECT_EQ(r.totals["gc"], r.answers[0][0]);
  EXPECT_EQ(r.totals["threads_started"], 4);
  EXPECT_GE(r.totals["threads_ended"], 4);  // the JVM's own threads may end too
  EXPECT_TRUE(r.totals.contains("classes_loaded"));
}

TEST(runtime_stat, python_collections_are_the_ones_gc_get_stats_counted) {
  USCOPE_REQUIRE_ROOT();
  StatRun r = stat_while({"/usr/bin/python3.11", fixture("runtime/runtime_events.py")}, {"gc 6"});
  ASSERT_EQ(r.answers[0].size(), 3u);
  EXPECT_EQ(r.totals["gc"], std::accumulate(r.answers[0].begin(), r.answers[0].end(), int64_t{0}));
  EXPECT_FALSE(r.totals.contains("threads_started"));  // CPython has no thread probe
}

TEST(runtime_stat, ruby_collections_and_exceptions_are_the_programs) {
  USCOPE_REQUIRE_ROOT();
  StatRun r =
      stat_while({"/usr/bin/ruby", fixture("runtime/runtime_events.rb")}, {"gc 3", "raise 9"});
  EXPECT_EQ(r.totals["gc"], r.answers[0][0]);
  EXPECT_EQ(r.totals["exceptions"], 9);
}

}  // namespace
}  // namespace uscope::e2e
