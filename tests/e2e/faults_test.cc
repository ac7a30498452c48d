// What the target or the user can do to a running session: the target is killed, exits, execs,
// forks or stays a zombie; uscope itself is SIGKILLed. Each session ends on its own with its
// summary, detaches and exits 0; a killed uscope leaves nothing attached and every USDT semaphore
// back at 0. And when the target changes between discovery and attach, the error says what it did.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "attach/attach_race.h"
#include "collect/hit_counts.h"
#include "discover/process.h"
#include "plan/planner.h"
#include "plan/probe_spec.h"
#include "session_support.h"

namespace uscope::e2e {
namespace {

const std::vector<std::string> kCommands = {"trace", "count", "latency"};

// The command's arguments probing `function` in `object` of process `pid`; -v so that trace says
// when it has attached.
std::vector<std::string> session_args(const std::string& cmd, pid_t pid, const std::string& object,
                                      const std::string& function) {
  std::string probe = object + ":" + function;
  return {cmd, "-v", "-p", std::to_string(pid), cmd == "trace" ? "p:" + probe : probe};
}

// Waits until the session says it has attached every site.
bool attached(const UscopeChild& s, const std::string& cmd) {
  const char* said = cmd == "trace" ? "sites attached" : cmd == "count" ? "counting" : "timing";
  return wait_until([&] { return s.err().find(said) != std::string::npos; });
}

// Detached: nothing left held by the session or by nobody (links of other sessions on this
// machine may take a moment to go after their process exits).
bool nothing_attached(pid_t session) {
  return wait_until([&] {
    return bpf_links_of_programs("trace_", session).empty() &&
           bpf_links_of_programs("count_hit", session).empty();
  });
}

// `why` is in the text summary on stderr, or in the JSON summary on stdout.
void expect_clean_end(UscopeChild& s, const std::string& cmd, const std::string& why) {
  EXPECT_EQ(s.wait(), 0) << cmd << ": " << s.err();
  EXPECT_NE((s.err() + s.out()).find(why), std::string::npos) << cmd << ": " << s.err();
  if (cmd == "trace") {
    EXPECT_TRUE(s.err().find("events printed") != std::string::npos ||
                s.out().find("\"kind\":\"summary\"") != std::string::npos)
        << s.err();
  }
  if (cmd == "count") {
    // The final table (work() has a row only if it ran after the attach: not a given when the
    // target is killed at once on a loaded machine).
    EXPECT_NE(s.out().find("COUNT"), std::string::npos) << s.out();
  }
  EXPECT_TRUE(nothing_attached(s.pid()));
}

TEST(faults, target_sigkilled_ends_each_session) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("native/exec_after");
  for (const auto& cmd : kCommands) {
    GatedProcess target({exe, "100000"});
    UscopeChild s(session_args(cmd, target.pid(), exe, "work"));
    ASSERT_TRUE(attached(s, cmd)) << cmd << ": " << s.err();
    kill(target.pid(), SIGKILL);
    EXPECT_EQ(target.wait(), 128 + SIGKILL);
    expect_clean_end(s, cmd, "target exited");
  }
}

TEST(faults, target_exit_ends_each_session) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("native/target_loop");
  for (const auto& cmd : kCommands) {
    GatedProcess target({exe, "2000"});
    UscopeChild s(session_args(cmd, target.pid(), exe, "work"));
    ASSERT_TRUE(attached(s, cmd)) << s.err();
    target.start();
    EXPECT_EQ(target.wait(), 0);
    expect_clean_end(s, cmd, "target exited");
  }
}

// Ctrl-C and then a SIGTERM, or a signal to the process and then to its group (as a shell or a
// script may send): the second asks for the stop the first began, and never kills uscope with its
// default action once the session has wound down (standard signals do not queue: a second SIGINT
// would merge with the first, a SIGTERM stays pending through the stop).
TEST(faults, a_second_stop_signal_during_the_stop_ends_cleanly) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("native/target_loop");
  for (const auto& cmd : kCommands) {
    GatedProcess target({exe, "100000"});
    UscopeChild s(session_args(cmd, target.pid(), exe, "work"));
    ASSERT_TRUE(attached(s, cmd)) << cmd << ": " << s.err();
    target.start();
    kill(s.pid(), SIGINT);
    kill(s.pid(), SIGTERM);
    expect_clean_end(s, cmd, "interrupted");
  }
}

