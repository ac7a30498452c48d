#pragma once
// The losses every event command reports (collect/event_losses.h), in its text summary's loss
// phrase and under its JSON summary's "losses", with the same names everywhere.
#include <nlohmann/json.hpp>

#include "model/event_losses.h"
#include "sink/loss_list.h"

namespace uscope {

// Adds each loss that is not zero, with what it counts.
void add_event_losses(LossList& list, const EventLosses& l);
// {"ring_lost": .., "returns_without_entry": .., "entry_save_failed": .., "malformed": ..,
//  "output_dropped": .., "read_errors": .., "truncated_strings": ..}
nlohmann::json event_losses_json(const EventLosses& l);

}  // namespace uscope
