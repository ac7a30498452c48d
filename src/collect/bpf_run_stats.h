#pragma once
// BPF programs' own run time, from the kernel's BPF stats (run_time_ns and run_cnt in
// bpf_prog_info): what uscope's programs cost per hit, measured rather than assumed.
//
// The kernel keeps these counters only while stats are on: BPF_ENABLE_STATS hands out an fd that
// keeps them on until it is closed (or sysctl kernel.bpf_stats_enabled=1). The switch is global:
// while it is on, every BPF program on the machine pays two clock reads per run (tens of ns).
// uscope turns it on for its own session only, because the per-hit cost of its programs differs
// by command (count's counter vs trace's recipe interpreter) and by recipe, and a guess would not.
#include <cstdint>
#include <span>

#include "model/bpf_run_time.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace uscope {

class BpfStatsSwitch {
 public:
  // Turns run-time stats on for as long as the switch lives. Fails (EPERM without
  // CAP_SYS_ADMIN; EINVAL on kernels before 5.8) with the reason; stats that are already on
  // system-wide count as on.
  static Result<BpfStatsSwitch> turn_on();
  bool already_on() const { return !fd_.valid(); }

 private:
  explicit BpfStatsSwitch(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// Sums run_time_ns and run_cnt of the programs behind `prog_fds`.
Result<BpfRunTime> bpf_run_time(std::span<const int> prog_fds);

}  // namespace uscope
