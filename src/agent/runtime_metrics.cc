#include "agent/runtime_metrics.h"

#include <string>

namespace uscope {

RuntimeMetrics::RuntimeMetrics(const RuntimePlan& plan)
    : plan_(plan), counter_(RuntimeCounter::gc_unit_of(plan)) {}

bool RuntimeMetrics::event(const DecodedEvent& ev, const EventStacks&) {
  if (!counter_.add(plan_, ev)) return false;
  ++events_;
  return true;
}

void RuntimeMetrics::snapshot(MetricsSnapshot& out, const MetricAttributes& resource) const {
  const RuntimeCounts t = counter_.total();
  MetricAttributes attrs = resource;
  attrs.emplace_back("process.runtime.name", std::string(plan_.runtime->name));
  auto counter = [&](const char* name, const char* unit, const char* what, double v) {
    out.add_value(name, MetricKind::Counter, unit, what, v, attrs);
  };
  counter("uscope.runtime.gc.collections", "{collection}",
          "Garbage collections that ended since the agent attached (Ruby: its mark phases).",
          static_cast<double>(t.gcs));
  counter("uscope.runtime.gc.duration", "s",
          "Time the runtime's threads spent collecting (any phase open), since the agent "
          "attached.",
          static_cast<double>(t.gc_ns) / 1e9);
  if (plan_.marks(RuntimeEvent::ThreadStart))
    counter("uscope.runtime.threads.started", "{thread}", "Threads the runtime started.",
            static_cast<double>(t.threads_started));
  if (plan_.marks(RuntimeEvent::ThreadEnd))
    counter("uscope.runtime.threads.ended", "{thread}", "Threads the runtime saw end.",
            static_cast<double>(t.threads_ended));
  if (plan_.marks(RuntimeEvent::ClassLoad))
    counter("uscope.runtime.classes.loaded", "{class}", "Classes the runtime loaded.",
            static_cast<double>(t.classes));
  if (plan_.marks(RuntimeEvent::Exception))
    counter("uscope.runtime.exceptions", "{exception}", "Exceptions the program raised.",
            static_cast<double>(t.exceptions));
}

}  // namespace uscope
