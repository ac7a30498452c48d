#pragma once
// Rendering of `uscope trace` events: one line per event like bcc's trace (TIME PID TID COMM FUNC
// MESSAGE) with an optional symbolized user stack, or JSON Lines with stable field names.
//
// Events are formatted straight into an OutputBuffer with the hand-written pieces of
// text_writer.h and message_format.h: in steady state an event costs no allocation and no call of
// a libc function a user may be probing (malloc, free, memcpy, str*), so that a system-wide probe
// of those does not make uscope feed on itself, and a million events a second fit in one core.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collect/decoded_event.h"
#include "plan/planner.h"
#include "sink/message_format.h"
#include "symbolize/symbolizer.h"
#include "util/output_buffer.h"

namespace uscope {

// printf-style rendering of `probe.spec.format` with decoded values (one-off use: tests, tools).
std::string format_message(const ProbePlan& probe, std::span<const DecodedValue> values);
// Bytes shown to a person: printable ASCII kept, the rest as \xNN.
std::string printable_bytes(std::string_view s);

class TraceOutput {
 public:
  enum class Format { Text, JsonLines };
  // `with_stacks`: events carry a user stack (-U), shown under the text line.
  TraceOutput(const TracePlan& plan, Format format, OutputBuffer& out, bool with_stacks = false);
  void header();
  // `stack`: the symbolized user stack when -U captured one (nullptr when not captured).
  void event(const DecodedEvent& ev, const std::vector<Frame>* stack);

  uint64_t events() const { return events_; }
  // Strings shown with a trailing "…" (cut by the BPF side or at a late read).
  uint64_t truncated_strings() const { return truncated_strings_; }
  // How many events `bytes` (whole records this output appended) hold: counts what a stop drops.
  uint64_t events_in(std::string_view bytes) const;

 private:
  struct ProbeText {
    MessageFormat message;
    std::string text_label;  // FUNC column, padded
    std::string json_head;   // ,"probe":"...","function":"...","message":
  };
  void wall_time(uint64_t ktime_ns);
  void text_event(const DecodedEvent& ev, const ProbeText& probe, const std::vector<Frame>* stack);
  void json_event(const DecodedEvent& ev, const ProbeText& probe, const std::vector<Frame>* stack);

  Format format_;
  OutputBuffer& out_;
  bool with_stacks_;
  std::vector<ProbeText> probes_;
  OutputBuffer message_;  // scratch: a message is rendered here, then escaped for JSON
  int64_t realtime_minus_monotonic_ns_ = 0;
  int64_t cached_second_ = -1;  // localtime_r runs at most once per second of event time
  char cached_hms_[8] = {};
  uint64_t events_ = 0;
  uint64_t truncated_strings_ = 0;
};

}  // namespace uscope
