// Python frames in uscope's stacks (issue 21): Debian's python3.11 running a fixture with known
// call paths, profiled from outside. The expected functions, files and lines come from the
// fixture's own source (its marker comments), never from uscope. Assertions are on shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "e2e_support.h"
#include "folded.h"

namespace uscope::e2e {
namespace {

const char* kPython = "/usr/bin/python3.11";  // Debian's: /usr/bin/python3 may be pyenv's

std::string script() {
  return fixture("python/profile_paths.py");
}

// The line of the fixture holding `marker` ("CALL-LEAF"), the first when several do.
int marked_line(const std::string& marker) {
  std::ifstream in(script());
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find("# " + marker) != std::string::npos) return n;
  }
  ADD_FAILURE() << "no marker " << marker << " in " << script();
  return -1;
}

// A frame as profile labels a Python function: "middle (/path/profile_paths.py:21)".
std::string py_frame(const std::string& function, const std::string& marker) {
  return function + " (" + script() + ":" + std::to_string(marked_line(marker)) + ")";
}

// `err`, when given, gets uscope's stderr (its summary, and why a process has no Python frames).
std::vector<FoldedLine> profile_pid(pid_t pid, std::vector<std::string> extra = {},
                                    std::string* err = nullptr) {
  std::vector<std::string> args = {
      "profile", "-F", "199", "-d", "3", "--format", "folded", "-p", std::to_string(pid)};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = uscope(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  EXPECT_GT(total(lines), 0u) << r.err;
  if (err) *err = r.err;
  return lines;
}

// The stacks as a failure message shows them: the most frequent first, at most `max`.
std::string described(std::vector<FoldedLine> lines, size_t max = 12) {
  std::sort(lines.begin(), lines.end(),
            [](const FoldedLine& a, const FoldedLine& b) { return a.count > b.count; });
  std::string text = std::to_string(lines.size()) + " stacks, " + std::to_string(total(lines)) +
                     " samples; the most frequent:\n";
  for (size_t i = 0; i < lines.size() && i < max; ++i)
    text += std::to_string(lines[i].count) + " " + joined(lines[i]) + "\n";
  return text;
}

TEST(python_profile, nested_functions_hold_most_samples_with_their_lines) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({kPython, script(), "nested"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto lines = profile_pid(target.pid());
  // outer's call of middle, middle's call of leaf, and leaf's loop, in that order.
  const std::string path = py_frame("outer", "CALL-MIDDLE") + ";" +
                           py_frame("middle", "CALL-LEAF") + ";leaf (" + script() + ":";
  EXPECT_GT(share_with(lines, path), 0.8) << path;
  // The module's call of main, main's of outer, below it: the whole Python stack, right above
  // the native frames that ran the module.
  EXPECT_GT(share_with(lines, "PyEval_EvalCode;" + py_frame("<module>", "CALL-MAIN") + ";" +
                                  py_frame("main", "CALL-OUTER") + ";" +
                                  py_frame("outer", "CALL-MIDDLE") + ";"),
            0.8);
  // leaf's samples are on its two loop lines only.
  uint64_t in_leaf = 0, on_loop = 0;
  const std::string leaf = "leaf (" + script() + ":";
  const int loop = marked_line("HOT-LEAF");
  for (const auto& l : lines)
    for (const auto& f : l.frames)
      if (f.starts_with(leaf)) {
        in_leaf += l.count;
        int line = std::stoi(f.substr(leaf.size()));
        if (line == loop || line == loop + 1) on_loop += l.count;
        break;
      }
  ASSERT_GT(in_leaf, 0u);
  EXPECT_GT(static_cast<double>(on_loop) / static_cast<double>(in_leaf), 0.9);
  // The eval calls are replaced by the frames they ran, not shown beside them.
  EXPECT_LT(share_with(lines, "_PyEval_EvalFrameDefault;"), 0.05);
}

// USCOPE_PYTHON_THREADS_BY_FS_BASE=1 in uscope's environment while it lives: thread states are
// told apart as in 3.8-3.10 (no native_thread_id there), by thread_id against each thread's fs
// base, which python3.11's thread_id (pthread_self()) allows too.
struct ThreadsByFsBase {
  ThreadsByFsBase() { setenv("USCOPE_PYTHON_THREADS_BY_FS_BASE", "1", 1); }
  ~ThreadsByFsBase() { unsetenv("USCOPE_PYTHON_THREADS_BY_FS_BASE"); }
};

void two_threads_each_show_their_own_function(bool by_fs_base) {
  RunningCommand target({kPython, script(), "threads"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  std::string err;
  auto lines = profile_pid(target.pid(), {"--threads", "-v"}, &err);
  EXPECT_EQ(err.find("; threads told apart by their fs base)") != std::string::npos, by_fs_base)
      << err;
  const std::string alpha = "spin_alpha (" + script() + ":";
  const std::string beta = "spin_beta (" + script() + ":";
  EXPECT_GT(share_with(lines, alpha), 0.2);
  EXPECT_GT(share_with(lines, beta), 0.2);
  for (const auto& l : lines) {
    std::string s = joined(l);
    EXPECT_FALSE(s.find(alpha) != std::string::npos && s.find(beta) != std::string::npos) << s;
  }
  // Both are threading's threads: run() called from _bootstrap_inner.
  EXPECT_GT(share_with(lines, "Thread.run (/usr/lib/python3.11/threading.py:"), 0.9);
}

TEST(python_profile, two_threads_each_show_their_own_function) {
  USCOPE_REQUIRE_ROOT();
  two_threads_each_show_their_own_function(false);
}

TEST(python_profile, two_threads_told_apart_by_fs_base_as_3_8_to_3_10_are) {
  USCOPE_REQUIRE_ROOT();
  ThreadsByFsBase by_fs_base;
  two_threads_each_show_their_own_function(true);
}

TEST(python_profile, c_calling_back_into_python_interleaves) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({kPython, script(), "callback"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  std::string err;
  auto lines = profile_pid(target.pid(), {}, &err);
  // The interpreter's frames were read (a failed check of the offsets at attach says "native
  // frames only" on stderr, and leaves no Python frame in the session).
  EXPECT_EQ(err.find("native frames only"), std::string::npos) << err;
  // sort_with_c -> (ctypes, libc's qsort) -> py_compare: the Python caller, native frames, then
  // the callback, in that order within one stack.
  const std::string caller = py_frame("sort_with_c", "CALL-QSORT") + ";";
  const std::string callback = "py_compare (" + script() + ":";
  uint64_t all = 0, interleaved = 0;
  for (const auto& l : lines) {
    all += l.count;
    std::string s = joined(l);
    auto c = s.find(caller), b = s.find(callback);
    if (c == std::string::npos || b == std::string::npos || b < c) continue;
    std::string between = s.substr(c + caller.size(), b - c - caller.size());
    if (between.find("qsort") != std::string::npos || between.find("msort") != std::string::npos)
      interleaved += l.count;
  }
  EXPECT_GT(static_cast<double>(interleaved) / static_cast<double>(all), 0.3)
      << interleaved << " of " << all << " samples had the ctypes caller, qsort and the callback "
      << "in order; uscope said:\n"
      << err << described(lines);
}

TEST(python_profile, command_from_its_first_instruction_stays_named_after_exit) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"profile", "-F", "199", "--format", "folded", "-c",
                   std::string(kPython) + " " + script() + " nested 1500"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  ASSERT_GT(total(lines), 0u) << r.err;
  // Of the samples that run the script (not the interpreter's start-up before it), most are in
  // its known path, named after the process exited.
  std::vector<FoldedLine> running;
  for (const auto& l : lines)
    if (joined(l).find("PyEval_EvalCode;") != std::string::npos) running.push_back(l);
  ASSERT_GT(total(running), 0u) << r.out;
  EXPECT_GT(share_with(running, py_frame("outer", "CALL-MIDDLE") + ";" +
                                    py_frame("middle", "CALL-LEAF") + ";"),
            0.6)
      << r.out;
  EXPECT_EQ(share_with(lines, "[unknown: process gone]"), 0.0);
}

TEST(python_profile, trace_stack_shows_the_python_calls_that_led_to_a_native_call) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({kPython, script(), "writes"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto r = uscope({"trace", "-U", "-M", "3", "-p", std::to_string(target.pid()), "p:c:write"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // write <- _Py_write <- os.write's C function <- emit <- writer <- main <- <module>: the lines
  // as the fixture's source has them, right below the native frames, in every event.
  const std::string py = " [python]\n        ";
  const std::string expected =
      "emit (" + script() + ":" + std::to_string(marked_line("CALL-WRITE")) + ")" + py +
      "writer (" + script() + ":" + std::to_string(marked_line("CALL-EMIT")) + ")" + py + "main (" +
      script() + ":" + std::to_string(marked_line("CALL-WRITER")) + ")";
  size_t events = 0;
  for (size_t at = r.out.find(expected); at != std::string::npos; at = r.out.find(expected, at + 1))
    ++events;
  EXPECT_EQ(events, 3u) << r.out;
}

TEST(python_profile, a_process_that_is_not_python_keeps_native_frames_without_a_word) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"profile", "-F", "199", "--format", "folded", "-c",
                   fixture("profile/profile_hot_path") + " user 500"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("python"), std::string::npos) << r.err;
  EXPECT_GT(share_with(parse_folded(r.out), ";main;outer;inner;"), 0.5);
}

}  // namespace
}  // namespace uscope::e2e

namespace uscope::e2e {
namespace {

// The tid of `pid`'s thread whose name (comm) is `name`, from /proc: the kernel's word.
pid_t thread_named(pid_t pid, const std::string& name) {
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string got;
    std::getline(comm, got);
    if (got == name) return std::stoi(entry.path().filename().string());
  }
  return 0;
}

// The lines of `text` from the one starting with `header` up to the next blank line.
std::string section(const std::string& text, const std::string& header) {
  auto at = text.find("\n" + header);
  if (at == std::string::npos) return "";
  auto end = text.find("\n\n", at + 1);
  return text.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

// The process's threads (/proc/PID/task).
std::vector<pid_t> tasks_of(pid_t pid) {
  std::vector<pid_t> tids;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task"))
    tids.push_back(std::stoi(e.path().filename().string()));
  return tids;
}

void every_thread_with_its_python_and_native_frames_and_nothing_left(bool by_fs_base) {
  RunningCommand target({kPython, script(), "dump"});
  ASSERT_TRUE(target.wait_for_output("spinning"));
  const pid_t worker = thread_named(target.pid(), "blocked-worker");
  ASSERT_GT(worker, 0);
  // The third thread, named by threading only: its comm is the process's.
  pid_t named = 0;
  auto tids = tasks_of(target.pid());
  ASSERT_EQ(tids.size(), 3u);
  for (pid_t tid : tids)
    if (tid != target.pid() && tid != worker) named = tid;
  auto r = uscope({"dump", "-p", std::to_string(target.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Python 3.11."), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("; threads told apart by their fs base\n") != std::string::npos, by_fs_base)
      << r.out;
  // The worker sleeps in Event.wait: idle, its Python frames between the native ones that
  // started the thread and the futex wait it sleeps in. Named by prctl, and by threading's
  // default ("Thread-1 (blocked_worker)": the first Thread, and its target).
  const std::string w = section(r.out, "Thread " + std::to_string(worker) +
                                           " \"Thread-1 (blocked_worker)\" (blocked-worker): "
                                           "idle (sleeping, S)");
  ASSERT_FALSE(w.empty()) << r.out;
  EXPECT_NE(w.find("futex"), std::string::npos) << w;
  const auto wait = w.find("Event.wait (/usr/lib/python3.11/threading.py:");
  const auto own = w.find(py_frame("blocked_worker", "BLOCKED-WAIT") + " [python]");
  const auto start = w.find("start_thread");
  EXPECT_NE(wait, std::string::npos) << w;
  EXPECT_NE(own, std::string::npos) << w;
  EXPECT_TRUE(wait < own && own < start && start != std::string::npos) << w;
  EXPECT_EQ(w.find("holds the GIL"), std::string::npos) << w;
  // threading.Thread(name="py-named-waiter"): the Python name, the kernel's comm beside it.
  const std::string n = section(r.out, "Thread " + std::to_string(named) +
                                           " \"py-named-waiter\" (python3.11): idle (sleeping, S)");
  ASSERT_FALSE(n.empty()) << r.out;
  EXPECT_NE(n.find(py_frame("named_waiter", "NAMED-WAIT") + " [python]"), std::string::npos) << n;
  // The main thread spins in Python: its frames whatever its state.
  const std::string m =
      section(r.out, "Thread " + std::to_string(target.pid()) + " \"MainThread\" (python3.11)");
  EXPECT_NE(m.find(py_frame("spin_main", "SPIN-MAIN")), std::string::npos) << r.out;
  EXPECT_NE(m.find(py_frame("main", "CALL-SPIN")), std::string::npos) << r.out;
  // It holds the GIL: no other thread asks for it (they wait on their events without it).
  EXPECT_NE(m.find("holds the GIL"), std::string::npos) << r.out;
  // Read once: no iterator link outlives the command.
  EXPECT_TRUE(links_released("dump_task"));
}

TEST(python_dump, every_thread_with_its_python_and_native_frames_and_nothing_left) {
  USCOPE_REQUIRE_ROOT();
  every_thread_with_its_python_and_native_frames_and_nothing_left(false);
}

TEST(python_dump, threads_told_apart_by_fs_base_as_3_8_to_3_10_are) {
  USCOPE_REQUIRE_ROOT();
  ThreadsByFsBase by_fs_base;
  every_thread_with_its_python_and_native_frames_and_nothing_left(true);
}

// The check of the offsets at attach reads a running thread's frames: in a ctypes callback, its
// _PyCFrame (a local of an eval call that returns ~100,000 times a second) may be gone by the time
// it is read. That must not pass for offsets that do not fit (once, 2 dumps in 30 said "native
// frames only", and a profile that did so had no Python frame for its whole session).
TEST(python_dump, a_thread_entering_and_leaving_the_eval_function_fails_no_check) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({kPython, script(), "callback"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  for (int i = 0; i < 30; ++i) {
    auto r = uscope({"dump", "-p", std::to_string(target.pid()), "--no-native"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_NE(r.out.find("Python 3.11."), std::string::npos) << "dump " << i << ":\n" << r.out;
    ASSERT_EQ(r.out.find("native frames only"), std::string::npos) << "dump " << i << ":\n"
                                                                   << r.out;
  }
}

TEST(python_dump, a_process_that_is_gone_or_not_given_is_a_clear_error) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"dump"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-p"), std::string::npos) << r.err;
  auto gone = uscope({"dump", "-p", "999999999"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find("999999999"), std::string::npos) << gone.err;
}

}  // namespace
}  // namespace uscope::e2e
