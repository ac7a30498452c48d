// Every user-space line of bcc's tools/trace_example.txt and of trace.py's --help EXAMPLES, typed
// as bcc's users type them (options after the spec included), against programs whose calls are
// known: bcc's columns and messages must come out. Lines whose feature is on another helper's
// branch are kept and skipped with the feature they need.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// One event line: "[TIME ][CPU ]PID TID COMM FUNC[ MESSAGE]".
struct EventLine {
  std::string time, cpu;
  int pid = 0, tid = 0;
  std::string comm, func, message;
};

// bcc's header for these columns.
std::string bcc_header(bool message, const std::string& time = "", bool cpu = false) {
  std::string h;
  if (!time.empty()) h += time;
  if (cpu) h += "CPU ";
  h += "PID     TID     COMM            FUNC";
  if (message) h += "             -";
  return h;
}

// The event lines of `out` (stdout of uscope, with the traced command's own output around them).
std::vector<EventLine> events(const std::string& out, bool time = false, bool cpu = false) {
  std::string re = "^";
  if (time) re += R"((\S+) +)";
  if (cpu) re += R"((\d+) +)";
  re += R"((\d+) +(\d+) +(\S+) +(\S+)(?: +(.*))?$)";
  std::regex line_re(re);
  std::vector<EventLine> found;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written to a pty
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    EventLine e;
    size_t i = 1;
    if (time) e.time = m[i++];
    if (cpu) e.cpu = m[i++];
    e.pid = std::stoi(m[i++]);
    e.tid = std::stoi(m[i++]);
    e.comm = m[i++];
    e.func = m[i++];
    e.message = m[i++];
    found.push_back(e);
  }
  return found;
}

std::vector<std::string> messages(const std::vector<EventLine>& lines) {
  std::vector<std::string> m;
  for (const auto& l : lines) m.push_back(l.message);
  return m;
}

