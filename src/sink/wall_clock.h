#pragma once
// Wall-clock time of the events' clock: a probe's time is CLOCK_MONOTONIC (bpf_ktime_get_ns), a
// line shows local time.
#include <cstdint>
#include <string>

namespace uscope {

// CLOCK_REALTIME minus CLOCK_MONOTONIC now: a probe's time plus this is a wall time.
int64_t realtime_minus_monotonic_ns();
// HH:MM:SS.mmm, local time, of a wall time in nanoseconds since the epoch.
std::string local_clock_text(int64_t unix_ns);

}  // namespace uscope
