#pragma once
// Rendering of `uscope trace` events: one line per event like bcc's trace (TIME PID TID COMM FUNC
// MESSAGE) with an optional symbolized user stack, or JSON Lines with stable field names.
#include <cstdio>
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
};

// Decodes the payload of an event by the probe's output fields; stops at truncated data.
std::vector<FieldValue> decode_fields(const ProbePlan& probe, std::span<const uint8_t> data);
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

 private:
  std::string wall_time(uint64_t ktime_ns) const;
  const TracePlan& plan_;
  Format format_;
  std::FILE* out_;
  int64_t realtime_minus_monotonic_ns_ = 0;
  uint64_t events_ = 0;
};

}  // namespace uscope
