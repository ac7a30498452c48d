// Every command with its output on a pipe whose reader goes away, as `uscope ... | head -1` and
// `uscope ... 2>&1 | head -1` do: it ends quietly, as a Unix tool does (exit 0, or 141 for a
// SIGPIPE), with no word about the pipe, never aborting, and with every probe detached.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// Where uscope's stderr goes: a pipe of its own that the test reads to the end, or the same pipe
// as stdout (2>&1).
enum class Stderr { Apart, OnThePipe };
void PrintTo(Stderr s, std::ostream* os) {
  *os << (s == Stderr::Apart ? "stderr apart" : "stderr on the pipe");
}

// build/uscope with stdout into a pipe that the test closes when it likes.
class PipedUscope {
 public:
  PipedUscope(const std::vector<std::string>& args, Stderr err) {
    int out[2], errp[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) return;
    // Made before the fork: the child of a multi-threaded test must not allocate.
    std::vector<std::string> argv{USCOPE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> v;
    for (auto& a : argv) v.push_back(a.data());
    v.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(err == Stderr::Apart ? errp[1] : out[1], 2);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      execv(v[0], v.data());
      _exit(127);
    }
    close(out[1]);
    close(errp[1]);
    read_fd_ = out[0];
    // stderr is read to its end as it comes, so that uscope never blocks on it.
    err_reader_ = std::thread([this, fd = errp[0]] {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof(buf))) > 0) err_.append(buf, static_cast<size_t>(n));
      close(fd);
    });
  }
  ~PipedUscope() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close_pipe();
    if (err_reader_.joinable()) err_reader_.join();
  }
  PipedUscope(const PipedUscope&) = delete;
  PipedUscope& operator=(const PipedUscope&) = delete;

  pid_t pid() const { return pid_; }

  // Reads until the first line has come (what `head -1` does).
  testing::AssertionResult read_first_line() {
    auto deadline = std::chrono::steady_clock::now() + kWaitTimeout;
    while (read_.find('\n') == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{read_fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0)
        return testing::AssertionFailure()
               << "no line on the pipe within " << kWaitTimeout.count() << " s; read: " << read_;
      char buf[4096];
      ssize_t n = ::read(read_fd_, buf, sizeof(buf));
      if (n <= 0)
        return testing::AssertionFailure() << "the pipe ended before a line; read: " << read_;
      read_.append(buf, static_cast<size_t>(n));
    }
    return testing::AssertionSuccess();
  }
  // The reader goes away: every later write of uscope to the pipe fails with EPIPE.
  void close_pipe() {
    if (read_fd_ >= 0) close(read_fd_);
    read_fd_ = -1;
  }
  void signal(int sig) {
    if (!reaped_) kill(pid_, sig);  // not reaped: the pid is still uscope's (a zombie at worst)
  }
  // Until uscope exits, killed after `timeout`: its exit code (128+N for signal N).
  int wait_exit(std::chrono::seconds timeout = kWaitTimeout) {
    int status = 0;
    auto exited = [&] { return waitpid(pid_, &status, WNOHANG) == pid_; };
    if (!wait_until("uscope exits", exited, timeout)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    reaped_ = true;
    if (err_reader_.joinable()) err_reader_.join();
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  }
  const std::string& err() const { return err_; }  // after wait_exit()
  const std::string& read_text() const { return read_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int read_fd_ = -1;
  std::string read_;
  std::string err_;
  std::thread err_reader_;
};

// The BPF links the kernel has now, whoever holds them.
std::set<int> all_links() {
  auto links = nlohmann::json::parse(shell("bpftool -j link list"), nullptr, false);
  std::set<int> out;
  if (links.is_array())
    for (const auto& l : links) out.insert(l.value("id", -1));
  return out;
}

// Until none of `held` (the links uscope held while attached) exists any more: the kernel frees
// a link when its last fd closes, which may come a little after the process is reaped.
testing::AssertionResult wait_links_gone(const std::vector<int>& held) {
  std::vector<int> left;
  auto gone = [&] {
    auto now = all_links();
    left.clear();
    for (int id : held)
      if (now.count(id)) left.push_back(id);
    return left.empty();
  };
  auto r = wait_until("the links uscope held are gone", gone);
  if (!r) r << "; " << left.size() << " of " << held.size() << " left";
  return r;
}

// What a quiet end looks like: exit 0 (or 141), and nothing on stderr about the pipe or an abort.
void expect_quiet_end(int exit_code, const std::string& err, const std::string& read) {
  EXPECT_TRUE(exit_code == 0 || exit_code == 141)
      << "exit " << exit_code << " (134: abort)\nstderr:\n"
      << err << "\nread from the pipe:\n"
      << read;
  for (const char* word :
       {"pipe", "Broken", "output closed", "not written", "terminate", "cannot write", "failed"})
    EXPECT_EQ(err.find(word), std::string::npos) << "stderr says '" << word << "':\n" << err;
}

// A command that prints lines by itself (list, check, --help): the pipe closes after one line.
void expect_quiet_after_first_line(const std::vector<std::string>& args, Stderr err) {
  PipedUscope u(args, err);
  ASSERT_TRUE(u.read_first_line());
  u.close_pipe();
  int code = u.wait_exit(std::chrono::seconds(120));
  expect_quiet_end(code, u.err(), u.read_text());
}

// How an attaching command meets the closed pipe.
enum class Then {
  ReadsALine,     // it prints lines as it goes: the pipe closes after the first, it ends by itself
  Stops,          // it prints at its stop: the pipe closes once attached, then SIGINT
  ReadsAndStops,  // a header first, the rest at its stop
};

// An attaching command against a target: once it holds its links (`program` prefix), the pipe
// closes as `then` says; uscope ends quietly and leaves no link behind.
void expect_quiet_attached(const std::vector<std::string>& args, const std::string& program,
                           Then then, Stderr err) {
  PipedUscope u(args, err);
  ASSERT_TRUE(wait_for_links(u.pid(), program));
  if (then != Then::Stops) {
    ASSERT_TRUE(u.read_first_line());
  }
  const std::vector<int> held = bpf_links_held_by(u.pid(), "");
  u.close_pipe();
  if (then != Then::ReadsALine) u.signal(SIGINT);
  int code = u.wait_exit();
  expect_quiet_end(code, u.err(), u.read_text());
  EXPECT_TRUE(wait_links_gone(held));
}

class closed_pipe : public testing::TestWithParam<Stderr> {};

INSTANTIATE_TEST_SUITE_P(stdout_alone_and_with_stderr, closed_pipe,
                         testing::Values(Stderr::Apart, Stderr::OnThePipe), [](const auto& info) {
                           return info.param == Stderr::Apart ? "stdout" : "stdout_and_stderr";
                         });

TEST_P(closed_pipe, list) {
  expect_quiet_after_first_line({"list", "/usr/bin/python3.11"}, GetParam());
}

TEST_P(closed_pipe, list_of_a_process) {
  GatedProcess target({fixture("native/alloc_loop")});
  target.start();
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  expect_quiet_after_first_line({"list", "-p", std::to_string(target.pid())}, GetParam());
}

TEST_P(closed_pipe, list_json) {
  expect_quiet_after_first_line({"list", "--json", "/usr/bin/python3.11"}, GetParam());
}

TEST_P(closed_pipe, list_info) {
  expect_quiet_after_first_line({"list", "--info", "/usr/bin/python3.11"}, GetParam());
}

TEST_P(closed_pipe, help_and_version) {
  expect_quiet_after_first_line({"--help"}, GetParam());
  expect_quiet_after_first_line({"trace", "--help"}, GetParam());
  expect_quiet_after_first_line({"--version"}, GetParam());
}

TEST_P(closed_pipe, check) {
  USCOPE_REQUIRE_ROOT();
  expect_quiet_after_first_line({"check"}, GetParam());
}

// The attaching commands, each on a fixture that runs until killed.
class closed_pipe_attached : public closed_pipe {
 protected:
  void SetUp() override {
    USCOPE_REQUIRE_ROOT();
    target_.start();
    ASSERT_TRUE(wait_for_mapping(target_.pid(), "libc.so"));
  }
  void TearDown() override {
    // The target went on unharmed: killed here, not by uscope.
    EXPECT_EQ(kill(target_.pid(), 0), 0) << "the target died";
  }
  std::string pid() const { return std::to_string(target_.pid()); }
  GatedProcess target_{{fixture("native/alloc_loop")}};
};

INSTANTIATE_TEST_SUITE_P(stdout_alone_and_with_stderr, closed_pipe_attached,
                         testing::Values(Stderr::Apart, Stderr::OnThePipe), [](const auto& info) {
                           return info.param == Stderr::Apart ? "stdout" : "stdout_and_stderr";
                         });

TEST_P(closed_pipe_attached, trace) {
  expect_quiet_attached({"trace", "-p", pid(), "p:c:malloc \"%d\", arg1"}, "trace_",
                        Then::ReadsALine, GetParam());
}

TEST_P(closed_pipe_attached, trace_json) {
  expect_quiet_attached({"trace", "--json", "-p", pid(), "p:c:malloc"}, "trace_", Then::ReadsALine,
                        GetParam());
}

TEST_P(closed_pipe_attached, count) {
  expect_quiet_attached({"count", "-p", pid(), "c:malloc"}, "count_hit", Then::Stops, GetParam());
}

TEST_P(closed_pipe_attached, count_every_interval) {
  expect_quiet_attached({"count", "-i", "0.05", "-p", pid(), "c:malloc"}, "count_hit",
                        Then::ReadsALine, GetParam());
}

TEST_P(closed_pipe_attached, latency) {
  expect_quiet_attached({"latency", "-p", pid(), "c:malloc"}, "trace_", Then::Stops, GetParam());
}

TEST_P(closed_pipe_attached, hist) {
  expect_quiet_attached({"hist", "-p", pid(), "p:c:malloc", "arg1"}, "trace_", Then::Stops,
                        GetParam());
}

TEST_P(closed_pipe_attached, profile) {
  expect_quiet_attached({"profile", "-p", pid()}, "profile_sample", Then::Stops, GetParam());
}

TEST_P(closed_pipe_attached, profile_folded) {
  expect_quiet_attached({"profile", "--format", "folded", "-p", pid()}, "profile_sample",
                        Then::Stops, GetParam());
}

TEST_P(closed_pipe_attached, top) {
  expect_quiet_attached({"top", "-d", "0.2", "-p", pid()}, "profile_sample", Then::ReadsALine,
                        GetParam());
}

// http and stat watch a Go program; tls a process that maps libssl.
TEST_P(closed_pipe, http) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({fixture("go/gohttp_server"), std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  expect_quiet_attached({"http", "-p", std::to_string(server.pid())}, "trace_", Then::ReadsAndStops,
                        GetParam());
  EXPECT_EQ(kill(server.pid(), 0), 0) << "the server died";
}

TEST_P(closed_pipe, stat) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("go/gostack"), "-3", "4", "100"});
  ASSERT_TRUE(target.wait_for_line("running"));
  expect_quiet_attached({"stat", "-i", "0.05", "-p", std::to_string(target.pid())}, "count_hit",
                        Then::ReadsALine, GetParam());
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the target died";
}

TEST_P(closed_pipe, tls) {
  USCOPE_REQUIRE_ROOT();
  char dir_template[] = "/tmp/uscope-closed-pipe-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  shell(
      "/usr/bin/openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-days 1 -subj /CN=127.0.0.1 -keyout " +
      key + " -out " + cert + " 2>/dev/null");
  const int port = free_port();
  {
    RunningCommand server({"/usr/bin/openssl", "s_server", "-quiet", "-www", "-accept",
                           "127.0.0.1:" + std::to_string(port), "-cert", cert, "-key", key});
    ASSERT_TRUE(wait_for_port(port));
    ASSERT_TRUE(wait_for_mapping(server.pid(), "libssl.so"));
    expect_quiet_attached({"tls", "-p", std::to_string(server.pid())}, "trace_",
                          Then::ReadsAndStops, GetParam());
  }
  shell("rm -rf " + dir);
}

}  // namespace
}  // namespace uscope::e2e
