#include "e2e_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace uscope::e2e {

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

// eu-stack's view of `pid`'s threads on this process's stderr. posix_spawn, not fork: it may be
// called from any thread.
void print_stacks(pid_t pid) {
  const std::string p = std::to_string(pid);
  const char* argv[] = {"eu-stack", "-p", p.c_str(), nullptr};
  pid_t child = -1;
  if (posix_spawnp(&child, "eu-stack", nullptr, nullptr, const_cast<char* const*>(argv), environ) ==
      0)
    waitpid(child, nullptr, 0);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// A test still running this long is stuck somewhere without a deadline of its own: before ctest
// stops it (scripts/test.sh: --timeout 300, which prints nothing of where), it says so with the
// stacks of its own threads and of its children, kills the children and fails.
// USCOPE_E2E_STUCK_S=N changes it (to see this at work).
const std::chrono::seconds kStuckTest{[] {
  const char* s = std::getenv("USCOPE_E2E_STUCK_S");
  return s ? std::atoi(s) : 270;
}()};

class Watchdog : public testing::EmptyTestEventListener {
 public:
  Watchdog() {
    std::thread([s = state_] {
      std::unique_lock lock(s->mu);
      for (;;) {
        s->changed.wait(lock, [&] { return s->armed.has_value(); });
        const auto until = *s->armed;
        if (s->changed.wait_until(lock, until, [&] { return s->armed != until; })) continue;
        stuck();
      }
    }).detach();
  }
  void OnTestStart(const testing::TestInfo&) override { arm(Clock::now() + kStuckTest); }
  void OnTestEnd(const testing::TestInfo&) override { arm(std::nullopt); }

 private:
  using Clock = std::chrono::steady_clock;
  // Never freed: the thread waits on it until the process exits.
  struct State {
    std::mutex mu;
    std::condition_variable changed;
    std::optional<Clock::time_point> armed;
  };
  static inline State* const state_ = new State;

  static void arm(std::optional<Clock::time_point> until) {
    std::lock_guard lock(state_->mu);
    state_->armed = until;
    state_->changed.notify_all();
  }
  [[noreturn]] static void stuck() {
    const testing::TestInfo* t = testing::UnitTest::GetInstance()->current_test_info();
    fmt::print(stderr, "e2e: {}.{} still running after {} s; the stacks of its threads:\n",
               t ? t->test_suite_name() : "?", t ? t->name() : "?", kStuckTest.count());
    print_stacks(getpid());
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(e.path() / "stat");
      std::string line;
      if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) continue;
      std::istringstream rest(line.substr(line.rfind(')') + 2));
      char state;
      pid_t ppid = 0;
      if (!(rest >> state >> ppid) || ppid != getpid()) continue;
      const pid_t child = std::stoi(name);
      fmt::print(stderr, "e2e: its child {} ({}):\n", child,
                 std::filesystem::read_symlink(e.path() / "exe", ec).string());
      print_stacks(child);
      kill(child, SIGKILL);
    }
    _exit(1);
  }
};

const bool kWatchdogInstalled = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new Watchdog);
  return true;
}();

}  // namespace

