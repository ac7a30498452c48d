#pragma once
// For tests that act on a uscope session while it runs (signal it, kill it, kill its target): a
// uscope child whose output can be read at any moment, waiting for conditions, and a look at the
// BPF objects and fds left behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {

// Polls `cond` until it holds or `timeout_s` passes (a liveness bound, not a timing assertion).
inline bool wait_until(const std::function<bool()>& cond, double timeout_s = 20) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A running uscope (or any program: `argv` as given when `raw`), stdout and stderr in memory files.
class UscopeChild {
 public:
  explicit UscopeChild(const std::vector<std::string>& args, bool raw = false) {
    out_ = memfd_create("uscope-out", MFD_CLOEXEC);
    err_ = memfd_create("uscope-err", MFD_CLOEXEC);
    std::vector<std::string> argv;
    if (!raw) argv.push_back(USCOPE_BIN);
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> v;
    for (auto& a : argv) v.push_back(a.data());
    v.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      dup2(out_, 1);
      dup2(err_, 2);
      execv(v[0], v.data());
      _exit(127);
    }
  }
  ~UscopeChild() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
    close(err_);
  }
  UscopeChild(const UscopeChild&) = delete;
  UscopeChild& operator=(const UscopeChild&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const { return read_all(out_); }
  std::string err() const { return read_all(err_); }
  void signal(int sig) const { kill(pid_, sig); }
  // Exit code (128+N for signal N), or -1 if it did not exit within `timeout_s`.
  int wait(double timeout_s = 20) {
    if (reaped_) return exit_code_;
    int status = 0;
    bool done = wait_until([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout_s);
    if (!done) return -1;
    reaped_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }

 private:
  static std::string read_all(int fd) {
    std::string s;
    char buf[65536];
    ssize_t n;
    off_t off = 0;
    while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
      s.append(buf, static_cast<size_t>(n));
      off += n;
    }
    return s;
  }
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
};

// Number of open fds of a process.
inline int fd_count(pid_t pid) {
  int n = 0;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return -1;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Reads a 2-byte USDT semaphore in a live process.
inline int read_usdt_semaphore(pid_t pid, uint64_t file_offset, const std::string& object) {
  std::istringstream maps(shell("cat /proc/" + std::to_string(pid) + "/maps"));
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(object) == std::string::npos) continue;
    uint64_t start, end, off;
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx", &start, &end, &off) != 3) continue;
    if (file_offset < off || file_offset >= off + (end - start)) continue;
    uint16_t v = 0;
    int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = pread(fd, &v, 2, static_cast<off_t>(start + file_offset - off));
    close(fd);
    return n == 2 ? v : -1;
  }
  return -1;
}

}  // namespace uscope::e2e
