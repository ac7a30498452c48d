// profile --off-cpu and --wall on a fixture whose threads time their own waits
// (tests/fixtures/native/offcpu_waits.c): the time uscope puts under each known function and
// reason is checked against the fixture's own clock.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "e2e_support.h"
#include "folded.h"
#include "session_support.h"

namespace uscope::e2e {
namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "uscope_offcpu_" + std::to_string(getpid()) + "_" + name;
}

// The fixture's own totals: "sleep_ns N" lines.
std::map<std::string, double> fixture_totals(const std::string& out) {
  std::map<std::string, double> totals;
  std::istringstream in(out);
  std::string name;
  double value = 0;
  while (in >> name) {
    if (name == "ready") continue;
    if (in >> value) totals[name] = value;
  }
  return totals;
}

struct Profiled {
  std::vector<FoldedLine> lines;  // folded, counts in microseconds
  std::map<std::string, double> fixture;
  std::string err;
};

// Profiles `program` (a fixture that times its own waits) with `args` until it exits, and reads
// both: by PID, started first and let go (SIGUSR1) once the profile runs; or under -c, started by
// uscope with "now" (no waiting: the profile begins at its exec).
enum class Start { ByPid, Launched };
Profiled profile_waits(std::vector<std::string> args, int rounds, Start start = Start::ByPid,
                       const std::string& program = "native/offcpu_waits") {
  Profiled p;
  const std::string out = temp_path("offcpu.folded");
  args.insert(args.begin(), "profile");
  if (start == Start::Launched) {
    args.insert(args.end(),
                {"-c", fixture(program) + " " + std::to_string(rounds) + " now", "-o", out});
    auto r = uscope(args, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    p.err = r.err;
    p.fixture = fixture_totals(r.out);
  } else {
    UscopeChild target({fixture(program), std::to_string(rounds)}, true);
    EXPECT_TRUE(wait_until([&] { return target.out().find("ready") != std::string::npos; }));
    args.insert(args.end(), {"-p", std::to_string(target.pid()), "-o", out});
    UscopeChild profiler(args);
    EXPECT_TRUE(wait_until([&] {
      return profiler.err().find("Ctrl-C to stop") != std::string::npos;
    })) << profiler.err();
    target.signal(SIGUSR1);
    EXPECT_EQ(target.wait(120), 0);
    EXPECT_EQ(profiler.wait(60), 0) << profiler.err();
    p.err = profiler.err();
    p.fixture = fixture_totals(target.out());
  }
  p.lines = parse_folded(file_text(out));
  std::remove(out.c_str());
  return p;
}

// Microseconds of the stacks holding every one of `parts`, as nanoseconds.
double ns_with(const std::vector<FoldedLine>& lines, std::vector<std::string> parts,
               const std::string& comm = "") {
  double us = 0;
  for (const auto& l : lines) {
    if (!comm.empty() && l.frames[0].rfind(comm, 0) != 0) continue;
    const std::string j = joined(l);
    bool all = true;
    for (const auto& part : parts) all = all && j.find(part) != std::string::npos;
    if (all) us += static_cast<double>(l.count);
  }
  return us * 1000;
}

// The sleeper's and the waiter's time, under their functions and reasons, as their clocks say.
// The idler's wait began before the profile (by PID: before the tracer started): under its
// function, for at least its part after SIGUSR1 (the profile ran by then) and at most the whole,
// with its kernel frames, from the stacks read as the profile started. (Under -c it begins within
// a millisecond of the exec, where a stack can still be cut while tables load: not checked there.)
void expect_idle_wait(Profiled& p, const std::string& comm = "") {
  const double idle_seen = ns_with(p.lines, {";idle_in_known_place;", ";[off-CPU: I/O]"}, comm);
  EXPECT_GE(idle_seen, 0.99 * p.fixture["idle_after_go_ns"]) << p.err;
  EXPECT_LE(idle_seen, p.fixture["idle_ns"]) << p.err;
  EXPECT_EQ(ns_with(p.lines, {";idle_in_known_place;", "_[k];[off-CPU: I/O]"}, comm), idle_seen);
  // Its one wait is I/O: no other reason (after it wakes, a wall profile's run queue or CPU).
  for (std::string other : {"lock", "sleep", "other", "child wait"})
    EXPECT_EQ(ns_with(p.lines, {";idle_in_known_place;", ";[off-CPU: " + other + "]"}, comm), 0);
}

void expect_sleep_and_lock(Profiled& p) {
  ASSERT_EQ(p.fixture.size(), 5u) << p.err;
  const double sleep_ns = p.fixture["sleep_ns"], lock_ns = p.fixture["lock_wait_ns"];
  ASSERT_GT(sleep_ns, 25 * 10e6 * 0.99);  // 25 naps of 10 ms
  // The sleep: under its function, with its reason as the leaf, in the kernel's nanosleep.
  const double sleep_seen = ns_with(p.lines, {";sleep_in_known_place;", ";[off-CPU: sleep]"});
  EXPECT_NEAR(sleep_seen, sleep_ns, 0.1 * sleep_ns) << p.err;
  // The lock: the waiter's time in pthread_mutex_lock, a futex wait.
  const double lock_seen = ns_with(p.lines, {";wait_for_the_lock;", ";[off-CPU: lock]"});
  EXPECT_NEAR(lock_seen, lock_ns, 0.1 * lock_ns) << p.err;
  // The holder sleeps while it holds the lock: its sleep, not a lock wait.
  EXPECT_GT(ns_with(p.lines, {";hold_the_lock;", ";[off-CPU: sleep]"}), 25 * 20e6 * 0.9);
  EXPECT_EQ(ns_with(p.lines, {";hold_the_lock;", ";[off-CPU: lock]"}), 0);
  // Kernel frames are there, with their suffix, below the reason.
  EXPECT_GT(ns_with(p.lines, {";sleep_in_known_place;", "_[k];[off-CPU: sleep]"}), 0.9 * sleep_ns);
  // The spinner never waits but for a CPU: no sleep or lock of its.
  EXPECT_EQ(ns_with(p.lines, {";spin_in_known_place;", ";[off-CPU: sleep]"}), 0);
  EXPECT_EQ(ns_with(p.lines, {";spin_in_known_place;", ";[off-CPU: lock]"}), 0);
  EXPECT_NE(p.err.find(" off-CPU from 1 process"), std::string::npos) << p.err;
}

TEST(offcpu, sleep_and_lock_waits_are_named_with_the_fixtures_durations) {
  USCOPE_REQUIRE_ROOT();
  auto p = profile_waits({"--off-cpu"}, 25);
  expect_sleep_and_lock(p);
  expect_idle_wait(p);
}

// The same with the fixture started by uscope: its threads' waits from its exec on.
TEST(offcpu, sleep_and_lock_waits_of_a_command_from_its_start) {
  USCOPE_REQUIRE_ROOT();
  auto p = profile_waits({"--off-cpu"}, 25, Start::Launched);
  expect_sleep_and_lock(p);
}

// A Go program's goroutines: each wait under its function with Go's own reason (its
// runtime.waitReasonStrings: "chan receive", "semacquire", "sleep") as the leaf, for as long as
// the goroutine's clock says; not a thread asleep in runtime.park_m.
void expect_goroutine_waits(Profiled& p) {
  ASSERT_EQ(p.fixture.size(), 4u) << p.err;
  const double chan_ns = p.fixture["chan_wait_ns"], lock_ns = p.fixture["lock_wait_ns"];
  ASSERT_GT(chan_ns, 25 * 10e6 * 0.99);  // 25 receives of a value sent 10 ms later
  const double chan_seen = ns_with(
      p.lines, {";main.receiveInKnownPlace;", ";runtime.gopark;[off-CPU: goroutine chan receive]"});
  EXPECT_NEAR(chan_seen, chan_ns, 0.1 * chan_ns) << p.err;
  const double lock_seen = ns_with(
      p.lines, {";main.lockInKnownPlace;sync.(*Mutex).Lock;", "[off-CPU: goroutine semacquire]"});
  EXPECT_NEAR(lock_seen, lock_ns, 0.1 * lock_ns) << p.err;
  // The holder and the sender sleep in time.Sleep: parked asleep, 20 and 10 ms a round.
  EXPECT_GT(ns_with(p.lines, {";main.holdTheLock;time.Sleep;", "[off-CPU: goroutine sleep]"}),
            25 * 20e6 * 0.9);
  EXPECT_GT(ns_with(p.lines, {";main.sendLater;time.Sleep;", "[off-CPU: goroutine sleep]"}),
            25 * 10e6 * 0.9);
  // The idler, parked since before the profile (by PID: read as it started), until the end.
  const double idle_seen = ns_with(
      p.lines, {";main.idleInKnownPlace;", ";runtime.gopark;[off-CPU: goroutine chan receive]"});
  EXPECT_GE(idle_seen, 0.99 * p.fixture["idle_after_go_ns"]) << p.err;
  EXPECT_LE(idle_seen, p.fixture["idle_ns"]) << p.err;
  EXPECT_EQ(ns_with(p.lines, {";main.idleInKnownPlace;"}), idle_seen);
  EXPECT_NE(p.err.find("the time its threads and goroutines wait"), std::string::npos) << p.err;
}

TEST(offcpu, goroutines_parked_show_gos_reason_and_the_fixtures_durations) {
  USCOPE_REQUIRE_ROOT();
  auto p = profile_waits({"--off-cpu"}, 25, Start::ByPid, "go/gowaits");
  expect_goroutine_waits(p);
}

TEST(offcpu, goroutines_of_a_command_from_its_start) {
  USCOPE_REQUIRE_ROOT();
  auto p = profile_waits({"--off-cpu"}, 25, Start::Launched, "go/gowaits");
  expect_goroutine_waits(p);
}

// --wall --threads: each thread's picture adds up to its wall time; the spinner's is on-CPU (or
// waiting for a CPU, with both cores busy), the sleeper's asleep.
TEST(offcpu, wall_splits_a_spinning_thread_from_a_sleeping_one) {
  USCOPE_REQUIRE_ROOT();
  auto p = profile_waits({"--wall", "--threads", "-F", "499"}, 25);
  ASSERT_EQ(p.fixture.size(), 5u);
  const double spin_ns = p.fixture["spin_ns"];
  auto thread_total = [&](const std::string& comm) { return ns_with(p.lines, {}, comm); };
  const double sleeper = thread_total("sleeper-"), spinner = thread_total("spinner-");
  // The sleeper lives as long as its naps, the spinner as long as its spin.
  EXPECT_NEAR(sleeper, p.fixture["sleep_ns"], 0.1 * p.fixture["sleep_ns"]) << p.err;
  EXPECT_NEAR(spinner, spin_ns, 0.1 * spin_ns) << p.err;
  EXPECT_GT(ns_with(p.lines, {";[off-CPU: sleep]"}, "sleeper-"), 0.9 * sleeper);
  // While it spins (its start and exit may wait on the process's locks, under load).
  const double spinner_waits =
      ns_with(p.lines, {";spin_in_known_place;", ";[off-CPU: "}, "spinner-");
  const double spinner_queued =
      ns_with(p.lines, {";spin_in_known_place;", ";[off-CPU: run queue]"}, "spinner-");
  EXPECT_EQ(spinner_waits, spinner_queued) << "the spinner only ever waits for a CPU";
  EXPECT_GT(ns_with(p.lines, {";spin_in_known_place;"}, "spinner-"), 0.9 * spinner);
  // The idler, blocked since before the profile: its whole time there, waiting.
  const double idler = thread_total("idler-");
  EXPECT_GT(ns_with(p.lines, {";idle_in_known_place;", ";[off-CPU: I/O]"}, "idler-"), 0.9 * idler);
  expect_idle_wait(p, "idler-");
  EXPECT_NE(p.err.find("of wall-clock time"), std::string::npos) << p.err;
}

// --wakers: each lock wait of the waiter was ended by the holder letting the lock go; its stack is
// above the wait's, upside down, as bcc's offwaketime draws it.
TEST(offcpu, wakers_name_the_thread_that_let_the_lock_go) {
  USCOPE_REQUIRE_ROOT();
  auto p = profile_waits({"--off-cpu", "--wakers"}, 25);
  ASSERT_EQ(p.fixture.size(), 5u);
  const double lock_ns = p.fixture["lock_wait_ns"];
  const double by_holder =
      ns_with(p.lines, {";wait_for_the_lock;", ";[off-CPU: lock];[woken by holder-", "_[k];",
                        ";holder;start_thread;clone3;"});
  EXPECT_NEAR(by_holder, lock_ns, 0.1 * lock_ns) << p.err;
  // Nothing else woke the waiter from its lock waits.
  EXPECT_EQ(ns_with(p.lines, {";wait_for_the_lock;", ";[off-CPU: lock];"}), by_holder);
}

TEST(offcpu, bad_combinations_say_what_works) {
  USCOPE_REQUIRE_ROOT();
  auto both = uscope({"profile", "--off-cpu", "--wall", "-c", "true"});
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("--wall already holds the off-CPU time"), std::string::npos) << both.err;
  for (std::string flag : {"--min-block=100", "--wakers"}) {
    auto r = uscope({"profile", flag, "-c", "true"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("give it with --off-cpu or --wall"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace uscope::e2e
