#pragma once
// Rendering of `uscope trace` events: one line per event in bcc trace's columns ([TIME] [CPU] PID
// TID COMM FUNC -, the message under "-") with optional symbolized kernel and user stacks, or JSON
// Lines with stable field names (every field, whatever the columns).
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

#include "model/decoded_event.h"
#include "model/overhead.h"
#include "model/trace_totals.h"
#include "plan/planner.h"
#include "sink/event_sink.h"
#include "sink/message_format.h"
#include "sink/output_format.h"
#include "symbolize/symbolizer.h"
#include "util/output_buffer.h"

namespace uscope {

// printf-style rendering of `probe.spec.format` with decoded values (one-off use: tests, tools).
std::string format_message(const ProbePlan& probe, std::span<const DecodedValue> values);
// Bytes shown to a person: printable ASCII kept, the rest as \xNN.
std::string printable_bytes(std::string_view s);

// What the text lines show, as bcc trace's options set it.
struct TraceColumns {
  enum class Time {
    None,
    Clock,       // -T: HH:MM:SS, local time of the event
    SinceStart,  // -t: seconds since the output was created (the trace start)
    Unix,        // -t -u: seconds since the epoch
  };
  Time time = Time::None;
  bool cpu = false;            // -C
  bool addresses = false;      // -a: each stack frame's address before its symbol
  bool stacks = false;         // -U or -K: events are followed by their stacks and an empty line
  std::string message_filter;  // -f: only events whose message contains it
};

// The text summary uscope prints on stderr after a trace; `stop` says why the session ended.
std::string trace_text_summary(const TraceTotals& t, std::string_view stop);

class TraceOutput : public EventSink {
 public:
  // Text lines, or JSON Lines for OutputFormat::Json.
  TraceOutput(const TracePlan& plan, OutputFormat format, OutputBuffer& out,
              TraceColumns columns = {});
  // Before the target starts: -t counts from here.
  void header() override;
  // False when -f left the event out (counted in message_filtered()).
  bool event(const DecodedEvent& ev, const EventStacks& stacks = {}) override;

  // What goes on the output after the events: the summary's JSON object in JSON Lines; nothing in
  // text, whose summary goes to stderr (trace_text_summary).
  std::string summary(const TraceTotals& t, size_t sites, std::string_view stop,
                      const Overhead& overhead) const;

  uint64_t events() const override { return events_; }
  uint64_t message_filtered() const override { return message_filtered_; }
  // Strings shown with a trailing "…" (cut by the BPF side or at a late read).
  uint64_t truncated_strings() const { return truncated_strings_; }
  // How many events `bytes` (whole records this output appended) hold: counts what a stop drops.
  uint64_t events_in(std::string_view bytes) const override;

 private:
  struct ProbeText {
    MessageFormat message;
    std::string text_label;  // FUNC column, padded
    size_t label_len = 0;    // without the padding: a line without a message ends there
    std::string json_head;   // ,"probe":"...","function":"...","message":
  };
  void read_clocks();
  void time_column(uint64_t ktime_ns);
  void wall_time(uint64_t ktime_ns);
  void stack_lines(const std::vector<Frame>& frames);
  void text_event(const DecodedEvent& ev, const ProbeText& probe, const EventStacks& stacks);
  void json_event(const DecodedEvent& ev, const ProbeText& probe, const EventStacks& stacks);

  bool json_;
  OutputBuffer& out_;
  TraceColumns columns_;
  bool any_message_ = false;  // some probe has a format: the header's message column is "-"
  std::vector<ProbeText> probes_;
  OutputBuffer message_;  // scratch: a message is rendered here, then filtered or escaped
  int64_t realtime_minus_monotonic_ns_ = 0;
  uint64_t start_ns_ = 0;       // CLOCK_MONOTONIC (bpf_ktime_get_ns) at construction, for -t
  int64_t cached_second_ = -1;  // localtime_r runs at most once per second of event time
  char cached_hms_[8] = {};
  uint64_t events_ = 0;
  uint64_t message_filtered_ = 0;
  uint64_t truncated_strings_ = 0;
};

}  // namespace uscope
