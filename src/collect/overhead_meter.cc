#include "collect/overhead_meter.h"

#include <fmt/format.h>

namespace uscope {

OverheadMeter::OverheadMeter(pid_t pid, bool measure_bpf) : pid_(pid) {
  if (!measure_bpf) {
    stats_note_ = "calibrated by bench/overhead.py; -v measures it";
    return;
  }
  auto s = BpfStatsSwitch::turn_on();
  if (s) {
    stats_.emplace(std::move(*s));
  } else {
    stats_note_ = s.error().message;
  }
}

void OverheadMeter::start() {
  if (pid_ <= 0) return;
  if (auto t = process_cpu_time(pid_)) {
    start_cpu_ns_ = t->total_ns();
    last_cpu_ns_ = start_cpu_ns_;
  }
  next_sample_ = std::chrono::steady_clock::now() + kSamplePeriod;
}

void OverheadMeter::sample() {
  if (pid_ <= 0) return;
  auto now = std::chrono::steady_clock::now();
  if (now < next_sample_) return;
  next_sample_ = now + kSamplePeriod;
  if (auto t = process_cpu_time(pid_)) last_cpu_ns_ = t->total_ns();
}

Overhead OverheadMeter::finish(std::vector<OverheadSite> sites, std::span<const int> prog_fds,
                               double table_bpf_ns_per_run, std::optional<CpuTime> reaped_cpu) {
  OverheadInput in;
  in.sites = std::move(sites);
  in.table_bpf_ns_per_run = table_bpf_ns_per_run;
  if (stats_) {
    auto run = bpf_run_time(prog_fds);
    if (run) {
      in.bpf = *run;
    } else {
      in.bpf_note = run.error().message;
    }
  } else {
    in.bpf_note = stats_note_;
  }

  in.system_wide = pid_ <= 0;
  if (pid_ <= 0) {
    in.cpu_note = "system-wide: no one target's CPU time to compare with";
  } else {
    std::optional<uint64_t> end;
    if (reaped_cpu) {
      end = reaped_cpu->total_ns();
    } else if (auto t = process_cpu_time(pid_)) {
      end = t->total_ns();
    } else if (last_cpu_ns_) {
      end = last_cpu_ns_;
      in.cpu_note = fmt::format("the target's CPU time as last read, up to {} ms before it exited",
                                kSamplePeriod.count());
    }
    // A launched command starts from zero: its fork ran uscope's code only until the exec.
    uint64_t begin = start_cpu_ns_.value_or(0);
    if (!start_cpu_ns_ && !reaped_cpu) end.reset();
    if (end && *end >= begin) {
      in.target_cpu_ns = *end - begin;
    } else {
      in.cpu_note = "the target's CPU time could not be read from /proc";
    }
  }
  return estimate_overhead(in);
}

}  // namespace uscope
