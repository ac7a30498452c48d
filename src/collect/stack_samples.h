#pragma once
// The stack-aggregation stage between the kernel and the symbolizer: stacks as raw addresses with
// how often each was seen, merged so that every distinct stack is symbolized once. `profile` fills
// it from its per-(pid, stacks) counts, `count --by ustack` from its keyed map; the unwinding
// issue adds stacks unwound in BPF without changing what comes after.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace uscope {

// Why a stack is absent or shorter than the code that ran.
enum class StackStatus : uint8_t {
  Ok,
  NotCollected,  // not asked for (-U / -K), or no such stack (a kernel thread's user stack)
  Failed,        // the kernel could not take it (unreadable memory, no frame pointer chain)
  Collided,      // the stack map's bucket held another stack: the stack is lost
  Truncated,     // deeper than the frames kept: the outermost frames are missing
};

struct StackSample {
  pid_t pid = 0;
  pid_t tid = 0;                 // 0 unless split by thread
  std::string comm;              // the process's (or with tid, the thread's) name when sampled
  std::vector<uint64_t> user;    // innermost first: the IP, then return addresses
  std::vector<uint64_t> kernel;  // innermost first
  StackStatus user_status = StackStatus::Ok;
  StackStatus kernel_status = StackStatus::Ok;
  // How the BPF walker's walk of `user` ended (bpf/unwind.h's enum unwind_end); -1 when the
  // stack was not walked by it.
  int user_end = -1;
  // Off-CPU: why the thread waited (bpf/profile.h's enum offcpu_reason); 0: on-CPU.
  uint8_t reason = 0;
  // OFFCPU_GO_PARK: why the goroutine parked, as its Go names it ("chan receive", "select").
  std::string wait;
  // --wakers: the thread that ended the wait, and its stacks as it did (waker_tid 0: none seen;
  // -1: an interrupt on an idle CPU).
  pid_t waker_pid = 0;
  pid_t waker_tid = 0;
  std::string waker_comm;
  std::vector<uint64_t> waker_user;    // innermost first
  std::vector<uint64_t> waker_kernel;  // innermost first
  // Samples; with a reason, nanoseconds off-CPU; in a wall-clock profile, nanoseconds either way;
  // in memleak's profile, bytes outstanding.
  uint64_t count = 0;
  uint64_t blocks = 0;  // memleak: blocks outstanding (0 otherwise)
};

// Merges samples with the same (pid, tid, comm, stacks, statuses).
class StackAggregator {
 public:
  void add(StackSample sample);
  const std::vector<StackSample>& samples() const { return samples_; }
  uint64_t total() const { return total_; }
  void clear();

 private:
  std::vector<StackSample> samples_;
  std::unordered_map<std::string, size_t> index_;  // serialized key -> position in samples_
  uint64_t total_ = 0;
};

// What cumulative counts (ProfileProgram::read_samples: the kernel's counts only grow) added since
// the last look: a continuous profile's period, taken before anything is symbolized, so that a
// period costs what its own stacks cost, not everything counted since the start.
class StackPeriods {
 public:
  // The samples of `now` less their counts at the last call (all of them the first time);
  // stacks with nothing new are left out.
  std::vector<StackSample> next(const StackAggregator& now);

 private:
  std::unordered_map<std::string, uint64_t> seen_;  // stack key -> its count at the last call
};

}  // namespace uscope
