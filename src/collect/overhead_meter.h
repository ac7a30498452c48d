#pragma once
// What estimate_overhead (collect/overhead.h) needs from a running session: BPF run-time stats
// turned on before the probes attach, and the target's CPU time from when they run to the end.
//
// A command hooks it in five places (count.cc, latency.cc and trace.cc do): construct before
// loading its program; start() after Session::start(); sample() from the event loop's `done`
// callback; at the end finish() with one overhead_site() per attach site (hits from the site's
// counter), its program's program_fds() and Session::reaped_target_cpu_time(); then print with
// sink/overhead_output.h.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collect/bpf_run_stats.h"
#include "discover/process.h"
#include "model/overhead.h"

namespace uscope {

class OverheadMeter {
 public:
  // `pid` 0: a system-wide session (time only, no share). Call before attaching. With
  // `measure_bpf` (-v) it turns the kernel's BPF stats on for the session (if it cannot, the
  // estimate uses the table's BPF cost and says why). Without, the table's cost per run is used:
  // while stats are on the kernel times every run of every BPF program on the host (two clock
  // reads, ~11% of a bare emulated uprobe hit here), which would make the probes dearer than the
  // figure they report.
  OverheadMeter(pid_t pid, bool measure_bpf);
  // The probes are attached and the target runs: the CPU-time baseline.
  void start();
  // Keeps the latest CPU-time reading (at most one /proc read per kSamplePeriod), so that a -p
  // target that exits and is reaped by its parent still has a reading close to its end.
  void sample();
  // `reaped_cpu`: the target's total CPU time from wait4, when uscope reaped it (-c).
  // `table_bpf_ns_per_run`: the table's cost of the session's program, used without stats.
  Overhead finish(std::vector<OverheadSite> sites, std::span<const int> prog_fds,
                  double table_bpf_ns_per_run, std::optional<CpuTime> reaped_cpu);

  static constexpr std::chrono::milliseconds kSamplePeriod{100};

 private:
  pid_t pid_ = 0;
  std::optional<BpfStatsSwitch> stats_;
  std::string stats_note_;
  std::optional<uint64_t> start_cpu_ns_;
  std::optional<uint64_t> last_cpu_ns_;
  std::chrono::steady_clock::time_point next_sample_{};
};

}  // namespace uscope
