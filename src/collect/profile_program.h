#pragma once
// The CPU profiler's BPF side (profile.bpf.c) loaded through BpfObject, attached to cpu-clock
// perf events, and read back: its in-kernel counts per (process, thread, stacks) as StackSamples,
// its loss counters by cause, and the ring-buffer records that name each process at its first
// sample (so that user space reads its maps while it lives). The same object holds the exits'
// snapshots (collect/exit_maps.h), so that the session's kernel-BTF relocations are one parse.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attach/bpf_loader.h"
#include "attach/perf_events.h"
#include "attach/unwind_maps.h"
#include "attach/uprobe_links.h"
#include "collect/exit_maps.h"
#include "collect/ring_reader.h"
#include "collect/stack_samples.h"
#include "model/alloc_counts.h"
#include "plan/go_park_plan.h"
#include "util/result.h"

namespace uscope {

struct ProfileSettings {
  std::vector<pid_t> pids;       // empty: every process (-a)
  bool only_after_exec = false;  // pids[0] is a command uscope forked: nothing before its exec
  bool include_idle = false;     // -a: also the idle task (pid 0)
  bool per_thread = false;       // --threads
  bool user_stacks = true;       // false with -K
  bool kernel_stacks = true;     // false with -U
  // What is measured: on-CPU samples (cpu-clock events), off-CPU time (the scheduler's switches),
  // or both: a wall-clock profile, whose samples count as 1/frequency seconds each.
  bool on_cpu = true;
  bool off_cpu = false;
  uint64_t min_block_ns = 0;  // off-CPU: shorter blocks are counted apart, not by stack
  bool wakers = false;        // off-CPU: who woke each wait, with its stacks
  // memleak (neither on- nor off-CPU): the allocator's probes (plan/alloc_plan.h), whose blocks
  // are followed from allocation to free; the profile is of the bytes outstanding by stack.
  std::vector<AttachSite> alloc_sites;
  uint64_t sample_bytes = 0;     // memleak: follow a block per this many bytes on average; 0: all
  uint32_t max_blocks = 0;       // memleak: blocks followed at once; 0: the default
  uint64_t go_rate_address = 0;  // memleak of a Go program: where runtime.MemProfileRate is
  // Off-CPU of a Go program: its goroutines' parks (plan/go_park_plan.h), and the text of each
  // of its wait reasons, by number.
  std::vector<AttachSite> go_park_sites;
  std::vector<std::string> go_wait_reasons;
  // And where its goroutines parked before the profile are (a running process's).
  std::optional<ParkedGoroutineLayout> go_parked;
  // Slots of the stack map (~1 KiB each, preallocated); 0: by target (more for -a). A stack
  // whose hash bucket is taken is lost and counted, so a fuller map loses more.
  uint32_t stack_slots = 0;
  // The unwinder's shared maps (user stacks are walked through them); required with user stacks.
  const UnwindMaps* unwind = nullptr;
  // Given: the maps of `pids` (every process without pids) as they exit, to this handler.
  ExitMaps::Handler on_exit;
};

class ProfileProgram {
 public:
  // A process sampled for the first time (pid, its comm then).
  using NewProcessHandler = std::function<void(pid_t pid, std::string_view comm)>;
  // A new user stack holding interpreter frames (bpf/python.h), innermost first: read what
  // names them while the process lives.
  using NewStackHandler = std::function<void(pid_t pid, std::span<const uint64_t> frames)>;

  static Result<ProfileProgram> load(const ProfileSettings& settings, NewProcessHandler on_new,
                                     NewStackHandler on_stack = {});
  ProfileProgram(ProfileProgram&&) noexcept = default;
  ProfileProgram& operator=(ProfileProgram&&) noexcept = default;
  ~ProfileProgram() = default;

  // Starts sampling at `frequency_hz` on every online CPU, and with off_cpu, following switches.
  Result<void> start(uint64_t frequency_hz);
  // Off-CPU of given processes (not a command it started), after start(): the threads already
  // waiting, and a Go program's goroutines parked, whose waits then count from the start under
  // the stacks they are read with now (collect/begun_waits.h). Without it their waits are not
  // counted (threads: counted apart, as off_cpu_unseen).
  struct BegunFollowed {
    size_t threads = 0, goroutines = 0;
    std::string no_goroutines;  // why goroutines parked before were not read
  };
  Result<BegunFollowed> follow_begun_waits();
  // Stops sampling; the maps keep what was counted.
  void stop();
  size_t cpus_sampled() const { return events_.size(); }
  std::vector<int> program_fds() const { return object_.program_fds(); }

