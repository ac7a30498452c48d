#pragma once
// The one loop of a uscope process: wakes on the file descriptors its jobs watch (ring buffers,
// a target's pidfd, an output waiting for room, a listening socket), on their timers (-d, -i, a
// push every 10 s) and on the stop signals, which it alone owns. The CLI runs one job on it; the
// agent runs many side by side. Each callback does a bounded piece of work, so a stop or a timer
// takes effect within milliseconds whatever one job's event rate.
#include <poll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"
#include "util/unique_fd.h"

namespace uscope {

// Why a run (or one job) ended. OutputClosed: a write to the output failed for good (EIO,
// ENOSPC; a reader that went away throws OutputClosed instead, util/output_closed.h). Quit: the
// user asked from the keyboard (top's q).
enum class StopReason {
  Signal,
  Duration,
  TargetExited,
  TargetExeced,
  MaxEvents,
  OutputClosed,
  Quit
};
std::string describe(StopReason r);

class Runner {
 public:
  using Clock = std::chrono::steady_clock;
  using Id = uint64_t;

  // Blocks SIGINT, SIGTERM and SIGHUP for the process and reads them through a signalfd, so a
  // stop lands between two callbacks, never in the middle of printing, and every exit path runs
  // the same teardown. One runner per process: it owns these signals until it is destroyed.
  static Result<std::unique_ptr<Runner>> create();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  // Unblocks the signals, taking first any that came while the process wound down (a second
  // Ctrl-C asked for the stop already made: it must not kill uscope once unblocked).
  ~Runner();

  // `ready` runs with poll's revents when `fd` has any of `events` (0: not polled for now, e.g.
  // an output that has nothing pending). Watches run in the order they were added.
  Id watch(int fd, short events, std::function<void(short revents)> ready);
  void set_events(Id watch, short events);
  void unwatch(Id watch);

  // `due` runs once at `when`, or every `period` from now on (a period missed while the loop was
  // busy runs once, and the next one keeps the original phase). Timers due at the same time run
  // in the order they were made.
  Id at(Clock::time_point when, std::function<void()> due);
  Id every(Clock::duration period, std::function<void()> due);
  void cancel(Id timer);

  // Runs after the watches of every turn; returns true when it has more ready at once (a ring
  // buffer read in batches), and the next poll then does not wait.
  Id each_turn(std::function<bool()> work);
  void remove_turn(Id work);

  // SIGINT and SIGTERM stop the run (StopReason::Signal); SIGHUP too unless `on_hangup` is set
  // (the agent's reload).
  void on_hangup(std::function<void()> hangup) { on_hangup_ = std::move(hangup); }

  // Ends run() after the callback that asks; the first reason asked wins.
  void stop(StopReason why);
  bool stopping() const { return stop_.has_value(); }

  // Until a stop. Clears the stop first, so one runner can run again (trace's drain after the
  // detach runs on the loop that collected).
  StopReason run();

 private:
  Runner() = default;
  // Callbacks are shared, so a turn holds one alive while it runs even when it removes itself,
  // without copying it (a copy allocates: the loop must not, at any event rate).
  struct Watch {
    Id id;
    int fd;
    short events;
    std::shared_ptr<std::function<void(short)>> ready;
  };
  struct Timer {
    Id id;
    Clock::time_point when;
    Clock::duration period;  // zero: once
    std::shared_ptr<std::function<void()>> due;
  };
  struct Work {
    Id id;
    std::shared_ptr<std::function<bool()>> work;
  };
  void read_signal();
  // Runs the timers due by `now`, earliest first; false when one of them stopped the run.
  bool run_timers(Clock::time_point now);

  UniqueFd signal_fd_;
  bool restore_mask_ = false;
  Id next_id_ = 1;
  std::vector<Watch> watches_;
  std::vector<Timer> timers_;
  std::vector<Work> work_;
  std::function<void()> on_hangup_;
  std::optional<StopReason> stop_;
};

}  // namespace uscope
