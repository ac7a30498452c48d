#include "sink/event_loss_output.h"

namespace uscope {

void add_event_losses(LossList& list, const EventLosses& l) {
  list.add(l.ring_lost, "lost (ring buffer full)");
  list.add(l.no_entry,
           "returns without a recorded entry (calls begun before the probes were all in)");
  list.add(l.entry_save_failed, "entries not recorded (entries map full)");
  list.add(l.malformed, "events malformed");
  list.add(l.output_dropped, "not written (output too slow at the stop)");
  list.add(l.read_errors, "fields unreadable (shown empty or 0)");
  list.add(l.truncated, "with a string cut short");
  list.add(l.agg_full, "not counted (aggregation map full)");
}

nlohmann::json event_losses_json(const EventLosses& l) {
  return {{"ring_lost", l.ring_lost},
          {"returns_without_entry", l.no_entry},
          {"entry_save_failed", l.entry_save_failed},
          {"malformed", l.malformed},
          {"output_dropped", l.output_dropped},
          {"read_errors", l.read_errors},
          {"truncated_strings", l.truncated},
          {"aggregation_map_full", l.agg_full}};
}

}  // namespace uscope
