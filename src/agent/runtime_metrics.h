#pragma once
// The agent's metrics of a managed runtime (`metrics.runtime`): what `uscope stat` counts of a
// Java, Python or Ruby process (model/runtime_stat.h), from the events of its cheap probes,
// exported as counters since the agent attached.
#include <cstdint>
#include <string_view>

#include "model/metrics.h"
#include "model/runtime_stat.h"
#include "plan/runtime.h"
#include "sink/event_sink.h"

namespace uscope {

class RuntimeMetrics : public EventSink {
 public:
  explicit RuntimeMetrics(const RuntimePlan& plan);
  void header() override {}
  bool event(const DecodedEvent& ev, const EventStacks& stacks) override;
  uint64_t events() const override { return events_; }
  uint64_t events_in(std::string_view) const override { return 0; }  // it writes nothing

  // Its counters, under `resource` and the runtime's name (process.runtime.name); a counter the
  // runtime has no probe for is left out, not shown as 0.
  void snapshot(MetricsSnapshot& out, const MetricAttributes& resource) const;

 private:
  const RuntimePlan& plan_;
  RuntimeCounter counter_;
  uint64_t events_ = 0;
};

}  // namespace uscope
