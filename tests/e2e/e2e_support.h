#pragma once
// Helpers for end-to-end tests: run uscope or a fixture as a child, gate a fixture's start so a
// test can attach first, wait for conditions (never for a fixed time), and list the BPF links the
// kernel holds.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace uscope::e2e {

struct CommandResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv to completion (killed after `timeout_s`), capturing stdout and stderr.
CommandResult run(const std::vector<std::string>& argv, int timeout_s = 60);
// Runs build/uscope with `args`.
CommandResult uscope(const std::vector<std::string>& args, int timeout_s = 60);

// A command running while the test acts on it or on its target (a uscope attached to a process):
// its output is collected as it comes, so a chatty command never blocks on a full pipe. Killed at
// its timeout, or when destroyed unfinished.
class RunningCommand {
 public:
  explicit RunningCommand(const std::vector<std::string>& argv, int timeout_s = 60);
  // build/uscope with `args`.
  static RunningCommand uscope(const std::vector<std::string>& args, int timeout_s = 60);
  ~RunningCommand();
  RunningCommand(const RunningCommand&) = delete;
  RunningCommand& operator=(const RunningCommand&) = delete;
  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Until its stdout contains `text`.
  testing::AssertionResult wait_for_output(const std::string& text);
  // Until its stderr holds `text` at least `times` times (a daemon's status lines).
  testing::AssertionResult wait_for_stderr(const std::string& text, size_t times = 1);
  // Waits for the exit; the full output and exit code.
  CommandResult finish();

 private:
  void collect(int out_fd, int err_fd, std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = -1;
  std::string name_;  // argv[0], for the deadline's message
  std::mutex mu_;
  std::condition_variable changed_;
  CommandResult result_;  // guarded by mu_
  bool exited_ = false;   // guarded by mu_: reaped, the pid may name another process now
  std::thread collector_;
};
// Runs a shell command line, returning its stdout (for readelf/nm comparisons).
std::string shell(const std::string& cmd);
// A file's whole text ("" when it cannot be read): what a command wrote with -o.
std::string file_text(const std::string& path);

// A child that blocks reading one byte from stdin until start() is called.
class GatedProcess {
 public:
  explicit GatedProcess(const std::vector<std::string>& argv);
  ~GatedProcess();
  GatedProcess(const GatedProcess&) = delete;
  GatedProcess& operator=(const GatedProcess&) = delete;
  pid_t pid() const { return pid_; }
  void start();
  // Writes `bytes` to the child's stdin (a fixture reading more than the gate byte).
  void send(const std::string& bytes);
  // Until the child prints a line containing `text` (a fixture saying it has set up).
  testing::AssertionResult wait_for_line(const std::string& text);
  // The line the last wait_for_line() found.
  const std::string& last_line() const { return last_line_; }
  // Waits for exit; returns the exit code and leaves stdout in `out`.
  int wait(std::string* out = nullptr);

 private:
  pid_t pid_ = -1;
  int stdin_w_ = -1;
  int stdout_r_ = -1;
  bool reaped_ = false;
  std::string unread_;  // stdout read by wait_for_line() past its line
  std::string last_line_;
};

// How long a wait for a condition may take before the test fails: generous, because tests must
// pass on a loaded machine; a wait ends as soon as its condition holds.
inline constexpr std::chrono::seconds kWaitTimeout{20};

// Polls `holds` until it is true; fails naming `what` after `timeout`.
testing::AssertionResult wait_until(const std::string& what, const std::function<bool()>& holds,
                                    std::chrono::milliseconds timeout = kWaitTimeout);
// Until process `pid` maps an executable segment of a file whose path contains `library`
// ("libc.so"): before that, uscope -p finds no such library in it.
testing::AssertionResult wait_for_mapping(pid_t pid, const std::string& library);
// Until process `owner` (a uscope the test started) holds a BPF link of a program whose name starts
// with `prefix`: it has attached.
testing::AssertionResult wait_for_links(pid_t owner, const std::string& prefix);
// A TCP port on 127.0.0.1 nothing listens on now (the kernel's pick), for a fixture server.
int free_port();
// Until something accepts TCP connections on 127.0.0.1:`port`.
testing::AssertionResult wait_for_port(int port);

// IDs of the BPF links in the kernel whose program name starts with `prefix` (bpftool link list
// joined with bpftool prog list) held by this test process or by no process at all.
// `owner` also counts links held by that process (a uscope the test started).
std::vector<int> bpf_links_of_programs(const std::string& prefix, pid_t owner = 0);
// Until no link of a program named `prefix`* is held by this test process, by `owner`, or by
// nobody (bpf_links_of_programs): a link whose last fd closed is released by the kernel a little
// later (deferred), so a check right after a command exits waits for it. On failure, the links.
testing::AssertionResult links_released(const std::string& prefix, pid_t owner = 0);
// IDs of the BPF links process `pid` holds an fd to whose program name starts with `prefix`.
std::vector<int> bpf_links_held_by(pid_t pid, const std::string& prefix);

std::string fixture(const std::string& relative);

// The single value Prometheus (its HTTP API on 127.0.0.1:`port`) answers for `promql` now; ""
// while it has none.
std::string prometheus_query(int port, const std::string& promql);

// The JSON objects among the lines of `out` (lines starting with '{'; a traced command's own
// output around them is skipped).
std::vector<nlohmann::json> json_lines(const std::string& out);  // USCOPE_FIXTURE_DIR/relative

// The lines of `text` that contain `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle);

// The number N of "N name" in a text summary ("12 lost (ring buffer full)": name " lost", taken
// literally), read whole, so that "10 lost" is never taken for "0 lost"; -1 when absent.
long long summary_count(const std::string& text, const std::string& name);

// Fails the test (not skips) when not root: in CI a missing BPF capability is a failure. A macro,
// because a failed assertion inside a helper function returns from the helper, not the test.
#define USCOPE_REQUIRE_ROOT()                                                                \
  do {                                                                                       \
    if (geteuid() != 0)                                                                      \
      GTEST_FAIL() << "end-to-end tests attach BPF programs and must run as root (CAP_BPF, " \
                      "CAP_PERFMON)";                                                        \
  } while (0)

}  // namespace uscope::e2e
