// Event storms: a system-wide probe on malloc beside a process that calls it as fast as it can
// (and uscope calls it too). uscope must stay in control whatever the rate and however slow its
// output: -d, -M and SIGTERM stop it, a stdout nobody reads never blocks it, every event that
// does not make it out is counted, and formatting events does not call malloc.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

using namespace std::chrono_literals;

// Liveness bound only: the old code never returned here at all.
constexpr auto kExitBound = 20s;

// build/uscope with stdout on `out_fd` and stderr on a pipe the test reads after the exit.
class Uscope {
 public:
  Uscope(const std::vector<std::string>& args, int out_fd) {
    int err[2];
    if (pipe2(err, O_CLOEXEC)) return;
    std::vector<std::string> argv{USCOPE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> v;  // before the fork: the child must not allocate
    for (auto& a : argv) v.push_back(a.data());
    v.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out_fd, 1);
      dup2(err[1], 2);
      execv(v[0], v.data());
      _exit(127);
    }
    close(err[1]);
    err_ = err[0];
  }
  ~Uscope() {
    if (pid_ > 0 && status_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (err_ >= 0) close(err_);
  }
  pid_t pid() const { return pid_; }
  // Waits until its trace program's links exist (it attached), or it exited.
  bool attached() {
    auto until = std::chrono::steady_clock::now() + kExitBound;
    while (std::chrono::steady_clock::now() < until) {
      if (!bpf_links_of_programs("trace_", pid_).empty()) return true;
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return false;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  // Exit status (128+N for signal N), or -1 when it had not exited within kExitBound (then it is
  // killed). Leaves its stderr in `err`.
  int wait_exit(std::string* err = nullptr) {
    auto until = std::chrono::steady_clock::now() + kExitBound;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        status_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(10ms);
    }
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (err) *err = read_all(err_);
    return status_;
  }
  static std::string read_all(int fd) {
    std::string s;
    char buf[65536];
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    return s;
  }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  int status_ = -2;
};

// A pipe the test holds both ends of: uscope's stdout when nobody reads it.
struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int p[2];
    if (pipe2(p, O_CLOEXEC) == 0) r = p[0], w = p[1];
  }
  ~Pipe() {
    if (r >= 0) close(r);
    if (w >= 0) close(w);
  }
  size_t unread() const {
    int n = 0;
    ioctl(r, FIONREAD, &n);
    return static_cast<size_t>(n);
  }
  // Until a writer would block: every slot of the pipe is taken (how many bytes that is depends
  // on how the writes were cut, so the byte count says nothing).
  bool wait_full() const {
    auto until = std::chrono::steady_clock::now() + kExitBound;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{w, POLLOUT, 0};
      if (poll(&p, 1, 0) == 0) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

// A process calling malloc as fast as it can.
struct Storm {
  GatedProcess p{{fixture("native/malloc_storm")}};
  Storm() { p.start(); }
};

TEST(storm, unread_stdout_pipe_does_not_keep_duration_from_stopping) {
  USCOPE_REQUIRE_ROOT();
  Storm storm;
  Pipe out;
  Uscope u({"trace", "--json", "-d", "1", "p:c:malloc \"%d\", arg1"}, out.w);
  std::string err;
  ASSERT_EQ(u.wait_exit(&err), 0) << err;
  // The summary could not follow the events into the full pipe: stderr has it, losses counted.
  EXPECT_NE(err.find("duration reached"), std::string::npos) << err;
  long long lost = summary_count(err, " lost (ring buffer full)");
  long long dropped = summary_count(err, " not written");
  EXPECT_GE(lost, 0) << err;
  EXPECT_GT(std::max(lost, 0LL) + std::max(dropped, 0LL), 0) << err;
  // What did reach the pipe is whole JSON lines.
  std::string got = Uscope::read_all(out.r);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), '\n');
  size_t start = 0, lines = 0;
  for (size_t nl; (nl = got.find('\n', start)) != std::string::npos; start = nl + 1, ++lines) {
    auto j = nlohmann::json::parse(got.substr(start, nl - start), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << got.substr(start, nl - start);
  }
  EXPECT_GT(lines, 0u);
}

