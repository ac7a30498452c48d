// uscope stat on Go programs: goroutines created and exited, GC cycles and stop-the-world pauses
// counted from entry probes on the runtime, live goroutines from the program's memory. gostack
// runs rounds of worker goroutines, each round ending in runtime.GC(): its own counts bound ours.
#include <gtest/gtest.h>

#include <string>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

nlohmann::json summary_of(const std::string& out) {
  for (const auto& j : json_lines(out))
    if (j.value("kind", "") == "summary") return j;
  return {};
}

std::vector<nlohmann::json> intervals_of(const std::string& out) {
  std::vector<nlohmann::json> v;
  for (const auto& j : json_lines(out))
    if (j.value("kind", "") == "interval") v.push_back(j);
  return v;
}

void expect_nothing_lost(const nlohmann::json& s) {
  for (const char* k : {"ring_lost", "unmatched_starts", "open_pauses", "malformed", "unread"})
    EXPECT_EQ(s["losses"][k], 0) << k << ": " << s.dump();
}

// With -c the probes are in before the program's first instruction: every goroutine it creates,
// every GC cycle and every pause is seen, and the program's output is what it is untraced.
void expect_runtime_counted(const std::string& binary) {
  const int rounds = 10, workers = 16;
  auto plain = run({binary, std::to_string(rounds), std::to_string(workers), "100"});
  ASSERT_EQ(plain.exit_code, 0);
  const std::string expected = lines_with(plain.out, "calls=").at(0);

  auto r = uscope({"stat", "--json", "-c",
                   binary + " " + std::to_string(rounds) + " " + std::to_string(workers) + " 100"},
                  120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_with(r.out, "calls=").at(0), expected) << "the traced program's output changed";
  auto s = summary_of(r.out);
  ASSERT_FALSE(s.is_null()) << r.out;
  const uint64_t spawned = rounds * workers;
  // The workers, and the runtime's own few (main, GC workers, sweeper, scavenger, ...).
  EXPECT_GE(s["created"].get<uint64_t>(), spawned) << s.dump();
  EXPECT_LE(s["created"].get<uint64_t>(), spawned + 64) << s.dump();
  // A worker's wg.Done runs before its goroutine ends: the last round's may still be ending when
  // main returns.
  EXPECT_GE(s["exited"].get<uint64_t>(), spawned - workers) << s.dump();
  EXPECT_LE(s["exited"].get<uint64_t>(), s["created"].get<uint64_t>()) << s.dump();
  // The cycles the runtime itself counted (each runtime.GC() completes one, allocation may start
  // more); each cycle stops the world exactly twice (sweep termination, mark termination), and
  // gostack does nothing else that stops it.
  const std::string counted = lines_with(r.out, "gc_cycles=").at(0);
  const uint64_t cycles = std::stoull(counted.substr(counted.find('=') + 1));
  EXPECT_GE(cycles, uint64_t(rounds)) << counted;
  EXPECT_EQ(s["gc_cycles"].get<uint64_t>(), cycles) << s.dump();
  EXPECT_EQ(s["stw"]["pauses"].get<uint64_t>(), 2 * cycles) << s.dump();
  EXPECT_GT(s["stw"]["max_ns"].get<uint64_t>(), 0u) << s.dump();
  expect_nothing_lost(s);
  EXPECT_TRUE(links_released("trace_"));
  EXPECT_TRUE(links_released("count_hit"));
}

TEST(go_stat, counts_goroutines_gc_cycles_and_pauses) {
  USCOPE_REQUIRE_ROOT();
  expect_runtime_counted(fixture("go/gostack"));
}

// Stripped (-ldflags='-s -w'): the runtime's functions are found through .gopclntab.
TEST(go_stat, counts_on_a_stripped_program) {
  USCOPE_REQUIRE_ROOT();
  expect_runtime_counted(fixture("go/gostack_stripped"));
}