  // New-process records: readable on this fd; consume() hands out a bounded batch.
  int new_process_fd() const { return ring_->epoll_fd(); }
  Result<ConsumeResult> consume(size_t max_records) { return ring_->consume(max_records); }
  Result<size_t> consume_all() { return ring_->consume_all(); }
  // Another ring read with the new-process records (the unwinder's requests).
  RingReader& ring() { return *ring_; }
  // With on_exit: the exits' snapshots, or null and why they cannot be kept (an older kernel:
  // the profile runs without them).
  ExitMaps* exit_maps() const { return exits_.get(); }
  const std::optional<Error>& exit_maps_error() const { return exits_error_; }

  // Every stack counted so far (cumulative since start), innermost frames first, into `out`:
  // on-CPU rows in samples (in nanoseconds, 1/frequency each, when off-CPU time is measured too);
  // off-CPU rows in nanoseconds, with the threads still waiting counted up to now.
  Result<void> read_samples(StackAggregator& out);
  // Samples of covered processes so far (counted or lost).
  Result<uint64_t> samples_seen() const;
  // memleak: what the allocator's probes saw so far.
  Result<AllocCounts> alloc_counts() const;
  // Every loss by cause, with its stable name ("user_stack_failed", "map_full", ...), including
  // stacks read_samples() found missing from the stack map since.
  Result<std::vector<std::pair<std::string, uint64_t>>> losses() const;

 private:
  // What the ring reader's callback updates; on the heap, so that it survives moves.
  struct NewProcesses {
    NewProcessHandler handler;
    NewStackHandler on_stack;
    int ustacks_fd = -1;
    uint64_t short_records = 0;  // never written by profile.bpf.c: counted and skipped
  };
  explicit ProfileProgram(BpfObject object) : object_(std::move(object)) {}
  static Result<BpfObject> open_and_load(const ProfileSettings& settings, bool exits);
  Result<std::vector<uint64_t>> counters() const;

  BpfObject object_;
  std::unique_ptr<ExitMaps> exits_;  // after object_: detached before it is torn down
  std::optional<Error> exits_error_;
  std::unique_ptr<NewProcesses> new_processes_;
  std::optional<RingReader> ring_;  // after new_processes_: freed before it
  PerfEventLinks events_;           // last: detached before anything else is torn down
  LinkPtr switch_link_;             // off-CPU: the sched_switch program
  LinkPtr waking_link_;             // --wakers: the sched_waking program
  std::vector<AttachSite> alloc_sites_;
  pid_t alloc_pid_ = -1;                      // the process the allocator's probes are for
  std::unique_ptr<UprobeLinks> alloc_links_;  // memleak: detached before the object
  std::vector<AttachSite> go_park_sites_;
  std::vector<std::string> go_wait_reasons_;
  std::unique_ptr<UprobeLinks> go_links_;  // off-CPU of a Go program: detached before the object
  bool on_cpu_ = true, off_cpu_ = false, wakers_ = false, memleak_ = false;
  uint64_t min_block_ns_ = 0;
  uint64_t sample_ns_ = 0;          // what one on-CPU sample stands for in a wall-clock profile
  uint64_t unreadable_stacks_ = 0;  // ids in `counts` the stack map no longer held
  // follow_begun_waits(): what it needs, and the stacks of the waits it put in, by their token
  // (profile_key.user_stack of a PROFILE_STACK_SEEDED row), numbered from 1.
  std::vector<pid_t> pids_;
  bool only_after_exec_ = false, per_thread_ = false, user_stacks_ = true, kernel_stacks_ = true;
  std::optional<ParkedGoroutineLayout> go_parked_;
  struct BegunStacks {
    std::vector<uint64_t> user;
    int user_end = 0;
    std::vector<uint64_t> kernel;
  };
  std::unordered_map<uint64_t, BegunStacks> begun_;
};

}  // namespace uscope
