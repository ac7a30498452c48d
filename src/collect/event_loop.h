#pragma once
// One tracing session's watches on a runner (util/runner.h): ring-buffer data, the target's exit
// (pidfd) or exec (its /proc/PID/exe changes), the -d deadline, the -i interval and the output
// becoming writable; SIGINT/SIGTERM are the runner's. The CLI runs one session on a runner of its
// own (run()); the agent installs one per watched process on its shared runner (install()). The
// work per wake-up is bounded (one batch of events, a few pieces of output), so a stop takes
// effect within milliseconds at any event rate.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "discover/process.h"
#include "util/output_buffer.h"
#include "util/result.h"
#include "util/runner.h"
#include "util/unique_fd.h"

namespace uscope {

struct EventLoopOptions {
  pid_t watch_pid = 0;          // 0: no target to watch
  bool watch_is_child = false;  // reap it with waitpid and keep its exit status
  // (dev, inode) the target's executable must have; 0 = take it from /proc/PID/exe at start.
  // A launched command still runs uscope's image until it execs, so it passes the command's.
  dev_t exe_dev = 0;
  ino_t exe_ino = 0;
  std::optional<std::chrono::duration<double>> duration;
  std::optional<std::chrono::duration<double>> interval;
  // Whether to look at /proc/PID/exe every 100 ms for an exec; the agent learns of execs from the
  // kernel's process events instead.
  bool check_exec = true;
  // The runner to install on; nullptr: one of the loop's own (the CLI's single session).
  Runner* runner = nullptr;
};

class EventLoop {
 public:
  static Result<EventLoop> create(const EventLoopOptions& opts);
  EventLoop(EventLoop&& o) noexcept = default;
  ~EventLoop() { uninstall(); }
  EventLoop& operator=(EventLoop&&) = delete;

  struct Callbacks {
    int data_fd = -1;  // epoll fd of the ring buffer, -1 if none
    // Reads one bounded batch of what is ready; true when more is left.
    std::function<bool()> drain;
    std::function<void()> interval;  // every -i
    std::function<bool()> done;      // e.g. -M reached
    // Written when its fd is writable; while it is full, drain waits (and the kernel counts what
    // no longer fits the ring buffer as lost). nullptr: no buffered output.
    OutputBuffer* output = nullptr;
    // Look at the ring buffer at least this often even without a wake-up (the BPF side batches
    // its wake-ups); zero: only on wake-ups.
    std::chrono::milliseconds data_poll{0};
    // Keys typed at a terminal: `input` reads what `input_fd` holds when it is readable, and
    // returns true to end the loop (StopReason::Quit); -1: no input.
    int input_fd = -1;
    std::function<bool()> input;
  };
  // On a runner of its own: until a stop, then every watch removed.
  StopReason run(const Callbacks& cb);

  // On a shared runner: the callbacks are watched from now on, and a stop of this session (its
  // target's exit or exec, -d, -M, a closed output) calls `stopped` instead of ending the runner.
  // `stopped` must not destroy the loop: the runner is inside one of its callbacks.
  void install(const Callbacks& cb, std::function<void(StopReason)> stopped);
  // Removes what install() watches; the loop can be destroyed afterwards.
  void uninstall();

  // Exit status of a watched child that exited (128+N for signal N), if known.
  std::optional<int> child_status() const { return child_status_; }
  // Its CPU time (wait4's rusage: its threads and the children it reaped), once reaped.
  std::optional<CpuTime> child_cpu_time() const { return child_cpu_time_; }
  // The process's runner, for what else a job watches beside its session (util/runner.h).
  Runner& runner() { return *runner_; }

 private:
  // What install() registered and the state its callbacks share (they point at the loop: it
  // does not move while installed).
  struct Installed {
    Callbacks cb;
    std::function<void(StopReason)> stopped;
    bool more = false;        // the last drain left events in the ring
    bool data_ready = false;  // the ring signalled in this turn
    Runner::Id out_watch = 0, data_watch = 0, turn = 0;
    std::vector<Runner::Id> watches, timers;
  };
  EventLoop() = default;
  bool target_execed();
  void reap_child();

  EventLoopOptions opts_;
  std::unique_ptr<Runner> own_runner_;
  Runner* runner_ = nullptr;
  std::unique_ptr<Installed> installed_;
  UniqueFd pid_fd_;
  std::string exe_path_;  // /proc/PID/exe of the watched process
  bool exe_armed_ = false;
  std::optional<int> child_status_;
  std::optional<CpuTime> child_cpu_time_;
};

}  // namespace uscope
