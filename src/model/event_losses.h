#pragma once
// The losses every event command (http, tls) reports, each on its own: what the trace program's
// per-recipe counters say, summed, and what the collecting side dropped. A command's own losses
// extend this struct.
#include <cstdint>

namespace uscope {

struct EventLosses {
  uint64_t ring_lost = 0;          // ring buffer full: the call never seen
  uint64_t read_errors = 0;        // a field's memory unreadable (shown empty or 0)
  uint64_t no_entry = 0;           // returns without a recorded entry (begun before the probes)
  uint64_t entry_save_failed = 0;  // entries not recorded (entries map full)
  uint64_t malformed = 0;          // events that could not be decoded
  uint64_t truncated = 0;          // events with a string cut short
  uint64_t agg_full = 0;           // counted in the kernel: calls a full map had no row for
  uint64_t output_dropped = 0;     // caught, but not written out at the stop
  uint64_t filtered = 0;           // not a loss: calls the probe's predicate dropped
};

}  // namespace uscope
