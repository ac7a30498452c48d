#pragma once
// The off-CPU profile of a Go program's goroutines: an entry probe on runtime.gopark (a goroutine
// parks: its stack, and why) and one on runtime.execute (a goroutine runs again), never a return
// probe; and the text of each of Go's wait reasons, read from the program's own
// runtime.waitReasonStrings (its numbering changes between Go versions). Cookies are
// bpf/profile.h's enum go_sched_fn.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "discover/go_buildinfo.h"
#include "discover/process.h"
#include "plan/attach_site.h"
#include "plan/site_match.h"
#include "util/result.h"

namespace uscope {

// Where the goroutines parked before the profile started are (runtime.allgs), and what of each g
// says it is parked, why, and where (runtime2.go's atomicstatus, waitreason and sched, its saved
// registers): offsets in a runtime.g, from GoTypes (DWARF, type descriptors, uscope's table).
struct ParkedGoroutineLayout {
  uint64_t allgs = 0;  // runtime.allgs (a []*g slice header), at run time (the load bias added)
  uint64_t status = 0, waitreason = 0, sched_sp = 0, sched_pc = 0, sched_bp = 0;
};

struct GoParkPlan {
  std::vector<AttachSite> sites;  // empty: not a Go program
  // By waitReason: "chan receive", "select", "sleep"; "" where an entry does not read (a
  // position-independent program's pointers are relocations); none when the table is not found
  // (by its symbol, or in a stripped program by its first entries). Unnamed ones are shown by
  // number (collect/profile_program.cc).
  std::vector<std::string> wait_reasons;
  // With a running process: its goroutines parked now, read as the profile starts; or why not.
  std::optional<ParkedGoroutineLayout> parked;
  std::string no_parked;
};

// The plan for the target's main program (`cache` opens it), with `process` when it runs already.
// Fails on a Go program built before Go's register ABI, or whose scheduler functions are missing.
Result<GoParkPlan> plan_go_parks(ObjectCache& cache, const Process* process = nullptr);

// Hand-written, as no library reads Go's data. `read` serves a program's bytes at link-time
// addresses (ElfFile::allocated_bytes).
// The entries of a [...]string at [table, table + size), Go strings ({data, len}); one that does
// not read is "". At most 256 (a waitReason is a uint8).
std::vector<std::string> go_wait_reasons(const GoReadAt& read, uint64_t table, uint64_t size);
// Where runtime.waitReasonStrings is in `data` (the .data section, at `data_addr`) when no symbol
// says: the array of Go strings whose entries 1 and 2 read "GC assist marking" and "IO wait" (so
// since Go 1.11), to the first entry that is not a short string of the program's.
std::optional<std::pair<uint64_t, uint64_t>> find_go_wait_reasons(std::span<const uint8_t> data,
                                                                  uint64_t data_addr,
                                                                  const GoReadAt& read);

}  // namespace uscope
