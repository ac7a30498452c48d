#pragma once
// `uscope gc`'s output (bcc's ugc): one line per collection as it ends (its time, process,
// thread, duration, kind and what the runtime said), or a JSON object per collection; then the
// totals by kind and every loss. Collections shorter than -m are counted, not shown.
#include <cstdint>
#include <string>
#include <string_view>

#include "model/runtime_gc.h"
#include "model/trace_totals.h"
#include "plan/runtime.h"
#include "sink/event_sink.h"
#include "sink/output_format.h"
#include "util/output_buffer.h"

namespace uscope {

class GcOutput : public SummarizingSink {
 public:
  GcOutput(const RuntimePlan& plan, OutputFormat format, OutputBuffer& out, uint64_t min_ns = 0);
  void header() override;
  bool event(const DecodedEvent& ev, const EventStacks& stacks) override;
  uint64_t events() const override { return events_; }
  // A line is a collection: its begin and its end.
  uint64_t events_in(std::string_view bytes) const override;

  const GcPairing& pairing() const { return pairing_; }
  uint64_t shorter() const { return shorter_; }  // under -m: counted, not shown
  std::string summary(const TraceTotals& t, std::string_view stop) const override;

 private:
  void line(const GcCollection& c);

  const RuntimePlan& plan_;
  bool json_;
  OutputBuffer& out_;
  uint64_t min_ns_;
  GcPairing pairing_;
  int64_t realtime_minus_monotonic_ns_ = 0;
  uint64_t events_ = 0, shorter_ = 0;
};

}  // namespace uscope
