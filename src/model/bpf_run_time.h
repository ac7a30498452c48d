#pragma once
#include <cstdint>

namespace uscope {

// What BPF programs ran for, from the kernel's BPF stats (collect/bpf_run_stats.h reads them).
struct BpfRunTime {
  uint64_t run_time_ns = 0;  // summed over the programs, since stats were on
  uint64_t run_count = 0;
};

}  // namespace uscope
