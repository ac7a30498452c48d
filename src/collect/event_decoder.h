#pragma once
// Decoding of trace.bpf.c's ring-buffer records (and of aggregated keys) into DecodedEvent: the
// payload split by the probe's output fields, strings the BPF side could not read completed from
// the live process, the user stack copied out (with the caller a prologue site's frame-pointer walk
// skips). Collection work: the sink formats the result and never reads a target's memory.
#include <cstdint>
#include <span>

#include "bpf/trace.h"
#include "collect/aggregates.h"
#include "model/decoded_event.h"
#include "plan/planner.h"

namespace uscope {

class PayloadReader;

class EventDecoder {
 public:
  explicit EventDecoder(const TracePlan& plan) : plan_(plan) {}

  // Fills `out` from one record (header + payload as handed out by TraceProgram: data_len bytes
  // of fields, then stack_len bytes of user stack, then kstack_len bytes of kernel stack). Deferred
  // strings are read from process header.tgid. Returns false for a record that does not match its
  // probe's fields (unknown probe, short or overlong payload, a bad string length word): counted in
  // malformed(), `out` then holds what could be decoded. Reuses `out`'s vectors and strings: no
  // allocation once they have grown to the largest event.
  bool decode(const uscope_event& header, std::span<const uint8_t> payload, DecodedEvent& out);
  // Fills `out` from the key of an `aggregates` row of a plan counted in the kernel, whose slot
  // is the probe's index (HttpPlanOptions::aggregate_bounds_ns): its fields as an event's, with
  // no stack and no header but the probe id. A key keeps no address of a string the BPF side
  // could not read: such a field is unreadable. False for a key that does not match its probe's
  // fields (not counted in malformed(): the caller counts the calls the row stands for).
  bool decode_key(const AggregateRow& row, DecodedEvent& out);

  // Strings read from the live process after the event (their page was not yet touched at the
  // probe), strings that could not be read even then (shown empty), malformed records.
  uint64_t late_strings() const { return late_strings_; }
  uint64_t unreadable_strings() const { return unreadable_strings_; }
  uint64_t malformed() const { return malformed_; }
  // Events with a string found cut only when read late (a deferred NUL-terminated string longer
  // than its cap): the kernel's TC_TRUNCATED cannot count those.
  uint64_t late_truncated() const { return late_truncated_; }

 private:
  bool decode_fields(const ProbePlan& probe, std::span<const uint8_t> data, DecodedEvent& out,
                     bool& late_cut);
  // The next string field (read from `pid` when the BPF side deferred it).
  bool take_string(PayloadReader& reader, pid_t pid, DecodedValue& v, bool& late_cut);
  // A TOP_EMIT_GOIFACE field, one value or a []any, as text.
  bool take_go_values(PayloadReader& reader, pid_t pid, bool slice, DecodedValue& v,
                      bool& late_cut);
  // `len` bytes at `addr` in `pid` (`exact`), or a NUL-terminated string of at most `len` bytes.
  void read_late(pid_t pid, uint64_t addr, uint32_t len, bool exact, DecodedValue& v);

  const TracePlan& plan_;
  uint64_t late_strings_ = 0;
  uint64_t unreadable_strings_ = 0;
  uint64_t malformed_ = 0;
  uint64_t late_truncated_ = 0;
};

}  // namespace uscope
