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
  if (opts.runner) {
    loop.runner_ = opts.runner;
  } else {
    auto runner = Runner::create();
    if (!runner) return tl::unexpected(runner.error());
    loop.own_runner_ = std::move(*runner);
    loop.runner_ = loop.own_runner_.get();
  }
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
  install(cb, [&r](StopReason why) { r.stop(why); });
  StopReason why = r.run();
  uninstall();
  return why;
}

void EventLoop::install(const Callbacks& callbacks, std::function<void(StopReason)> stopped) {
  uninstall();
  installed_ = std::make_unique<Installed>();
  Installed& in = *installed_;
  in.cb = callbacks;
  in.stopped = std::move(stopped);
  const Callbacks& cb = in.cb;
  Runner& r = *runner_;
  const auto start = Runner::Clock::now();
  exe_armed_ = !opts_.watch_is_child;
  auto stop = [&in](StopReason why) { in.stopped(why); };
  if (pid_fd_.valid())
    in.watches.push_back(r.watch(pid_fd_.get(), POLLIN, [this, stop](short) {
      reap_child();
      stop(StopReason::TargetExited);  // the caller reads what is left after detaching
    }));
  if (cb.input_fd >= 0)
    in.watches.push_back(r.watch(cb.input_fd, POLLIN, [&cb, stop](short) {
      if (cb.input()) stop(StopReason::Quit);
    }));
  if (cb.output)
    in.watches.push_back(in.out_watch = r.watch(cb.output->fd(), 0, [&cb, stop](short) {
      cb.output->write_ready();
      if (cb.output->failed()) stop(StopReason::OutputClosed);
    }));
  if (cb.data_fd >= 0)
    in.watches.push_back(in.data_watch =
                             r.watch(cb.data_fd, 0, [&in](short) { in.data_ready = true; }));
  // While the output is full the ring is not read (the kernel counts what no longer fits as lost).
  auto arm = [&in, &r] {
    const Callbacks& cb = in.cb;
    bool room = !cb.output || cb.output->has_room();
    if (in.out_watch) r.set_events(in.out_watch, cb.output->pending() > 0 ? POLLOUT : 0);
    if (in.data_watch) r.set_events(in.data_watch, room ? POLLIN : 0);
    return room;
  };
  arm();
  in.turn = r.each_turn([&in, arm, stop] {
    const Callbacks& cb = in.cb;
    if (cb.drain && (!cb.output || cb.output->has_room())) {
      bool due = in.more || in.data_ready || cb.data_poll.count() > 0;
      in.more = due && cb.drain();
    }
    in.data_ready = false;
    if (cb.done && cb.done()) stop(StopReason::MaxEvents);
    return arm() && in.more;
  });
  // In the order they win when due together: an exec, then -d, then -i.
  // A stat() of /proc/PID/exe per wake-up would cost a syscall per ring-buffer batch.
  if (opts_.check_exec) {
    auto check_exec = [this, stop] {
      if (target_execed()) stop(StopReason::TargetExeced);
    };
    in.timers.push_back(r.at(start, check_exec));
    in.timers.push_back(r.every(kExecCheck, check_exec));
  }
  if (opts_.duration)
    in.timers.push_back(
        r.at(start + std::chrono::duration_cast<Runner::Clock::duration>(*opts_.duration),
             [stop] { stop(StopReason::Duration); }));
  if (opts_.interval)
    in.timers.push_back(
        r.every(std::chrono::duration_cast<Runner::Clock::duration>(*opts_.interval), [&cb, arm] {
          if (cb.interval) cb.interval();
          arm();  // what it printed waits for the output to take it
        }));
  // The BPF side batches its wake-ups: the ring is looked at this often even without one.
  if (cb.data_fd >= 0 && cb.data_poll.count() > 0)
    in.timers.push_back(r.every(cb.data_poll, [] {}));
}

void EventLoop::uninstall() {
  if (!installed_) return;
  Runner& r = *runner_;
  for (auto id : installed_->watches) r.unwatch(id);
  for (auto id : installed_->timers) r.cancel(id);
  r.remove_turn(installed_->turn);
  installed_.reset();
}

}  // namespace uscope