TEST(storm, count_and_latency_tables_into_a_full_pipe_do_not_block_sigterm) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/alloc_loop")});
  target.start();
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  const std::string pid = std::to_string(target.pid());
  for (const std::string cmd : {"count", "latency"}) {
    // A table every 10 ms of every libc function called (count) or of malloc and free (latency)
    // fills a pipe nobody reads within seconds; a blocking print would then never return.
    Pipe out;
    Uscope u({cmd, "-i", "0.01", "-p", pid, cmd == "count" ? "c:*" : "c:malloc", "c:free"}, out.w);
    ASSERT_TRUE(out.wait_full()) << cmd;
    kill(u.pid(), SIGTERM);
    std::string err;
    EXPECT_EQ(u.wait_exit(&err), 0) << cmd << ": " << err;
    EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
    EXPECT_NE(err.find("not written"), std::string::npos) << err;
  }
  EXPECT_TRUE(links_released("count_hit"));
  EXPECT_TRUE(links_released("trace_"));
}

TEST(storm, sigterm_with_a_full_stdout_pipe_stops_and_detaches) {
  USCOPE_REQUIRE_ROOT();
  Storm storm;
  Pipe out;
  Uscope u({"trace", "p:c:malloc \"%d\", arg1"}, out.w);
  ASSERT_TRUE(u.attached());
  ASSERT_TRUE(out.wait_full());
  kill(u.pid(), SIGTERM);
  std::string err;
  EXPECT_EQ(u.wait_exit(&err), 0) << err;
  EXPECT_NE(err.find("interrupted;"), std::string::npos) << err;
  EXPECT_GE(summary_count(err, " events printed"), 0) << err;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(storm, max_events_stops_with_a_blocked_stdout_and_counts_what_was_not_written) {
  USCOPE_REQUIRE_ROOT();
  Storm storm;
  Pipe out;
  // More than the pipe holds (~180 KB of text): the old code blocked in write() before the last.
  Uscope u({"trace", "-M", "2000", "p:c:malloc \"%d\", arg1"}, out.w);
  std::string err;
  ASSERT_EQ(u.wait_exit(&err), 0) << err;
  EXPECT_NE(err.find("event limit reached"), std::string::npos) << err;
  long long printed = summary_count(err, " events printed");
  long long dropped = summary_count(err, " not written");
  EXPECT_GT(dropped, 0) << err;
  EXPECT_EQ(printed + dropped, 2000) << err;
}

TEST(storm, formatting_events_does_not_call_malloc_or_string_functions) {
  USCOPE_REQUIRE_ROOT();
  Storm storm;
  char path[] = "/tmp/uscope-storm-XXXXXX";
  int file = mkstemp(path);
  ASSERT_GE(file, 0);
  unlink(path);
  Uscope tracer({"trace", "--json", "p:c:malloc \"%d\", arg1"}, file);
  ASSERT_TRUE(tracer.attached());
  // Past start-up: events are being written.
  auto written = [file] {
    struct stat st {};
    return fstat(file, &st) == 0 ? st.st_size : 0;
  };
  for (auto until = std::chrono::steady_clock::now() + kExitBound;
       written() < (1 << 20) && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(10ms);
  auto counted = uscope({"count", "--json", "-p", std::to_string(tracer.pid()), "-d", "2",
                         "c:malloc", "c:free", "c:mem*", "c:str*"},
                        60);
  kill(tracer.pid(), SIGTERM);
  std::string err;
  ASSERT_EQ(tracer.wait_exit(&err), 0) << err;
  ASSERT_EQ(counted.exit_code, 0) << counted.err;
  uint64_t calls = 0;
  for (size_t start = 0, nl; (nl = counted.out.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    auto j = nlohmann::json::parse(counted.out.substr(start, nl - start), nullptr, false);
    if (j.is_discarded() || !j.contains("count")) continue;
    calls += j["count"].get<uint64_t>();
  }
  EXPECT_NE(counted.err.find("counting"), std::string::npos) << counted.err;  // attached
  // The events the tracer wrote while it ran (the count covered part of that time).
  lseek(file, 0, SEEK_SET);
  std::string all = Uscope::read_all(file);
  close(file);
  auto events = static_cast<uint64_t>(std::count(all.begin(), all.end(), '\n'));
  ASSERT_GT(events, 0u) << err;
  // Per event nothing is allocated or copied by libc: what is left is per wake-up or per
  // second, far below one call per thousand events.
  EXPECT_LT(calls * 1000, events) << calls << " libc calls for " << events << " events\n"
                                  << counted.out;
}

}  // namespace
}  // namespace uscope::e2e