// Attached to a busy program: each interval has the live goroutines (NumGoroutine's count and the
// runtime's own), the session ends when the program does, and the program is unharmed.
void attach_to_busy_program(const std::string& binary) {
  const std::string workers = "32";
  auto plain = run({binary, "3", workers, "100"});
  ASSERT_EQ(plain.exit_code, 0);
  const std::string expected = "after: " + lines_with(plain.out, "calls=").at(0);

  GatedProcess target({binary, "-3", workers, "100"});
  ASSERT_TRUE(target.wait_for_line("running"));
  auto u = RunningCommand::uscope(
      {"stat", "--json", "-i", "0.05", "-p", std::to_string(target.pid())}, 120);
  ASSERT_TRUE(wait_for_links(u.pid(), "trace_"));
  ASSERT_TRUE(wait_for_links(u.pid(), "count_hit"));
  ASSERT_TRUE(u.wait_for_output("\"kind\":\"interval\""));  // a census of the busy program
  target.start();
  std::string out;
  EXPECT_EQ(target.wait(&out), 0);
  EXPECT_NE(out.find(expected), std::string::npos) << out;
  auto r = u.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = summary_of(r.out);
  ASSERT_FALSE(s.is_null()) << r.out;
  EXPECT_GE(s["created"].get<uint64_t>(), 3u * 32) << s.dump();
  EXPECT_GE(s["gc_cycles"].get<uint64_t>(), 3u) << s.dump();
  EXPECT_EQ(s["losses"]["ring_lost"], 0) << s.dump();
  EXPECT_EQ(s["losses"]["malformed"], 0) << s.dump();
  auto first = intervals_of(r.out).at(0);
  ASSERT_FALSE(first["live"].is_null()) << first.dump() << "\n" << r.err;
  // main and the goroutine waiting for the gate, at least; the runtime's sweeper and others.
  EXPECT_GE(first["live"]["goroutines"].get<uint64_t>(), 2u) << first.dump();
  EXPECT_GE(first["live"]["runtime_goroutines"].get<uint64_t>(), 1u) << first.dump();
  EXPECT_EQ(s["losses"]["census_failures"], 0) << s.dump();
  EXPECT_TRUE(links_released("trace_"));
}

TEST(go_stat, attached_to_a_busy_program_reads_its_live_goroutines) {
  USCOPE_REQUIRE_ROOT();
  attach_to_busy_program(fixture("go/gostack"));
}

// Stripped: runtime.allgs has no symbol, and is found from the code of runtime.forEachG.
TEST(go_stat, attached_to_a_busy_stripped_program_reads_its_live_goroutines) {
  USCOPE_REQUIRE_ROOT();
  attach_to_busy_program(fixture("go/gostack_stripped"));
}

// goparked holds a fixed number of goroutines while it waits: every census taken then reads
// exactly what runtime.NumGoroutine() said inside the program.
void expect_live_goroutines_exact(const std::string& binary) {
  GatedProcess target({binary, "13"});
  ASSERT_TRUE(target.wait_for_line("parked"));
  auto u = RunningCommand::uscope(
      {"stat", "--json", "-i", "0.05", "-p", std::to_string(target.pid())}, 120);
  ASSERT_TRUE(u.wait_for_output("\"kind\":\"interval\""));  // a census of the waiting program
  target.start();
  std::string out;
  ASSERT_EQ(target.wait(&out), 0);
  const std::string said = lines_with(out, "goroutines=").at(0);
  const uint64_t expected = std::stoull(said.substr(said.find('=') + 1));
  EXPECT_EQ(expected, 14u) << said;  // the 13 and main
  auto r = u.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("live goroutines unknown"), std::string::npos) << r.err;
  auto intervals = intervals_of(r.out);
  ASSERT_FALSE(intervals.empty()) << r.out;
  // Taken before the gate opened; a later one may have found the program gone (no census).
  ASSERT_FALSE(intervals[0]["live"].is_null()) << intervals[0].dump() << "\n" << r.err;
  for (const auto& i : intervals) {
    if (!i["live"].is_null()) {
      EXPECT_EQ(i["live"]["goroutines"].get<uint64_t>(), expected) << i;
    }
  }
}

TEST(go_stat, live_goroutines_are_what_the_program_counts) {
  USCOPE_REQUIRE_ROOT();
  expect_live_goroutines_exact(fixture("go/goparked"));
}

TEST(go_stat, live_goroutines_of_a_stripped_program_are_what_it_counts) {
  USCOPE_REQUIRE_ROOT();
  expect_live_goroutines_exact(fixture("go/goparked_stripped"));
}

// A program that is neither Go nor a managed runtime: what stat reads is named.
TEST(go_stat, a_program_that_is_neither_go_nor_a_runtime_is_refused) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"stat", "-c", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/bin/true runs no runtime uscope stat knows: java (libjvm.so), python "
                       "(python3.X or libpython3.X.so), ruby (libruby), php (php), and Go"),
            std::string::npos)
      << r.err;
  auto none = uscope({"stat"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("-p PID or -c"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace uscope::e2e