TEST(faults, target_exec_ends_each_session) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("native/exec_after");
  for (const auto& cmd : kCommands) {
    // Execs sleep when told, once the session has attached: never a race with a slow attach
    // (AttachRace.target_exec_is_named covers an exec while attaching).
    GatedProcess target({exe, "--until-stdin"});
    UscopeChild s(session_args(cmd, target.pid(), exe, "work"));
    ASSERT_TRUE(attached(s, cmd)) << cmd << ": " << s.err();
    target.send("x");
    expect_clean_end(s, cmd, "exec'd");
    // Ended at the exec, not at an exit: the exec'd `sleep 30` still runs.
    EXPECT_EQ(waitpid(target.pid(), nullptr, WNOHANG), 0) << cmd << ": the target exited";
  }
}

TEST(faults, zombie_target_ends_the_session) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("native/fork_work");
  GatedProcess parent({exe, "0", "zombie"});
  parent.start();
  // The child that calls work() until killed; its parent never reaps it.
  pid_t child = 0;
  ASSERT_TRUE(wait_until([&] {
    std::ifstream in("/proc/" + std::to_string(parent.pid()) + "/task/" +
                     std::to_string(parent.pid()) + "/children");
    return static_cast<bool>(in >> child);
  }));
  UscopeChild s(session_args("trace", child, exe, "work"));
  ASSERT_TRUE(attached(s, "trace")) << s.err();
  kill(child, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return process_exited(child); }));
  EXPECT_TRUE(process_alive(child)) << "the child should stay a zombie";
  expect_clean_end(s, "trace", "target exited");
}

TEST(faults, children_of_a_pid_target_are_not_traced) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("native/fork_work");
  GatedProcess target({exe, "300"});
  UscopeChild s(
      {"trace", "-v", "--json", "-p", std::to_string(target.pid()), "p:" + exe + ":work"});
  ASSERT_TRUE(attached(s, "trace")) << s.err();
  target.start();
  EXPECT_EQ(target.wait(), 0);
  expect_clean_end(s, "trace", "target exited");
  size_t events = 0;
  std::istringstream out(s.out());
  std::string line;
  while (std::getline(out, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] != "event") continue;
    ++events;
    EXPECT_EQ(j["pid"], target.pid()) << "an event from the forked child: " << line;
  }
  EXPECT_EQ(events, 300u) << s.err();
  // And --help says so.
  auto help = uscope({"trace", "--help"});
  EXPECT_NE(help.out.find("processes it forks are not traced"), std::string::npos) << help.out;
}

