#pragma once
// `uscope stat` on a managed runtime (bcc's ustat): per interval, what the runtime's cheap probes
// mark: collections and their time, threads started and ended, classes loaded, exceptions
// raised; a column the runtime has no probe for shows "-". Then the totals and every loss.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model/runtime_stat.h"
#include "model/trace_totals.h"
#include "plan/runtime.h"
#include "sink/event_sink.h"
#include "sink/output_format.h"
#include "util/output_buffer.h"

namespace uscope {

class RuntimeStatOutput : public SummarizingSink {
 public:
  RuntimeStatOutput(const RuntimePlan& plan, OutputFormat format, OutputBuffer& out);
  void header() override;
  bool event(const DecodedEvent& ev, const EventStacks& stacks) override;
  uint64_t events() const override { return events_; }
  // Interval lines stand for no event each: nothing a stop drops is an event.
  uint64_t events_in(std::string_view) const override { return 0; }
  void interval() override;
  std::string summary(const TraceTotals& t, std::string_view stop) const override;

 private:
  // A tally's JSON keys: gc and gc_ns, and the columns the runtime has probes for.
  nlohmann::json json_of(const RuntimeCounts& t) const;

  const RuntimePlan& plan_;
  bool json_;
  OutputBuffer& out_;
  RuntimeCounter counter_;
  uint64_t events_ = 0, intervals_ = 0;
};

}  // namespace uscope
