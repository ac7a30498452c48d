#pragma once
// What is known of some probes beyond their notes in the ELF: a probe the program leaves off
// unless started with a flag, or one that fires for only part of what its name suggests. Said
// once when a session starts, so that 0 events is not taken for "no calls".
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plan/planner.h"

namespace uscope {

struct ProbeNote {
  std::string_view provider;  // USDT provider ("hotspot")
  std::string_view probe;     // probe name ("method__entry")
  std::string_view object;    // text the object's path holds ("python3.11"); "" = any object
  // Flags any of which turns the probe on, shown on the program's command line when given;
  // empty: the note holds whatever the program was started with.
  std::span<const std::string_view> flags;
  std::string_view note;  // what the user should know, after "provider:probe "
};

// The table (data, not code: a new runtime's quirk is a row).
std::span<const ProbeNote> known_probe_notes();

// The notes of the USDT probes among `sites`, each probe once in site order, as lines to print
// ("hotspot:method__entry fires only ..."). `command_line`: the traced program's, when known; a
// note whose flag it shows is left out, and one whose flag it lacks says so of `who` ("the
// command line of process 42").
std::vector<std::string> probe_notes(std::span<const PlannedSite> sites,
                                     const std::optional<std::string>& command_line,
                                     std::string_view who);

}  // namespace uscope
