#pragma once
// What memleak's probes saw of a process's allocator so far (collect/profile_program.h reads it
// from profile.bpf.c's counters; sink/memleak_report.h prints it above each report).
#include <cstdint>

namespace uscope {

struct AllocCounts {
  uint64_t calls = 0;          // allocator calls (nested ones not counted)
  uint64_t followed = 0;       // blocks followed (every one, or the sampled ones)
  uint64_t frees = 0;          // frees of a followed block
  uint64_t frees_unknown = 0;  // frees of a block not followed (older, or not sampled)
  uint64_t estimated = 0;      // blocks followed that stand for more (sampled, weighted)
};

}  // namespace uscope
