#pragma once
// What a `uscope trace` session saw and lost, each loss under its own name (the JSON summary's
// keys): the trace program's counters summed over its recipes, and what the reading side counted.
#include <cstdint>

namespace uscope {

struct TraceTotals {
  uint64_t printed = 0;       // events formatted for the output
  uint64_t lost = 0;          // ring buffer full
  uint64_t malformed = 0;     // recipe error, event too big, or a record that did not decode
  uint64_t stack_failed = 0;  // written without their user stack
  uint64_t truncated = 0;     // with a string cut short (by the BPF side or at a late read)
  uint64_t filtered = 0;      // not a loss: left out by a predicate
  uint64_t read_errors = 0;   // with unreadable memory
  uint64_t no_entry = 0;      // returns without a recorded entry
  uint64_t late_strings = 0;  // read from the live process after the event
  uint64_t unreadable_strings = 0;
  uint64_t output_dropped = 0;    // read from the ring but never written out (stop deadline)
  uint64_t comm_filtered = 0;     // -n: comm without the name
  uint64_t message_filtered = 0;  // -f: message without the text
};

}  // namespace uscope
