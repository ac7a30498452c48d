#pragma once
// An event of the tracing program after collection: the ring-buffer record decoded by its probe's
// output fields, strings the BPF side could not read completed from the live process, the user
// stack copied out of the record. The sink formats it and never reads a target's memory; nothing
// in it points into the ring buffer. One object is reused from event to event (vectors and
// strings keep their capacity), so that steady-state decoding allocates nothing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/trace.h"

namespace uscope {

struct DecodedValue {
  bool is_string = false;
  uint64_t number = 0;      // !is_string
  std::string text;         // is_string: the bytes read
  bool late = false;        // read from the live process after the event (page not yet touched)
  bool unreadable = false;  // could not be read at all: shown empty
  bool truncated = false;   // longer than what was read: shown with a trailing "…"
  // %U and %K: the number symbolized by the collecting side ("main+0x4 [app]"), which the sink
  // prints instead of the number; empty when not symbolized (shown in hex then).
  std::string symbol;
};

struct DecodedEvent {
  uscope_event header{};  // the record's header
  // The first `n_values` entries are this event's, in the probe's output-field order (fewer than
  // the probe's fields only for a malformed record). Entries past n_values are kept for reuse.
  std::vector<DecodedValue> values;
  size_t n_values = 0;
  std::vector<uint64_t> user_stack;    // innermost first; empty when not captured
  std::vector<uint64_t> kernel_stack;  // innermost first (-K); empty when not captured
  bool truncated() const {
    for (size_t i = 0; i < n_values; ++i)
      if (values[i].truncated) return true;
    return false;
  }
};

}  // namespace uscope
