#pragma once
// What `uscope profile` and `uscope top` share: the target options (-p, -c, -a, -F, -U, -K, ...),
// the sampling session built from them (the profiler's BPF program on cpu-clock events, the
// unwinder, the maps of processes read while they live and as they exit), the event loop's
// callbacks that keep it fed, and the cumulative profile read from it at any time.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/session.h"
#include "collect/event_loop.h"
#include "collect/exit_maps.h"
#include "collect/profile_program.h"
#include "collect/stack_samples.h"
#include "collect/unwind_follower.h"
#include "model/profile.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/symbolizer.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace uscope::cli {

// A sample is taken only when the timer fires while the process runs on that CPU, so a process
// gets frequency x its CPU seconds samples (not x wall seconds): at bcc's 49 Hz a process on a
// third of a CPU gave ~160 samples a minute. 99 Hz as perf and bpftrace users type it (py-spy:
// 100), off the beat of 100 Hz timers; -a costs one timer per CPU whatever the rate.
inline constexpr uint64_t kDefaultFrequencyHz = 99;

struct ProfileTarget {
  std::vector<pid_t> pids;
  bool all = false;
  bool idle = false;
  std::string command;
  uint64_t frequency_hz = kDefaultFrequencyHz;
  double duration_s = 0;  // 0: until a stop
  double interval_s = 0;  // 0: no interval callback
  bool threads = false;
  bool user_only = false;
  bool kernel_only = false;
  bool lines = false;
  bool verbose = false;
  // What is measured: CPU samples (the default), time off-CPU (--off-cpu), or both (--wall).
  bool off_cpu = false;
  bool wall = false;
  double min_block_us = 0;  // --min-block: off-CPU waits shorter than this are left out
  bool wakers = false;      // --wakers: who woke each off-CPU wait, with its stacks
  // `memleak`: blocks allocated and not freed, by stack, instead of time (plan/alloc_plan.h).
  bool memleak = false;
  uint64_t sample_bytes = 0;  // memleak --sample-bytes: 0 follows every block
};

// What `target` measures, as the profile model says it.
ProfileMeasure measure_of(const ProfileTarget& target);

// Option combinations that cannot work, named before anything is opened.
Result<void> check_target(const ProfileTarget& t);
// "PID 1234", "'./bench --iters 10'", "every process", "3 processes".
std::string describe_target(const ProfileTarget& t);

// Several -p PIDs: the session ends when all of them have exited (one is watched by the loop).
class ExitWatch {
 public:
  void add(pid_t pid);
  bool all_exited() const;

 private:
  bool watching_ = false;
  std::vector<UniqueFd> fds_;
};

class ProfileSession {
 public:
  // Checks the PIDs, opens the session (-p/-c), loads the profiler and the unwinder; samples
  // nothing until start(). `shared`: the agent's runner, to install() on (see Session::open).
  static Result<std::unique_ptr<ProfileSession>> open(const ProfileTarget& t,
                                                      Runner* shared = nullptr);
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;

  // Starts sampling, lets a -c command exec, and says so on stderr.
  Result<void> start();
  // The loop's callbacks that read the profiler's records, serve the unwinder and catch exits:
  // the caller adds its interval and input, and may wrap done() (which stays true once a read
  // failed or every -p target exited).
  EventLoop::Callbacks callbacks();
  // Runs the loop until a stop, then stops sampling and reads what is left.
  Result<StopReason> run(const EventLoop::Callbacks& cb);
  // What `profile` and `top` run: the loop with `refresh` at each -i (profile's file rewritten,
  // top's table drawn), the session ended by a refresh that fails, whose error is then returned;
  // `extend` adds the command's own to the callbacks (top's keys and output, profile's progress).
  Result<StopReason> run_refreshing(const std::function<Result<void>()>& refresh,
                                    const std::function<void(EventLoop::Callbacks&)>& extend = {});
  // On a shared runner: callbacks() watched from now on; `stopped` runs when the session must
  // end (a read failed, every -p target exited) and must not destroy it. stop() ends sampling
  // and uninstalls; snapshot() still reads what was counted.
  void install(std::function<void(StopReason)> stopped);
  void stop();
  // Why it stopped, as a person reads it ("target exited", "every target exited").
  std::string stop_text(StopReason why) const;
  // Everything counted since start(), symbolized, with every loss by cause.
  Result<Profile> snapshot();
  // What was counted since the last period() (since start() the first time), symbolized, with
  // the losses of that time: the agent's continuous profile. Only the period's stacks are
  // symbolized, so a period costs what its own stacks cost; with `keep`, only the samples of the
  // processes it keeps (the losses stay the whole session's).
  Result<Profile> period(const std::function<bool(pid_t)>& keep = {});

  // /proc/kallsyms read now (~50 ms), not at the first read that meets a kernel frame: the agent,
  // whose rings wait while a period is read.
  void load_kernel_symbols();

  const ProfileTarget& target() const { return target_; }
  // memleak: the allocator functions followed, a line each ("malloc in libc.so.6 (+0x98930)").
  const std::vector<std::string>& allocators() const { return allocators_; }
  const ProfileProgram& program() const { return *program_; }
  size_t processes_seen() const { return processes_.size(); }
  std::chrono::steady_clock::time_point started() const { return start_; }
  // --verbose: the unwinder's statistics on stderr.
  void print_unwind_stats() const;

 private:
  explicit ProfileSession(const ProfileTarget& t);
  void load_kernel_symbols(const StackAggregator& stacks);
  // `samples` symbolized as a profile from `from_unix_ns` (`from` on the steady clock) to now,
  // with the session's losses so far.
  Result<Profile> build(std::span<const StackSample> samples, int64_t from_unix_ns,
                        std::chrono::steady_clock::time_point from);

  ProfileTarget target_;
  std::unique_ptr<Session> session_;
  std::vector<std::string> allocators_;
  bool goroutines_ = false;  // off-CPU of a Go program: its goroutines' parks are followed
  ExitMaps* exit_maps_ = nullptr;  // owned by program_, whose object holds it
  std::unique_ptr<Symbolizer> symbolizer_;
  // Processes sampled so far; exits of processes not (yet) sampled are kept a while, in case
  // their first sample's news is still on its way (the oldest go first: -a holds a bounded amount).
  std::set<pid_t> processes_;
  std::map<pid_t, Process> unseen_exits_;
  std::deque<pid_t> unseen_order_;
  std::unique_ptr<UnwindMaps> unwind_;
  std::optional<UnwindFollower> follower_;
  std::optional<ProfileProgram> program_;
  ExitWatch exits_;
  // Read only when a sample first holds a kernel frame: /proc/kallsyms is ~130k lines, a few MB
  // and milliseconds of CPU that a profile of user code does not need.
  std::optional<KernelSymbols> kernel_;
  bool kernel_tried_ = false;
  std::optional<Error> failure_;
  bool all_exited_ = false;
  int64_t start_unix_ns_ = 0;
  std::chrono::steady_clock::time_point start_;
  // period(): the counts and losses at the last one, and when it was.
  StackPeriods periods_;
  std::vector<std::pair<std::string, uint64_t>> period_losses_;
  int64_t period_unix_ns_ = 0;
  std::chrono::steady_clock::time_point period_start_;
};

}  // namespace uscope::cli
