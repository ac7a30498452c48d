#pragma once
// Helpers for end-to-end tests: run uscope or a fixture as a child, gate a fixture's start so a
// test can attach first, and list the BPF links the kernel holds.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>
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
// Runs a shell command line, returning its stdout (for readelf/nm comparisons).
std::string shell(const std::string& cmd);

// A child that blocks reading one byte from stdin until start() is called.
class GatedProcess {
 public:
  explicit GatedProcess(const std::vector<std::string>& argv);
  ~GatedProcess();
  GatedProcess(const GatedProcess&) = delete;
  GatedProcess& operator=(const GatedProcess&) = delete;
  pid_t pid() const { return pid_; }
  void start();
  // Waits for exit; returns the exit code and leaves stdout in `out`.
  int wait(std::string* out = nullptr);

 private:
  pid_t pid_ = -1;
  int stdin_w_ = -1;
  int stdout_r_ = -1;
  bool reaped_ = false;
};

// IDs of the BPF links in the kernel whose program name starts with `prefix` (bpftool link list
// joined with bpftool prog list) held by this test process or by no process at all.
// `owner` also counts links held by that process (a uscope the test started).
std::vector<int> bpf_links_of_programs(const std::string& prefix, pid_t owner = 0);

std::string fixture(const std::string& relative);  // USCOPE_FIXTURE_DIR/relative

// Fails the test (not skips) when not root: in CI a missing BPF capability is a failure. A macro,
// because a failed assertion inside a helper function returns from the helper, not the test.
#define USCOPE_REQUIRE_ROOT()                                                             \
  do {                                                                                    \
    if (geteuid() != 0)                                                                   \
      GTEST_FAIL() << "end-to-end tests attach BPF programs and must run as root (CAP_BPF, " \
                      "CAP_PERFMON)";                                                      \
  } while (0)

}  // namespace uscope::e2e