bool has_line(const std::string& out, const std::string& line) {
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

std::string example() {
  return fixture("bcc/bcc_example");
}

// A fresh directory for the files the fixture opens by relative name ("test.txt").
std::string temp_dir() {
  std::string tmpl = ::testing::TempDir() + "/bcc_examples.XXXXXX";
  char* d = mkdtemp(tmpl.data());
  return d ? std::string(d) : ::testing::TempDir();
}

// `uscope trace -c 'bcc_example MODE ARGS' LINE...`: bcc's line with -c instead of -p.
CommandResult trace_example(const std::string& mode, const std::vector<std::string>& line) {
  std::vector<std::string> args = {"trace", "-c", example() + " " + mode};
  args.insert(args.end(), line.begin(), line.end());
  return uscope(args);
}

// `uscope trace -p PID LINE...` on bcc_example MODE, started once uscope has attached: what a
// user does for library names the command has not loaded yet (-c resolves them before the exec,
// through ld.so.cache; -p among the process's own mappings, here the fixture's libpthread).
CommandResult trace_running_example(const std::string& mode, const std::string& mapped,
                                    const std::vector<std::string>& line) {
  GatedProcess target({example(), mode});
  EXPECT_TRUE(wait_for_mapping(target.pid(), mapped));
  std::vector<std::string> args = {"trace", "-p", std::to_string(target.pid())};
  args.insert(args.end(), line.begin(), line.end());
  auto tracer = RunningCommand::uscope(args);
  EXPECT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  target.start();
  EXPECT_EQ(target.wait(), 0);
  return tracer.finish();  // ends with the target
}

// trace 'c:open (arg2 == 42) "%s %d", arg1, arg2'
TEST(bcc_trace_example, open_with_flags_42) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("files " + temp_dir(), {R"(c:open (arg2 == 42) "%s %d", arg1, arg2)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, bcc_header(true))) << r.out;
  auto ev = events(r.out);
  ASSERT_EQ(ev.size(), 1u) << r.out;
  EXPECT_EQ(ev[0].comm, "bcc_example");
  EXPECT_EQ(ev[0].func, "open");
  EXPECT_EQ(ev[0].pid, ev[0].tid);
  EXPECT_EQ(ev[0].message, "test.txt 42");
}

// trace 'c:malloc "size = %d", arg1'
TEST(bcc_trace_example, malloc_sizes) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("malloc", {R"(c:malloc "size = %d", arg1)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, bcc_header(true))) << r.out;
  auto ev = events(r.out);
  auto m = messages(ev);
  EXPECT_NE(std::find(m.begin(), m.end(), "size = 4242"), m.end()) << r.out;
  for (const auto& e : ev) {
    EXPECT_EQ(e.func, "malloc");
    EXPECT_TRUE(std::regex_match(e.message, std::regex(R"(size = \d+)"))) << e.message;
  }
}

// trace 'p:c:write (arg1 == 1) "writing %d bytes to STDOUT", arg3'
TEST(bcc_trace_example, writes_to_stdout) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("files " + temp_dir(),
                         {R"(p:c:write (arg1 == 1) "writing %d bytes to STDOUT", arg3)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ev = events(r.out);
  // The fixture's one write to fd 1; its write to fd -1 is filtered in the kernel.
  ASSERT_EQ(ev.size(), 1u) << r.out;
  EXPECT_EQ(ev[0].func, "write");
  EXPECT_EQ(ev[0].message, "writing 6 bytes to STDOUT");
  EXPECT_EQ(summary_count(r.err, " filtered out"), 1) << r.err;
}

// trace 'r:c:malloc (retval) "allocated = %x", retval'
TEST(bcc_trace_example, non_null_mallocs) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("malloc", {R"(r:c:malloc (retval) "allocated = %x", retval)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(ptr=([0-9a-f]+))"))) << r.out;
  // %x prints an int's worth of the pointer, as C's printf (and bcc) do.
  std::string ptr = m[1];
  std::string low = ptr.size() > 8 ? ptr.substr(ptr.size() - 8) : ptr;
  while (low.size() > 1 && low[0] == '0') low.erase(0, 1);
  auto msgs = messages(events(r.out));
  EXPECT_NE(std::find(msgs.begin(), msgs.end(), "allocated = " + low), msgs.end()) << r.out;
}

// trace 'u:pthread:pthread_create (arg4 != 0)'
TEST(bcc_trace_example, pthread_create_usdt_with_an_argument) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_running_example("threads", "libpthread", {"u:pthread:pthread_create (arg4 != 0)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No format: bcc's header has no message column.
  EXPECT_TRUE(has_line(r.out, bcc_header(false))) << r.out;
  auto ev = events(r.out);
  ASSERT_EQ(ev.size(), 3u) << r.out;  // the fourth thread has no argument
  for (const auto& e : ev) {
    EXPECT_EQ(e.func, "pthread_create");
    EXPECT_EQ(e.message, "");
  }
  EXPECT_EQ(summary_count(r.err, " filtered out"), 1) << r.err;
}

// trace 'u:pthread:libpthread:pthread_create (arg4 != 0)'
TEST(bcc_trace_example, pthread_create_usdt_with_its_provider) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_running_example("threads", "libpthread",
                                 {"u:pthread:libpthread:pthread_create (arg4 != 0)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(events(r.out).size(), 3u) << r.out;
}

// trace 'u:pthread:pthread_create "%U", arg3' -T -C
TEST(bcc_trace_example, pthread_create_start_routine_as_symbol_with_time_and_cpu) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_running_example("threads", "libpthread",
                                 {R"(u:pthread:pthread_create "%U", arg3)", "-T", "-C"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, bcc_header(true, "TIME     ", true))) << r.out;
  auto ev = events(r.out, true, true);
  ASSERT_EQ(ev.size(), 4u) << r.out;
  for (const auto& e : ev) {
    EXPECT_TRUE(std::regex_match(e.time, std::regex(R"(\d\d:\d\d:\d\d)"))) << e.time;
    EXPECT_LT(std::stoi(e.cpu), sysconf(_SC_NPROCESSORS_CONF));
    EXPECT_EQ(e.func, "pthread_create");
    EXPECT_EQ(e.message, "bcc_thread_main+0x0 [bcc_example]");
  }
}

// trace 'p:c:open(char *filename) "opening %s", filename'
TEST(bcc_trace_example, open_with_declared_parameter) {
  USCOPE_REQUIRE_ROOT();
  auto r =
      trace_example("files " + temp_dir(), {R"(p:c:open(char *filename) "opening %s", filename)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = messages(events(r.out));
  EXPECT_EQ(m, (std::vector<std::string>{"opening test.txt", "opening test.txt", "opening test.txt",
                                         "opening test.txt", "opening other.txt"}))
      << r.out;
}

// trace 'p:c:open (STRCMP("test.txt", arg1)) "opening %s", arg1' -T
TEST(bcc_trace_example, open_of_one_file_with_strcmp) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("files " + temp_dir(),
                         {R"(p:c:open (STRCMP("test.txt", arg1)) "opening %s", arg1)", "-T"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, bcc_header(true, "TIME     "))) << r.out;
  auto ev = events(r.out, true);
  ASSERT_EQ(ev.size(), 4u) << r.out;  // other.txt left out
  for (const auto& e : ev) EXPECT_EQ(e.message, "opening test.txt");
}

// trace 'r:c:read ((int)retval < 0) "read failed: %d", retval'
//       'r:c:write ((int)retval < 0) "write failed: %d", retval' -T
TEST(bcc_trace_example, failed_reads_and_writes_with_time) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("files " + temp_dir(),
                         {R"(r:c:read ((int)retval < 0) "read failed: %d", retval)",
                          R"(r:c:write ((int)retval < 0) "write failed: %d", retval)", "-T"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, bcc_header(true, "TIME     "))) << r.out;
  auto ev = events(r.out, true);
  ASSERT_EQ(ev.size(), 2u) << r.out;
  EXPECT_EQ(ev[0].func, "read");
  EXPECT_EQ(ev[0].message, "read failed: -1");
  EXPECT_EQ(ev[1].func, "write");
  EXPECT_EQ(ev[1].message, "write failed: -1");
}

// trace 'r:bash:readline "%s", retval'
TEST(bcc_trace_example, bash_readline) {
  USCOPE_REQUIRE_ROOT();
  // readline reads only from a terminal: script(1) gives uscope, and the bash it starts, a pty.
  // Inside script's "sh -c" line, \" is a quote of the spec's format.
  const std::string spec = "r:bash:readline \\\"%s\\\", retval";
  std::string cmd =
      std::string(USCOPE_BIN) + " trace -c 'bash --norc --noprofile -i' '" + spec + "'";
  std::string out = shell("printf 'echo bcc_hi\\nexit\\n' | script -qec \"" + cmd + "\" /dev/null");
  auto m = messages(events(out));
  EXPECT_NE(std::find(m.begin(), m.end(), "echo bcc_hi"), m.end()) << out;
}

// trace 'r:/usr/lib64/libtinfo.so:curses_version "Version=%s", retval' with tput -V
TEST(bcc_trace_example, curses_version_of_tput) {
  USCOPE_REQUIRE_ROOT();
  std::string version = shell("tput -V");
  while (!version.empty() && version.back() == '\n') version.pop_back();
  auto r =
      uscope({"trace", "-c", "tput -V",
              R"(r:/usr/lib/x86_64-linux-gnu/libtinfo.so.6:curses_version "Version=%s", retval)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ev = events(r.out);
  ASSERT_EQ(ev.size(), 1u) << r.out;
  EXPECT_EQ(ev[0].comm, "tput");
  EXPECT_EQ(ev[0].func, "curses_version");
  // The version string is in a page tput may not have touched yet when curses_version returns,
  // and tput may exit before user space could read it late: the probe, sleepable, faults the
  // page in and reads it in the kernel.
  EXPECT_EQ(ev[0].message, "Version=" + version);
  EXPECT_EQ(r.err.find("unreadable"), std::string::npos) << r.err;
}

// trace -s /lib/x86_64-linux-gnu/libc.so.6,/bin/ping 'p:c:inet_pton' -U
TEST(bcc_trace_example, inet_pton_with_user_stack) {
  USCOPE_REQUIRE_ROOT();
  // bcc's line with the fixture in place of /bin/ping (not installed here), and -p: bcc's -s is
  // for processes gone before their stacks are symbolized; uscope reads the maps of a -p target
  // at the start, but those of a -c command only at its first event, which a command as short
  // as this one may not outlive.
  auto r = trace_running_example(
      "inet", "libc.so",
      {"-s", "/lib/x86_64-linux-gnu/libc.so.6," + example(), "p:c:inet_pton", "-U"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, bcc_header(false))) << r.out;
  auto ev = events(r.out);
  ASSERT_EQ(ev.size(), 1u) << r.out;
  EXPECT_EQ(ev[0].func, "inet_pton");
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(\n        inet_pton\+0x[0-9a-f]+ \[libc\.so\.6\]\n)")))
      << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(\n        main\+0x[0-9a-f]+ \[bcc_example\]\n)")))
      << r.out;
}

// The offset of the instruction after `mov $IMM,%edx` in a.out's main (bcc's main+0xd and
// main+0x25, whatever this compiler made of them).
std::string offset_after(const std::string& binary, const std::string& imm) {
  std::string dis = shell("objdump -d --no-show-raw-insn " + binary);
  std::smatch m;
  if (!std::regex_search(dis, m, std::regex(R"(\n *([0-9a-f]+) <main>:)"))) return "";
  unsigned long main_addr = std::stoul(m[1], nullptr, 16);
  std::regex after("mov +\\$" + imm + ",%edx\\n *([0-9a-f]+):");
  if (!std::regex_search(dis, m, after)) return "";
  std::ostringstream off;
  off << std::hex << "0x" << std::stoul(m[1], nullptr, 16) - main_addr;
  return off.str();
}

// trace 'p:/tmp/a.out:main+0xd "%x", ctx->dx' 'p:/tmp/a.out:main+0x25 "%x", ctx->dx'
TEST(bcc_trace_example, register_inside_main) {
  USCOPE_REQUIRE_ROOT();
  std::string a_out = temp_dir() + "/a.out";
  ASSERT_EQ(shell("cp " + fixture("bcc/a.out") + " " + a_out + " && echo ok"), "ok\n");
  std::string dead = offset_after(a_out, "0xdead"), beef = offset_after(a_out, "0xbeef");
  ASSERT_EQ(dead, "0xd");  // as in bcc's example
  ASSERT_FALSE(beef.empty());
  auto r = uscope({"trace", "-c", a_out, "p:" + a_out + ":main+" + dead + R"( "%x", ctx->dx)",
                   "p:" + a_out + ":main+" + beef + R"( "%x", ctx->dx)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, bcc_header(true))) << r.out;
  auto ev = events(r.out);
  ASSERT_EQ(ev.size(), 2u) << r.out;
  EXPECT_EQ(ev[0].comm, "a.out");
  EXPECT_EQ(ev[0].func, "main");
  EXPECT_EQ(ev[0].message, "dead");
  EXPECT_EQ(ev[1].message, "beef");
}

// trace 'p::SyS_nanosleep(struct timespec *ts) "sleep for %lld ns", ts->tv_nsec', in user space
TEST(bcc_trace_example, nanosleep_struct_member) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example(
      "sleep", {R"(p:c:nanosleep(struct timespec *ts) "sleep for %lld ns", ts->tv_nsec)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ev = events(r.out);
  ASSERT_EQ(ev.size(), 1u) << r.out;
  EXPECT_EQ(ev[0].func, "nanosleep");
  EXPECT_EQ(ev[0].message, "sleep for 1234567 ns");
}

// The filters of trace.py --help, on a user-space probe: -n NAME, -f MSG, --uid UID, -L TID.
TEST(bcc_trace_options, comm_name_filter) {
  USCOPE_REQUIRE_ROOT();
  const std::string spec = R"(c:open "%s", arg1)";
  auto in = trace_example("files " + temp_dir(), {spec, "-n", "bcc_ex"});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(events(in.out).size(), 5u) << in.out;
  auto out = trace_example("files " + temp_dir(), {spec, "-n", "nomatch"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(events(out.out).size(), 0u) << out.out;
  // Left out in user space, as bcc does, and said so.
  EXPECT_EQ(summary_count(out.err, " left out by -n (comm)"), 5) << out.err;
}

TEST(bcc_trace_options, message_filter) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("files " + temp_dir(), {R"(c:open "%s", arg1)", "-f", "other"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(events(r.out)), std::vector<std::string>{"other.txt"}) << r.out;
  EXPECT_EQ(summary_count(r.err, " left out by -f (message)"), 4) << r.err;
  auto json = trace_example("files " + temp_dir(),
                            {R"(c:open "%s", arg1)", "-f", "other", "-n", "bcc", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto lines = json_lines(json.out);
  ASSERT_FALSE(lines.empty()) << json.out;
  EXPECT_EQ(lines.back()["kind"], "summary");
  EXPECT_EQ(lines.back()["events"], 1);
  EXPECT_EQ(lines.back()["message_filtered"], 4);
  EXPECT_EQ(lines.back()["comm_filtered"], 0);
}

TEST(bcc_trace_options, uid_filter_in_the_kernel) {
  USCOPE_REQUIRE_ROOT();
  const std::string spec = R"(c:open "%s", arg1)";
  auto mine = trace_example("files " + temp_dir(), {spec, "--uid", std::to_string(getuid())});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_EQ(events(mine.out).size(), 5u) << mine.out;
  auto other = trace_example("files " + temp_dir(), {spec, "--uid", "54321"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(events(other.out).size(), 0u) << other.out;
  EXPECT_EQ(summary_count(other.err, " filtered out"), 5) << other.err;
}

TEST(bcc_trace_options, thread_filter_in_the_kernel) {
  USCOPE_REQUIRE_ROOT();
  // The main thread (TID = PID) creates the threads; the threads themselves call nothing traced
  // here but their own start: -L PID keeps the main thread's four pthread_create calls.
  GatedProcess target({example(), "threads"});
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libpthread"));
  auto tracer = RunningCommand::uscope({"trace", "-L", std::to_string(target.pid()),
                                        "p:" + fixture("bcc/bcc_example") + ":bcc_thread_main",
                                        R"(u:pthread:pthread_create "%U", arg3)"});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  target.start();
  EXPECT_EQ(target.wait(), 0);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ev = events(r.out);
  ASSERT_EQ(ev.size(), 4u) << r.out;
  for (const auto& e : ev) {
    EXPECT_EQ(e.tid, target.pid());
    EXPECT_EQ(e.func, "pthread_create");
  }
  // bcc_thread_main ran in the four other threads.
  EXPECT_EQ(summary_count(r.err, " filtered out"), 4) << r.err;
}

TEST(bcc_trace_options, timestamps_since_start_and_since_the_epoch) {
  USCOPE_REQUIRE_ROOT();
  auto rel = trace_example("malloc", {R"(c:malloc "size = %d", arg1)", "-t"});
  ASSERT_EQ(rel.exit_code, 0) << rel.err;
  EXPECT_TRUE(has_line(rel.out, bcc_header(true, "TIME     "))) << rel.out;
  auto ev = events(rel.out, true);
  ASSERT_FALSE(ev.empty()) << rel.out;
  for (const auto& e : ev) EXPECT_TRUE(std::regex_match(e.time, std::regex(R"(\d+\.\d{6})")));
  auto unix_time = trace_example("malloc", {R"(c:malloc "size = %d", arg1)", "-t", "-u"});
  ASSERT_EQ(unix_time.exit_code, 0) << unix_time.err;
  EXPECT_TRUE(has_line(unix_time.out, bcc_header(true, "TIME              "))) << unix_time.out;
  auto uev = events(unix_time.out, true);
  ASSERT_FALSE(uev.empty()) << unix_time.out;
  double t = std::stod(uev[0].time);
  EXPECT_NEAR(t, static_cast<double>(time(nullptr)), 120.0);
}

TEST(bcc_trace_options, bad_combinations_are_refused_in_one_line) {
  USCOPE_REQUIRE_ROOT();
  auto u = trace_example("malloc", {"c:malloc", "-u"});
  EXPECT_NE(u.exit_code, 0);
  EXPECT_NE(u.err.find("add -t"), std::string::npos) << u.err;
  auto z = trace_example("malloc", {"c:malloc", "-Z", "0"});
  EXPECT_NE(z.exit_code, 0);
  EXPECT_NE(z.err.find("-Z 0"), std::string::npos) << z.err;
  auto s = trace_example("malloc", {"c:malloc", "-s", "/nonexistent/lib.so"});
  EXPECT_NE(s.exit_code, 0);
  EXPECT_NE(s.err.find("/nonexistent/lib.so"), std::string::npos) << s.err;
}

TEST(bcc_trace_options, string_size_caps_printed_strings) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_example("files " + temp_dir(), {R"(c:open "%s", arg1)", "-Z", "4", "-f", "oth"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // -f sees the message as printed: "othe…" (cut at 4 bytes) still contains "oth".
  EXPECT_EQ(messages(events(r.out)), std::vector<std::string>{"othe\xe2\x80\xa6"}) << r.out;
}

// -K at a uprobe: the probe fires in user mode, so the kernel part of the stack is empty (bcc
// prints an error code there); nothing is counted as a failed capture. -a puts addresses beside
// the user frames.
TEST(bcc_trace_options, kernel_stack_at_a_uprobe_is_empty_and_addresses_show) {
  USCOPE_REQUIRE_ROOT();
  auto r = trace_running_example("inet", "libc.so", {"p:c:inet_pton", "-K", "-U", "-a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(events(r.out).size(), 1u) << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\n +[0-9a-f]+ inet_pton\+0x[0-9a-f]+ \[libc\.so\.6\]\n)")))
      << r.out;
  EXPECT_EQ(r.out.find("[kernel]"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("capture failed"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uscope::e2e
