#pragma once
// Sampling perf events that run a BPF program, beside UprobeLinks: one cpu-clock event per online
// CPU (every process on it; the program filters), each holding a libbpf link that owns the event's
// fd from the attach on. Every exit path detaches and closes them all.
#include <bpf/libbpf.h>

#include <cstdint>
#include <vector>

#include "attach/uprobe_links.h"
#include "util/result.h"

namespace uscope {

// The highest sampling frequency this kernel takes now (kernel.perf_event_max_sample_rate, which
// the kernel lowers by itself when sampling takes too long); 0 when unreadable.
uint64_t max_sample_frequency();
// 1 Hz up to max_sample_frequency(); the error names the range and the sysctl that bounds it.
Result<void> check_sample_frequency(uint64_t hz);

class PerfEventLinks {
 public:
  // A PERF_COUNT_SW_CPU_CLOCK event sampling `frequency_hz` times a second on each online CPU,
  // each running `prog` (a loaded SEC("perf_event") program). All or nothing: on failure the
  // events opened so far are closed, and the error names the missing permission or the limit.
  Result<void> attach_cpu_clock(bpf_program* prog, uint64_t frequency_hz);

  size_t size() const { return links_.size(); }
  void detach_all() { links_.clear(); }

 private:
  std::vector<LinkPtr> links_;
};

}  // namespace uscope
