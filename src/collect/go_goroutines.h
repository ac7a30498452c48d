#pragma once
// Live goroutines of a running Go program, counted the way runtime.NumGoroutine() counts them
// (go_stat), and those parked now (profile --off-cpu):
// every g in runtime.allgs that is neither idle nor dead, the runtime's own goroutines (those
// started at a function of package runtime other than runtime.main) apart. Read from the target's
// memory (process_vm_readv: never writes, never stops it) once per interval; the g's change under
// the read, so a count is a snapshot good to the goroutines created or ended while it was taken.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "model/go_stat.h"
#include "plan/go_park_plan.h"
#include "plan/go_stat_plan.h"
#include "util/result.h"

namespace uscope {

// A bound on the census's work per read: an allgs longer than this is not believed.
inline constexpr uint64_t kMaxCensusGoroutines = 1'000'000;

// Fails when the slice header or the g's cannot be read (the target exited, or the layout is
// wrong: an allgs longer than kMaxCensusGoroutines is refused as not a goroutine list).
// `bias` is the load bias of the binary in the process (runtime minus link-time addresses).
Result<GoroutineCount> count_goroutines(pid_t pid, const GoroutineLayout& layout, uint64_t bias);

// A goroutine parked now (_Gwaiting): its g, why (a runtime.waitReason), and the registers it
// parked with (gopark's, saved by mcall), where its stack is walked from.
struct ParkedGoroutine {
  uint64_t g = 0;
  uint8_t wait = 0;
  uint64_t pc = 0, sp = 0, bp = 0;
};
// The goroutines of `pid` parked now. Fails as count_goroutines does.
Result<std::vector<ParkedGoroutine>> parked_goroutines(pid_t pid,
                                                       const ParkedGoroutineLayout& layout);
// Whether the goroutine `g` is still parked where it was read (`was`): not run since.
bool still_parked(pid_t pid, const ParkedGoroutineLayout& layout, const ParkedGoroutine& was);

// The count from the bytes of each g's fields (status, startpc), for tests.
void tally_goroutine(uint32_t status, uint64_t startpc, const GoroutineLayout& layout,
                     uint64_t bias, GoroutineCount& count);

}  // namespace uscope