RunningCommand::RunningCommand(const std::vector<std::string>& argv, int timeout_s) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    exited_ = true;
    return;
  }
  // Everything the child needs is made before the fork: a child of this multi-threaded process
  // must not allocate (another thread may have held the allocator's lock at the fork).
  auto v = c_argv(argv);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    dup2(devnull, 0);
    execvp(v[0], v.data());
    _exit(127);
  }
  if (devnull >= 0) close(devnull);
  name_ = argv.empty() ? "" : argv[0];
  close(out[1]);
  close(err[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  collector_ =
      std::thread([this, fd = out[0], efd = err[0], deadline] { collect(fd, efd, deadline); });
}

RunningCommand RunningCommand::uscope(const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::string> argv{USCOPE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunningCommand(argv, timeout_s);
}

RunningCommand::~RunningCommand() {
  signal(SIGKILL);
  if (collector_.joinable()) collector_.join();
}

void RunningCommand::collect(int out_fd, int err_fd,
                             std::chrono::steady_clock::time_point deadline) {
  std::array<pollfd, 2> fds{{{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}}};
  int open_fds = 2;
  while (open_fds > 0) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) {
      // Said with its threads' stacks before it goes: a hang shows where it was.
      fmt::print(stderr, "e2e: {} (pid {}) still running at its deadline; its threads:\n", name_,
                 pid_);
      print_stacks(pid_);
      kill(pid_, SIGKILL);
      break;
    }
    if (poll(fds.data(), fds.size(), left) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        std::lock_guard lock(mu_);
        (i == 0 ? result_.out : result_.err).append(buf, static_cast<size_t>(n));
        changed_.notify_all();
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid_, &status, 0);
  std::lock_guard lock(mu_);
  result_.exit_code = decode_status(status);
  exited_ = true;
  changed_.notify_all();
}

void RunningCommand::signal(int sig) {
  std::lock_guard lock(mu_);
  if (!exited_) kill(pid_, sig);
}

testing::AssertionResult RunningCommand::wait_for_output(const std::string& text) {
  std::unique_lock lock(mu_);
  bool found = changed_.wait_for(
      lock, kWaitTimeout, [&] { return exited_ || result_.out.find(text) != std::string::npos; });
  if (result_.out.find(text) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << (found ? "exited" : "timed out") << " before printing '" << text << "'; stdout:\n"
         << result_.out << "\nstderr:\n"
         << result_.err;
}

testing::AssertionResult RunningCommand::wait_for_stderr(const std::string& text, size_t times) {
  auto count = [&] {
    size_t n = 0;
    for (size_t at = result_.err.find(text); at != std::string::npos;
         at = result_.err.find(text, at + text.size()))
      ++n;
    return n;
  };
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, kWaitTimeout, [&] { return exited_ || count() >= times; });
  if (count() >= times) return testing::AssertionSuccess();
  return testing::AssertionFailure() << (exited_ ? "exited" : "timed out") << " with '" << text
                                     << "' " << count() << " of " << times << " times on stderr:\n"
                                     << result_.err;
}

CommandResult RunningCommand::finish() {
  if (collector_.joinable()) collector_.join();
  std::lock_guard lock(mu_);
  return result_;
}

CommandResult run(const std::vector<std::string>& argv, int timeout_s) {
  return RunningCommand(argv, timeout_s).finish();
}

CommandResult uscope(const std::vector<std::string>& args, int timeout_s) {
  return RunningCommand::uscope(args, timeout_s).finish();
}

std::string shell(const std::string& cmd) {
  return run({"/bin/sh", "-c", cmd}).out;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

GatedProcess::GatedProcess(const std::vector<std::string>& argv) {
  int in[2], out[2], execd[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(execd, O_CLOEXEC)) return;
  auto v = c_argv(argv);  // before the fork: the child must not allocate (see RunningCommand)
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execv(v[0], v.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(execd[1]);
  // The CLOEXEC write end closes at the exec: once read() sees EOF, /proc/PID shows the new
  // program, not a copy of this test. A child that never gets there is said, with its stack.
  pollfd p{execd[0], POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kWaitTimeout).count())) <= 0) {
    ADD_FAILURE() << "the child for " << argv[0] << " (pid " << pid_ << ") did not exec within "
                  << kWaitTimeout.count() << " s";
    print_stacks(pid_);
  }
  close(execd[0]);
  stdin_w_ = in[1];
  stdout_r_ = out[0];
}

GatedProcess::~GatedProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (stdin_w_ >= 0) close(stdin_w_);
  if (stdout_r_ >= 0) close(stdout_r_);
}

void GatedProcess::start() {
  char go = 'g';
  ASSERT_EQ(write(stdin_w_, &go, 1), 1);
}

