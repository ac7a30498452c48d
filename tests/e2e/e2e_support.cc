#include "e2e_support.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

namespace uscope::e2e {

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

CommandResult run(const std::vector<std::string>& argv, int timeout_s) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    auto v = c_argv(argv);
    execvp(v[0], v.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  CommandResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::array<pollfd, 2> fds{{{out[0], POLLIN, 0}, {err[0], POLLIN, 0}}};
  int open_fds = 2;
  while (open_fds > 0) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) {
      kill(pid, SIGKILL);
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
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = decode_status(status);
  return r;
}

CommandResult uscope(const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::string> argv{USCOPE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, timeout_s);
}

std::string shell(const std::string& cmd) {
  return run({"/bin/sh", "-c", cmd}).out;
}

GatedProcess::GatedProcess(const std::vector<std::string>& argv) {
  int in[2], out[2], execd[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(execd, O_CLOEXEC)) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    auto v = c_argv(argv);
    execv(v[0], v.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(execd[1]);
  // The CLOEXEC write end closes at the exec: once read() sees EOF, /proc/PID shows the new
  // program, not a copy of this test.
  char byte;
  while (read(execd[0], &byte, 1) > 0) {
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

int GatedProcess::wait(std::string* out) {
  std::string text;
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

std::string fixture(const std::string& relative) {
  return std::string(USCOPE_FIXTURE_DIR) + "/" + relative;
}

}  // namespace uscope::e2e
