#include "util/runner.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

// The longest a poll waits without a timer: bounds the cost of a missed wake-up.
constexpr auto kMaxWait = std::chrono::milliseconds(1000);

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

Result<std::unique_ptr<Runner>> Runner::create() {
  std::unique_ptr<Runner> r(new Runner());
  sigset_t set = stop_signals();
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
    return fail_errno(errno, "sigprocmask: {}", std::strerror(errno));
  r->restore_mask_ = true;
  r->signal_fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!r->signal_fd_.valid()) return fail_errno(errno, "signalfd: {}", std::strerror(errno));
  return r;
}

Runner::~Runner() {
  if (!restore_mask_) return;
  sigset_t set = stop_signals();
  const timespec now{0, 0};
  while (sigtimedwait(&set, nullptr, &now) > 0) {
  }
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

Runner::Id Runner::watch(int fd, short events, std::function<void(short)> ready) {
  watches_.push_back(
      {next_id_, fd, events, std::make_shared<std::function<void(short)>>(std::move(ready))});
  return next_id_++;
}

void Runner::set_events(Id watch, short events) {
  for (auto& w : watches_)
    if (w.id == watch) w.events = events;
}

void Runner::unwatch(Id watch) {
  std::erase_if(watches_, [&](const Watch& w) { return w.id == watch; });
}

Runner::Id Runner::at(Clock::time_point when, std::function<void()> due) {
  timers_.push_back({next_id_, when, Clock::duration::zero(),
                     std::make_shared<std::function<void()>>(std::move(due))});
  return next_id_++;
}

Runner::Id Runner::every(Clock::duration period, std::function<void()> due) {
  timers_.push_back({next_id_, Clock::now() + period, period,
                     std::make_shared<std::function<void()>>(std::move(due))});
  return next_id_++;
}

void Runner::cancel(Id timer) {
  std::erase_if(timers_, [&](const Timer& t) { return t.id == timer; });
}

Runner::Id Runner::each_turn(std::function<bool()> work) {
  work_.push_back({next_id_, std::make_shared<std::function<bool()>>(std::move(work))});
  return next_id_++;
}

void Runner::remove_turn(Id work) {
  std::erase_if(work_, [&](const Work& w) { return w.id == work; });
}

void Runner::stop(StopReason why) {
  if (!stop_) stop_ = why;
}

void Runner::read_signal() {
  signalfd_siginfo si;
  while (read(signal_fd_.get(), &si, sizeof(si)) == sizeof(si)) {
    if (si.ssi_signo == SIGHUP && on_hangup_)
      on_hangup_();
    else
      stop(StopReason::Signal);
  }
}

bool Runner::run_timers(Clock::time_point now) {
  for (;;) {
    // The earliest due timer, the older one on a tie: -d before -i when both fall due at once.
    auto it = timers_.end();
    for (auto t = timers_.begin(); t != timers_.end(); ++t)
      if (t->when <= now && (it == timers_.end() || t->when < it->when)) it = t;
    if (it == timers_.end()) return true;
    auto due = it->due;  // alive while it runs, even if it cancels its own timer
    if (it->period == Clock::duration::zero()) {
      timers_.erase(it);
    } else {
      it->when += it->period;
      if (it->when <= now) it->when = now + it->period;
    }
    (*due)();
    if (stop_) return false;
  }
}

StopReason Runner::run() {
  stop_.reset();
  bool more = false;  // a turn's work has more ready at once
  std::vector<pollfd> fds;
  std::vector<Id> ids;
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({signal_fd_.get(), POLLIN, 0});
    for (const auto& w : watches_) {
      if (!w.events) continue;
      fds.push_back({w.fd, w.events, 0});
      ids.push_back(w.id);
    }
    auto now = Clock::now();
    auto wake = now + kMaxWait;
    for (const auto& t : timers_) wake = std::min(wake, t.when);
    int timeout = 0;
    if (!more) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
      timeout = static_cast<int>(std::max<long long>(ms, 0));
    }
    int n = poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) return StopReason::Signal;
    // A stop comes first: whatever else is ready, it takes effect now.
    if (fds[0].revents & POLLIN) read_signal();
    if (stop_) return *stop_;
    for (size_t i = 1; n > 0 && i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto w = std::find_if(watches_.begin(), watches_.end(),
                            [&](const Watch& x) { return x.id == ids[i - 1]; });
      if (w == watches_.end()) continue;  // unwatched by an earlier callback of this turn
      auto ready = w->ready;
      (*ready)(fds[i].revents);
      if (stop_) return *stop_;
    }
    more = false;
    for (size_t i = 0; i < work_.size(); ++i) {
      auto work = work_[i].work;
      more |= (*work)();
      if (stop_) return *stop_;
    }
    if (!run_timers(Clock::now())) return *stop_;
  }
}

}  // namespace uscope
