#pragma once
// Where the trace job (cli/trace_job.h) hands each decoded event: `trace`'s lines (TraceOutput)
// or a runtime tool's (gc's collections, threads' starts and ends), written into the session's
// output buffer.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/decoded_event.h"
#include "model/trace_totals.h"
#include "symbolize/symbolizer.h"

namespace uscope {

// The symbolized stacks of one event; nullptr when not captured.
struct EventStacks {
  const std::vector<Frame>* user = nullptr;
  const std::vector<Frame>* kernel = nullptr;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  // Before the target starts.
  virtual void header() = 0;
  // False when the sink left the event out on purpose (counted in message_filtered()).
  virtual bool event(const DecodedEvent& ev, const EventStacks& stacks) = 0;
  // Events taken so far (written, or held for a record that is written once complete).
  virtual uint64_t events() const = 0;
  virtual uint64_t message_filtered() const { return 0; }
  // How many events `bytes` (whole records this sink appended) stand for: what a stop drops.
  virtual uint64_t events_in(std::string_view bytes) const = 0;
};

// A sink that ends with a summary of what it took: the runtime tools' (gc, threads).
class SummarizingSink : public EventSink {
 public:
  // The totals and every loss, `stop` saying why the session ended: text for stderr, or the
  // JSON Lines summary object for the output.
  virtual std::string summary(const TraceTotals& t, std::string_view stop) const = 0;
  // At each -i, once every event so far has been taken: a tool that reports per interval
  // writes its line.
  virtual void interval() {}
};

}  // namespace uscope