void GatedProcess::send(const std::string& bytes) {
  ASSERT_EQ(write(stdin_w_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

testing::AssertionResult GatedProcess::wait_for_line(const std::string& text) {
  auto deadline = std::chrono::steady_clock::now() + kWaitTimeout;
  for (;;) {
    for (size_t begin = 0, end; (end = unread_.find('\n', begin)) != std::string::npos;
         begin = end + 1) {
      if (unread_.substr(begin, end - begin).find(text) == std::string::npos) continue;
      last_line_ = unread_.substr(begin, end - begin);
      unread_.erase(0, end + 1);
      return testing::AssertionSuccess();
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{stdout_r_, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0)
      return testing::AssertionFailure()
             << "process " << pid_ << " printed no line with '" << text << "' within "
             << kWaitTimeout.count() << " s; it printed: " << unread_;
    char buf[4096];
    ssize_t n = read(stdout_r_, buf, sizeof(buf));
    if (n <= 0)
      return testing::AssertionFailure()
             << "process " << pid_ << " closed its stdout before a line with '" << text
             << "'; it printed: " << unread_;
    unread_.append(buf, static_cast<size_t>(n));
  }
}

int GatedProcess::wait(std::string* out) {
  std::string text = std::move(unread_);
  char buf[4096];
  ssize_t n;
  while ((n = read(stdout_r_, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
  if (out) *out = text;
  return decode_status(status);
}

namespace {

// PIDs holding an fd to BPF link `id` (from /proc/*/fdinfo, which names the link id).
std::set<int> link_owners(int id) {
  std::set<int> owners;
  std::string out = shell("grep -l '^link_id:[[:space:]]*" + std::to_string(id) +
                          "$' /proc/[0-9]*/fdinfo/* 2>/dev/null");
  size_t pos = 0;
  while ((pos = out.find("/proc/", pos)) != std::string::npos) {
    owners.insert(std::atoi(out.c_str() + pos + 6));
    pos += 6;
  }
  return owners;
}

}  // namespace

std::vector<int> bpf_links_of_programs(const std::string& prefix, pid_t owner) {
  auto progs = nlohmann::json::parse(shell("bpftool -j prog list"), nullptr, false);
  auto links = nlohmann::json::parse(shell("bpftool -j link list"), nullptr, false);
  std::set<int> prog_ids;
  if (progs.is_array())
    for (const auto& p : progs)
      if (p.value("name", "").rfind(prefix, 0) == 0) prog_ids.insert(p.value("id", -1));
  std::vector<int> out;
  if (!links.is_array()) return out;
  for (const auto& l : links) {
    if (!prog_ids.count(l.value("prog_id", -2))) continue;
    // Links held by other live processes (a benchmark, a developer's session) are not ours;
    // ours are held by this test process, or by nobody any more (pinned or leaked).
    int id = l.value("id", -1);
    auto owners = link_owners(id);
    if (owners.empty() || owners.count(getpid()) || (owner > 0 && owners.count(owner)))
      out.push_back(id);
  }
  return out;
}

testing::AssertionResult links_released(const std::string& prefix, pid_t owner) {
  auto r = wait_until("no BPF link of a program named " + prefix + "* is left",
                      [&] { return bpf_links_of_programs(prefix, owner).empty(); });
  if (!r) r << "; bpftool link list:\n" << shell("bpftool link list");
  return r;
}

std::vector<int> bpf_links_held_by(pid_t pid, const std::string& prefix) {
  // A link's fdinfo names it and its program: "link_id:\t7" and "prog_id:\t42".
  std::vector<std::pair<int, int>> held;  // link id, program id
  std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream in(entry.path());
    int link = -1, prog = -1;
    for (std::string line; std::getline(in, line);) {
      std::sscanf(line.c_str(), "link_id: %d", &link);
      std::sscanf(line.c_str(), "prog_id: %d", &prog);
    }
    if (link >= 0 && prog >= 0) held.emplace_back(link, prog);
  }
  std::vector<int> out;
  if (held.empty()) return out;
  auto progs = nlohmann::json::parse(shell("bpftool -j prog list"), nullptr, false);
  std::set<int> named;
  if (progs.is_array())
    for (const auto& p : progs)
      if (p.value("name", "").rfind(prefix, 0) == 0) named.insert(p.value("id", -1));
  for (auto [link, prog] : held)
    if (named.count(prog)) out.push_back(link);
  return out;
}

testing::AssertionResult wait_until(const std::string& what, const std::function<bool()>& holds,
                                    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!holds()) {
    if (std::chrono::steady_clock::now() > deadline)
      return testing::AssertionFailure()
             << "timed out after " << timeout.count() << " ms waiting until " << what;
    // Polling, not timing: the wait ends at the first check where the condition holds.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult wait_for_mapping(pid_t pid, const std::string& library) {
  std::string maps = "/proc/" + std::to_string(pid) + "/maps";
  auto mapped = [&] {
    std::ifstream in(maps);
    for (std::string line; std::getline(in, line);) {
      char perms[8] = {};
      if (std::sscanf(line.c_str(), "%*x-%*x %7s", perms) == 1 && perms[2] == 'x' &&
          line.find(library) != std::string::npos)
        return true;
    }
    return false;
  };
  auto r =
      wait_until("process " + std::to_string(pid) + " maps " + library + " executable", mapped);
  if (!r) r << "; " << maps << ":\n" << shell("cat " + maps);
  return r;
}

testing::AssertionResult wait_for_links(pid_t owner, const std::string& prefix) {
  return wait_until(
      "process " + std::to_string(owner) + " holds a BPF link of a program named " + prefix + "*",
      [&] { return !bpf_links_held_by(owner, prefix).empty(); });
}

testing::AssertionResult wait_for_port(int port) {
  return wait_until("something accepts TCP connections on 127.0.0.1:" + std::to_string(port), [&] {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    return ok;
  });
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

long long summary_count(const std::string& text, const std::string& name) {
  static const std::regex special(R"([\^$.|?*+()\[\]{}\\])");
  const std::string literal = std::regex_replace(name, special, R"(\$&)");
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("(?:^|[^0-9])([0-9]+)" + literal))) return -1;
  return std::stoll(m[1].str());
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("{")) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

std::string fixture(const std::string& relative) {
  return std::string(USCOPE_FIXTURE_DIR) + "/" + relative;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string prometheus_query(int port, const std::string& promql) {
  const std::string out = shell(fmt::format(
      "curl -s -G --data-urlencode 'query={}' http://127.0.0.1:{}/api/v1/query", promql, port));
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || j["status"] != "success" || j["data"]["result"].empty()) return "";
  return j["data"]["result"][0]["value"][1].get<std::string>();
}

}  // namespace uscope::e2e
