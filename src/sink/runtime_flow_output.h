#pragma once
// `uscope flow`'s output (bcc's uflow): each call of a managed runtime's methods as it is entered
// and as it returns, indented by its depth on the thread, the return with the call's time; or a
// JSON object per event; then the totals and every loss. A glob over the method's name keeps the
// calls shown (the others are counted as left out).
#include <cstdint>
#include <string>
#include <string_view>

#include "model/trace_totals.h"
#include "plan/runtime.h"
#include "sink/event_sink.h"
#include "sink/output_format.h"
#include "util/output_buffer.h"

namespace uscope {

class FlowOutput : public SummarizingSink {
 public:
  FlowOutput(const RuntimePlan& plan, OutputFormat format, OutputBuffer& out, std::string glob);
  void header() override;
  bool event(const DecodedEvent& ev, const EventStacks& stacks) override;
  uint64_t events() const override { return entries_ + returns_; }
  uint64_t message_filtered() const override { return left_out_; }
  uint64_t events_in(std::string_view bytes) const override;
  std::string summary(const TraceTotals& t, std::string_view stop) const override;

  uint64_t entries() const { return entries_; }
  uint64_t returns() const { return returns_; }

 private:
  const RuntimePlan& plan_;
  bool json_;
  OutputBuffer& out_;
  std::string glob_;
  int64_t realtime_minus_monotonic_ns_ = 0;
  uint64_t entries_ = 0, returns_ = 0, left_out_ = 0;
};

// The method's name from a call probe's values: its first `key` parts (RuntimeProbe::key),
// joined as the runtime does; "" when the probe has no key.
std::string call_name(const Runtime& rt, const RuntimeProbe& p,
                      std::span<const DecodedValue> values);

}  // namespace uscope
