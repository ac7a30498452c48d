#include "collect/event_loop.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace uscope {

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// How often the loop looks at the target's executable even when nothing else wakes it.
constexpr int kExecCheckMs = 100;

}  // namespace

std::string describe(StopReason r) {
  switch (r) {
    case StopReason::Signal:
      return "interrupted";
    case StopReason::Duration:
      return "duration reached";
    case StopReason::TargetExited:
      return "target exited";
    case StopReason::TargetExeced:
      return "target exec'd another program";
    case StopReason::MaxEvents:
      return "event limit reached";
    case StopReason::OutputClosed:
      return "writing the output failed";
    case StopReason::Quit:
      return "quit";
  }
  return "stopped";
}

Result<EventLoop> EventLoop::create(const EventLoopOptions& opts) {
  EventLoop loop;
  loop.opts_ = opts;
  sigset_t set = stop_signals();
  // Signals arrive through a signalfd so that Ctrl-C ends the loop between two reads, never in
  // the middle of printing, and every exit path runs the same teardown.
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
    return fail_errno(errno, "sigprocmask: {}", std::strerror(errno));
  loop.restore_mask_ = true;
  loop.signal_fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!loop.signal_fd_.valid()) return fail_errno(errno, "signalfd: {}", std::strerror(errno));
  if (opts.watch_pid > 0) {
    int fd = static_cast<int>(syscall(SYS_pidfd_open, opts.watch_pid, 0));
    if (fd < 0) {
      int e = errno;
      if (e == ESRCH) return fail("process {} exited", opts.watch_pid);
      return fail_errno(e, "pidfd_open({}): {}", opts.watch_pid, std::strerror(e));
    }
    loop.pid_fd_.reset(fd);
    // Built once: the loop itself allocates nothing while it runs.
    loop.exe_path_ = "/proc/" + std::to_string(opts.watch_pid) + "/exe";
    if (opts.exe_dev == 0 && opts.exe_ino == 0) {
      struct stat st {};
      if (stat(loop.exe_path_.c_str(), &st) == 0) {
        loop.opts_.exe_dev = st.st_dev;
        loop.opts_.exe_ino = st.st_ino;
      }
    }
  }
  return loop;
}

EventLoop::EventLoop(EventLoop&& o) noexcept
    : opts_(o.opts_),
      signal_fd_(std::move(o.signal_fd_)),
      pid_fd_(std::move(o.pid_fd_)),
      exe_path_(std::move(o.exe_path_)),
      restore_mask_(std::exchange(o.restore_mask_, false)),
      exe_armed_(o.exe_armed_),
      child_status_(o.child_status_) {}

EventLoop::~EventLoop() {
  if (restore_mask_) {
    sigset_t set = stop_signals();
    // A second Ctrl-C (or a kill of the whole process group after one of the process) that came
    // while the session wound down asked for the stop already made: taken here, it cannot kill
    // uscope with the default action once unblocked, after a clean detach.
    const timespec now{0, 0};
    while (sigtimedwait(&set, nullptr, &now) > 0) {
    }
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
  }
}

bool EventLoop::target_execed() {
  if (opts_.watch_pid <= 0 || (opts_.exe_dev == 0 && opts_.exe_ino == 0)) return false;
  struct stat st {};
  if (stat(exe_path_.c_str(), &st) != 0) return false;  // gone: the pidfd reports the exit
  bool same = st.st_dev == opts_.exe_dev && st.st_ino == opts_.exe_ino;
  if (same) exe_armed_ = true;
  // A launched child runs uscope's image until its exec: only a change after the expected
  // program was seen is an exec of the target.
  return exe_armed_ && !same;
}

void EventLoop::reap_child() {
  if (!opts_.watch_is_child) return;
  int status = 0;
  struct rusage usage {};
  if (wait4(opts_.watch_pid, &status, WNOHANG, &usage) == opts_.watch_pid) {
    auto ns = [](const timeval& tv) {
      return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000 +
             static_cast<uint64_t>(tv.tv_usec) * 1'000;
    };
    child_cpu_time_ = CpuTime{ns(usage.ru_utime), ns(usage.ru_stime)};
    if (WIFEXITED(status)) child_status_ = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) child_status_ = 128 + WTERMSIG(status);
  }
}

StopReason EventLoop::run(const Callbacks& cb) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto next_interval = opts_.interval
                           ? start + std::chrono::duration_cast<clock::duration>(*opts_.interval)
                           : clock::time_point::max();
  const auto deadline = opts_.duration
                            ? start + std::chrono::duration_cast<clock::duration>(*opts_.duration)
                            : clock::time_point::max();
  exe_armed_ = !opts_.watch_is_child;
  auto next_exec_check = start;
  bool more = false;  // the last drain left events in the ring
  for (;;) {
    bool room = !cb.output || cb.output->has_room();
    pollfd fds[5];
    nfds_t n_fds = 0;
    fds[n_fds++] = {signal_fd_.get(), POLLIN, 0};
    int pid_at = -1, data_at = -1, out_at = -1, input_at = -1;
    if (pid_fd_.valid())
      pid_at = static_cast<int>(n_fds), fds[n_fds++] = {pid_fd_.get(), POLLIN, 0};
    if (cb.data_fd >= 0 && room)
      data_at = static_cast<int>(n_fds), fds[n_fds++] = {cb.data_fd, POLLIN, 0};
    if (cb.output && cb.output->pending() > 0)
      out_at = static_cast<int>(n_fds), fds[n_fds++] = {cb.output->fd(), POLLOUT, 0};
    if (cb.input_fd >= 0)
      input_at = static_cast<int>(n_fds), fds[n_fds++] = {cb.input_fd, POLLIN, 0};
    auto now = clock::now();
    auto wake = std::min({deadline, next_interval, next_exec_check});
    if (cb.data_fd >= 0 && room && cb.data_poll.count() > 0)
      wake = std::min(wake, now + cb.data_poll);
    int timeout = 0;
    if (!(more && room)) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
      timeout = static_cast<int>(std::clamp<long long>(ms, 0, kExecCheckMs));
    }
    int n = poll(fds, n_fds, timeout);
    if (n < 0 && errno != EINTR) return StopReason::Signal;
    // A stop comes first: whatever else is ready, it takes effect now.
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si;
      if (read(signal_fd_.get(), &si, sizeof(si)) > 0) return StopReason::Signal;
    }
    if (pid_at >= 0 && (fds[pid_at].revents & POLLIN)) {
      reap_child();
      return StopReason::TargetExited;  // the caller reads what is left after detaching
    }
    if (input_at >= 0 && fds[input_at].revents && cb.input()) return StopReason::Quit;
    if (out_at >= 0 && fds[out_at].revents) {
      cb.output->write_ready();
      if (cb.output->failed()) return StopReason::OutputClosed;
    }
    if (cb.drain && (!cb.output || cb.output->has_room())) {
      bool due = more || (data_at >= 0 && fds[data_at].revents) || cb.data_poll.count() > 0;
      more = due && cb.drain();
    }
    if (cb.done && cb.done()) return StopReason::MaxEvents;
    now = clock::now();
    // A stat() of /proc/PID/exe per wake-up would cost a syscall per ring-buffer batch.
    if (now >= next_exec_check) {
      if (target_execed()) return StopReason::TargetExeced;
      next_exec_check = now + std::chrono::milliseconds(kExecCheckMs);
    }
    if (now >= deadline) return StopReason::Duration;
    if (now >= next_interval) {
      if (cb.interval) cb.interval();
      next_interval += std::chrono::duration_cast<clock::duration>(*opts_.interval);
    }
  }
}

}  // namespace uscope
