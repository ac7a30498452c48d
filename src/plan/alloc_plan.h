#pragma once
// memleak's plan: the allocator functions of a process (or of a command about to start) and the
// uprobes that follow its blocks: an entry probe on each allocating function (the size asked
// for), a return probe on it (the block it returned, the stack that asked), an entry probe on
// each freeing one. Cookies are bpf/profile.h's (enum alloc_fn and the site's sp_delta).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plan/attach_site.h"
#include "plan/site_match.h"
#include "util/result.h"

namespace uscope {

struct AllocatorFunction {
  std::string_view name;  // "malloc"
  uint32_t fn;            // enum alloc_fn
  bool frees = false;     // free, munmap: one entry probe, no return
};
// Every function memleak looks for, in the order it says them.
std::span<const AllocatorFunction> allocator_functions();

struct AllocPlan {
  std::vector<AttachSite> sites;
  // What is followed, a line each: "malloc in libc.so.6 (+0x98930)".
  std::vector<std::string> found;
  // Functions no object defines (a program without mmap's wrapper still has malloc).
  std::vector<std::string> missing;
  // A Go program: its heap is followed as Go samples it (runtime.mProf_Malloc, freeSpecial), at
  // the rate in runtime.MemProfileRate, whose address this is (0: not a Go program). A
  // position-independent program's is link-time: add its load bias.
  uint64_t go_rate_address = 0;
  bool go_rate_pie = false;
};

// The allocator functions of the objects the target maps (a -c command's program and the
// libraries it links): each name is taken from the first object that defines it, the program
// first (a statically linked allocator), then any other library (jemalloc, tcmalloc, mimalloc:
// they interpose libc's), libc last. Fails, naming the functions it looked for and the objects it
// looked in, when none defines malloc or free. A Go program's own heap is followed through Go's
// heap sampler (one block per runtime.MemProfileRate bytes), beside libc's functions when it
// links libc (cgo).
Result<AllocPlan> plan_allocators(ObjectCache& cache, const TargetContext& ctx);

}  // namespace uscope
