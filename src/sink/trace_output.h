#pragma once
// Rendering of `uscope trace` events: one line per event like bcc's trace (TIME PID TID COMM FUNC
// MESSAGE) with an optional symbolized user stack, or JSON Lines with stable field names.
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/trace.h"
#include "plan/planner.h"
#include "symbolize/symbolizer.h"

namespace uscope {

// A decoded event field: a number or a string.
struct FieldValue {
  bool is_string = false;
  uint64_t number = 0;
  std::string text;
  bool late = false;        // read from the live process after the event (see below)
  bool unreadable = false;  // not even that worked: shown empty
};

// Reads a string the BPF side could not (a page the process had not touched yet): `len` bytes at
// `addr`, or up to the NUL when not `exact`; nullopt when that fails too.
using LateStringReader =
    std::function<std::optional<std::string>(uint64_t addr, uint32_t len, bool exact)>;

// Decodes the payload of an event by the probe's output fields; stops at truncated data.
// Deferred strings (TRACE_STR_DEFERRED) go through `late_read`, or stay unreadable without one.
std::vector<FieldValue> decode_fields(const ProbePlan& probe, std::span<const uint8_t> data,
                                      const LateStringReader& late_read = {});
// printf-style rendering of `probe.spec.format` with the decoded values.
std::string format_message(const ProbePlan& probe, const std::vector<FieldValue>& values);
// Bytes shown to a person: printable ASCII kept, the rest as \xNN.
std::string printable_bytes(std::string_view s);

class TraceOutput {
 public:
  enum class Format { Text, JsonLines };
  TraceOutput(const TracePlan& plan, Format format, std::FILE* out = stdout);
  void header();
  void event(const uscope_event& ev, std::span<const uint8_t> data,
             const std::vector<Frame>* stack);
  uint64_t events() const { return events_; }
  uint64_t late_strings() const { return late_strings_; }
  uint64_t unreadable_strings() const { return unreadable_strings_; }

 private:
  std::string wall_time(uint64_t ktime_ns) const;
  const TracePlan& plan_;
  Format format_;
  std::FILE* out_;
  int64_t realtime_minus_monotonic_ns_ = 0;
  uint64_t events_ = 0;
  uint64_t late_strings_ = 0;
  uint64_t unreadable_strings_ = 0;
};

}  // namespace uscope
