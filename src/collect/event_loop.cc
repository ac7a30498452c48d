#include "collect/event_loop.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace uscope {

namespace {

// How often the loop looks at the target's executable even when nothing else wakes it.
constexpr auto kExecCheck = std::chrono::milliseconds(100);

}  // namespace

Result<EventLoop> EventLoop::create(const EventLoopOptions& opts) {
  EventLoop loop;
  loop.opts_ = opts;
  auto runner = Runner::create();
  if (!runner) return tl::unexpected(runner.error());
  loop.runner_ = std::move(*runner);
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
  Runner& r = *runner_;
  const auto start = Runner::Clock::now();
  exe_armed_ = !opts_.watch_is_child;
  bool more = false;        // the last drain left events in the ring
  bool data_ready = false;  // the ring signalled in this turn
  std::vector<Runner::Id> watches, timers;
  if (pid_fd_.valid())
    watches.push_back(r.watch(pid_fd_.get(), POLLIN, [&](short) {
      reap_child();
      r.stop(StopReason::TargetExited);  // the caller reads what is left after detaching
    }));
  if (cb.input_fd >= 0)
    watches.push_back(r.watch(cb.input_fd, POLLIN, [&](short) {
      if (cb.input()) r.stop(StopReason::Quit);
    }));
  Runner::Id out_watch = 0, data_watch = 0;
  if (cb.output)
    watches.push_back(out_watch = r.watch(cb.output->fd(), 0, [&](short) {
      cb.output->write_ready();
      if (cb.output->failed()) r.stop(StopReason::OutputClosed);
    }));
  if (cb.data_fd >= 0)
    watches.push_back(data_watch = r.watch(cb.data_fd, 0, [&](short) { data_ready = true; }));
  // While the output is full the ring is not read (the kernel counts what no longer fits as lost).
  auto arm = [&] {
    bool room = !cb.output || cb.output->has_room();
    if (out_watch) r.set_events(out_watch, cb.output->pending() > 0 ? POLLOUT : 0);
    if (data_watch) r.set_events(data_watch, room ? POLLIN : 0);
    return room;
  };
  arm();
  auto turn = r.each_turn([&] {
    if (cb.drain && (!cb.output || cb.output->has_room())) {
      bool due = more || data_ready || cb.data_poll.count() > 0;
      more = due && cb.drain();
    }
    data_ready = false;
    if (cb.done && cb.done()) r.stop(StopReason::MaxEvents);
    return arm() && more;
  });
  // In the order they win when due together: an exec, then -d, then -i.
  // A stat() of /proc/PID/exe per wake-up would cost a syscall per ring-buffer batch.
  auto check_exec = [&] {
    if (target_execed()) r.stop(StopReason::TargetExeced);
  };
  timers.push_back(r.at(start, check_exec));
  timers.push_back(r.every(kExecCheck, check_exec));
  if (opts_.duration)
    timers.push_back(
        r.at(start + std::chrono::duration_cast<Runner::Clock::duration>(*opts_.duration),
             [&] { r.stop(StopReason::Duration); }));
  if (opts_.interval)
    timers.push_back(
        r.every(std::chrono::duration_cast<Runner::Clock::duration>(*opts_.interval), [&] {
          if (cb.interval) cb.interval();
          arm();  // what it printed waits for the output to take it
        }));
  // The BPF side batches its wake-ups: the ring is looked at this often even without one.
  if (cb.data_fd >= 0 && cb.data_poll.count() > 0) timers.push_back(r.every(cb.data_poll, [] {}));
  StopReason why = r.run();
  for (auto id : watches) r.unwatch(id);
  for (auto id : timers) r.cancel(id);
  r.remove_turn(turn);
  return why;
}

}  // namespace uscope
