// User stacks walked by CFI in BPF (bpf/unwind.bpf.h): programs built without frame pointers, as
// Debian builds python3.11, redis-server and libc, unwind to their thread's entry; a library
// dlopen()ed mid-profile unwinds too; `trace -U` shows the same complete stacks. The goal of the
// unwinding issue is >= 99% of samples complete on these targets: it is asserted as such.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "e2e_support.h"
#include "folded.h"

namespace uscope::e2e {
namespace {

// The summary's "complete stacks: 99.6% (...)", as a fraction; -1 when absent.
double complete_share(const std::string& err) {
  auto at = err.find("complete stacks: ");
  if (at == std::string::npos) return -1;
  return std::stod(err.substr(at + 17)) / 100;
}

// The process entries: the main thread's and a pthread's.
const std::string kMainEntry = "_start;__libc_start_main;__libc_start_call_main;main;";
const std::string kThreadEntry = "clone3;start_thread;";

// uscope's "complete stacks" share is its own verdict; `rooted` is the share the test found
// reaching the fixture's known entries. Both must meet the goal, and uscope may not call more
// stacks complete than reach an entry (the summary rounds to 0.1%).
void expect_complete(const std::string& err, double rooted) {
  EXPECT_GE(rooted, 0.99) << "stacks reaching a known entry";
  EXPECT_GE(complete_share(err), 0.99) << err;
  EXPECT_LE(complete_share(err), rooted + 0.0005) << err;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult profile_pid(pid_t pid, const std::string& seconds = "2") {
  return uscope({"profile", "-F", "199", "-d", seconds, "--format", "folded", "-v", "-p",
                 std::to_string(pid)});
}

TEST(unwind, no_frame_pointer_fixture_reaches_every_thread_entry) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({fixture("unwind/nofp_spin")});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto r = profile_pid(target.pid());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  ASSERT_GT(total(lines), 0u) << r.err;
  // Once "ready", every thread is in spin_loop for good: a complete stack is one of these.
  expect_complete(r.err, share_rooted_at(lines, {kMainEntry + "spin_loop;",
                                                 kThreadEntry + "spin_thread;spin_loop;"}));
  // The whole chain, through a VLA's rbp-based frame and a function using every callee-saved
  // register, on the main thread and on the pthreads.
  const std::string chain =
      "spin_loop;spin_level1;spin_level2;spin_level2;spin_level2;spin_level2;"
      "spin_level3;spin_level4;spin_level5;";
  EXPECT_GT(share_with(lines, kMainEntry + chain), 0.1) << r.out;
  EXPECT_GT(share_with(lines, "start_thread;spin_thread;" + chain), 0.2) << r.out;
  // Across the PLT into the no-frame-pointer library.
  EXPECT_GT(share_with(lines, "spin_level5;nofp_lib_entry;nofp_lib_leaf;"), 0.1) << r.out;
  EXPECT_NE(r.err.find("unwind tables: "), std::string::npos) << r.err;  // -v's table line
  EXPECT_TRUE(links_released("unwind_on_exec"));
}

TEST(unwind, signal_handler_stacks_cross_the_signal_frame) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({fixture("unwind/nofp_signal")});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto r = profile_pid(target.pid());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  // One thread, in main for good once "ready".
  expect_complete(r.err, share_rooted_at(lines, {kMainEntry}));
  // From the handler through the kernel's signal frame (__restore_rt's CFI) to the code it
  // interrupted, and on to _start.
  EXPECT_GT(
      share_with(
          lines,
          kMainEntry + "interrupted_outer;interrupted_leaf;__restore_rt;on_sigprof;handler_spin;"),
      0.5)
      << r.out;
}

TEST(unwind, python_stacks_reach_their_entry) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({"/usr/bin/python3.11", "-c",
                         "def fib(n):\n"
                         "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
                         "print('ready', flush=True)\n"
                         "while True:\n"
                         "    fib(24)\n"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto r = profile_pid(target.pid());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  // One thread, running the script for good once it printed "ready". python's main() is
  // `return Py_BytesMain(argc, argv);`, a tail call: its frame is gone.
  expect_complete(r.err, share_rooted_at(lines, {"_start;__libc_start_main;__libc_start_call_main;"
                                                 "Py_BytesMain;Py_RunMain;"}));
}

TEST(unwind, redis_under_load_reaches_its_entry) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({"/usr/bin/redis-server", "--port", std::to_string(port), "--bind",
                       "127.0.0.1", "--save", "", "--appendonly", "no"});
  ASSERT_TRUE(wait_for_port(port)) << "redis-server did not start";
  RunningCommand load(
      {"redis-benchmark", "-p", std::to_string(port), "-q", "-l", "-t", "set,get", "-c", "50"});
  ASSERT_TRUE(wait_until("redis-benchmark's first 10,000 commands", [&] {
    auto info = shell("redis-cli -p " + std::to_string(port) + " info stats");
    auto at = info.find("total_commands_processed:");
    return at != std::string::npos && std::stoull(info.substr(at + 25)) > 10000;
  }));
  auto r = profile_pid(server.pid());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  // The event loop, and redis's background threads (bio, io threads), which start in pthreads.
  expect_complete(r.err, share_rooted_at(lines, {kMainEntry + "aeMain;", kThreadEntry}));
  EXPECT_GT(share_with(lines, "main;aeMain;"), 0.5) << r.out;
}

TEST(unwind, library_dlopened_mid_profile_unwinds) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("unwind/dlopen_late")});
  ASSERT_TRUE(target.wait_for_line("ready"));
  std::string out = testing::TempDir() + "uscope_unwind_" + std::to_string(getpid()) + ".folded";
  auto profiler = RunningCommand::uscope(
      {"profile", "-F", "199", "-i", "0.2", "-o", out, "-p", std::to_string(target.pid())});
  ASSERT_TRUE(wait_for_links(profiler.pid(), "profile_sample"));
  target.start();  // it dlopen()s libnofp_late.so and spins there
  ASSERT_TRUE(target.wait_for_line("loaded"));
  const std::string late =
      "_start;__libc_start_main;__libc_start_call_main;main;run_late;"
      "late_outer;late_middle;late_leaf;";
  // Samples taken before the walker's request was served may be cut (how many depends on how soon
  // uscope is scheduled: many under ASan on a loaded machine); every one after is complete, so
  // their share grows for as long as the fixture spins there, and a tenth is waited for.
  EXPECT_TRUE(wait_until(
      "a tenth of the samples through the library unwound to _start",
      [&] { return share_with(parse_folded(read_file(out)), late) > 0.1; },
      std::chrono::seconds(120)));
  profiler.signal(SIGINT);
  auto r = profiler.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(share_with(parse_folded(read_file(out)), late), 0.1) << read_file(out);
  std::remove(out.c_str());
}

TEST(unwind, trace_shows_complete_stacks_without_frame_pointers) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({fixture("unwind/nofp_spin")});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto r =
      uscope({"trace", "-U", "-M", "20", "--format", "json", "-p", std::to_string(target.pid()),
              "p:" + fixture("unwind/nofp_spin") + ":spin_leaf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t events = 0;
  for (const auto& e : json_lines(r.out)) {
    if (e.value("kind", "") != "event") continue;
    ++events;
    ASSERT_EQ(e.value("stack_end", ""), "entry") << e.dump();
    std::string chain;
    for (const auto& f : e["stack"]) chain = f.value("function", "?") + ";" + chain;
    EXPECT_NE(chain.find("spin_level3;spin_level4;spin_level5;spin_leaf;"), std::string::npos)
        << chain;
    EXPECT_TRUE(chain.starts_with("_start;") || chain.starts_with("clone3;")) << chain;
  }
  EXPECT_EQ(events, 20u) << r.out;
}

}  // namespace
}  // namespace uscope::e2e