TEST(faults, sigkilled_uscope_leaves_nothing_attached_and_semaphores_at_zero) {
  USCOPE_REQUIRE_ROOT();
  const std::string demo = fixture("usdt/usdt_demo");
  auto listed = uscope({"list", "--json", demo, "usdt_demo:guarded"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto probe = nlohmann::json::parse(listed.out.substr(0, listed.out.find('\n')));
  uint64_t sem = probe["locations"][0]["semaphore_offset"];
  ASSERT_NE(sem, 0u);
  for (const auto& cmd : kCommands) {
    if (cmd == "latency") continue;              // latency probes functions, not USDT
    GatedProcess target({demo, "1", "600000"});  // sleeps 10 minutes before firing
    ASSERT_TRUE(wait_until([&] { return read_usdt_semaphore(target.pid(), sem, demo) == 0; }));
    std::string spec = "u:" + demo + ":usdt_demo:guarded";
    UscopeChild s({cmd, "-p", std::to_string(target.pid()), spec});
    ASSERT_TRUE(wait_until([&] { return read_usdt_semaphore(target.pid(), sem, demo) >= 1; }))
        << cmd << ": " << s.err();
    s.signal(SIGKILL);
    EXPECT_EQ(s.wait(), 128 + SIGKILL);
    EXPECT_TRUE(wait_until([&] { return read_usdt_semaphore(target.pid(), sem, demo) == 0; }))
        << cmd << ": semaphore stays " << read_usdt_semaphore(target.pid(), sem, demo);
    EXPECT_TRUE(nothing_attached(s.pid()));
  }
}

// Races between discovery and attach, made deterministic: plan against the process, change it,
// wait until the change is visible, then attach what was planned.
class AttachRace : public ::testing::Test {
 protected:
  // Plans `spec` against process `pid`, once it maps libc.
  std::vector<AttachSite> plan(pid_t pid, const std::string& spec) {
    EXPECT_TRUE(wait_until([&] {
      return shell("cat /proc/" + std::to_string(pid) + "/maps").find("libc.so") !=
             std::string::npos;
    }));
    auto p = Process::open(pid);
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    process_ = std::move(*p);
    TargetContext ctx{&*process_, "", pid};
    ObjectCache cache(ctx);
    auto parsed = parse_probe_spec(spec);
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message);
    std::vector<ProbeSpec> specs{*parsed};
    auto planned = plan_trace(cache, specs, {});
    EXPECT_TRUE(planned) << (planned ? "" : planned.error().message);
    std::vector<AttachSite> sites;
    for (const auto& s : planned->sites) sites.push_back(s.attach);
    return sites;
  }
  // Attaches `sites` and returns the message a user would read.
  std::string attach_message(pid_t pid, const std::vector<AttachSite>& sites) {
    auto counts = HitCounts::attach(sites, {pid}, true);
    if (counts) return "attached";
    return explain_attach_failure(counts.error(), pid, process_->exe(), sites).message;
  }
  std::optional<Process> process_;
};

TEST_F(AttachRace, target_exec_is_named) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess sh({"/bin/sh", "-c", "head -c1 >/dev/null; exec /bin/sleep 60"});
  auto sites = plan(sh.pid(), "p:c:malloc");
  ASSERT_FALSE(sites.empty());
  ExeIdentity before = exe_identity(sh.pid());
  sh.start();
  ASSERT_TRUE(wait_until([&] { return exe_identity(sh.pid()) != before; }));
  std::string msg = attach_message(sh.pid(), sites);
  EXPECT_EQ(msg, "process " + std::to_string(sh.pid()) +
                     " exec'd /usr/bin/sleep while uscope was attaching");
}

TEST_F(AttachRace, target_exit_is_named) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess sh({"/bin/sh", "-c", "head -c1 >/dev/null"});
  auto sites = plan(sh.pid(), "p:c:malloc");
  ASSERT_FALSE(sites.empty());
  sh.start();
  ASSERT_TRUE(wait_until([&] { return process_exited(sh.pid()); }));
  EXPECT_EQ(attach_message(sh.pid(), sites),
            "process " + std::to_string(sh.pid()) + " exited while uscope was attaching");
}

TEST_F(AttachRace, unmapped_library_is_named) {
  USCOPE_REQUIRE_ROOT();
  const std::string lib = fixture("usdt/libusdt_lib.so");
  GatedProcess py({"/usr/bin/python3.11", "-c",
                   "import ctypes, _ctypes, sys, time\n"
                   "h = ctypes.CDLL('" +
                       lib +
                       "')._handle\n"
                       "sys.stdin.buffer.read(1)\n"
                       "_ctypes.dlclose(h)\n"
                       "time.sleep(60)\n"});
  auto mapped = [&] { return shell("cat /proc/" + std::to_string(py.pid()) + "/maps").find(lib); };
  ASSERT_TRUE(wait_until([&] { return mapped() != std::string::npos; }));
  auto sites = plan(py.pid(), "p:" + lib + ":usdt_lib_call");
  ASSERT_FALSE(sites.empty());
  py.start();
  ASSERT_TRUE(wait_until([&] { return mapped() == std::string::npos; }));
  EXPECT_EQ(attach_message(py.pid(), sites), "process " + std::to_string(py.pid()) + " unmapped " +
                                                 lib + " while uscope was attaching");
}

}  // namespace
}  // namespace uscope::e2e
