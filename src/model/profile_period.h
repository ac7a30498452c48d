#pragma once
// A continuous profile's periods out of the cumulative profiles a profiling session reads (the
// kernel's counts only grow, so `profile` and `top` read everything since the start): what one
// period added, one process's share of it, and a cap on how many stacks a period keeps.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/profile.h"

namespace uscope {

// What `now` counted that `before` (an earlier snapshot of the same session) had not: each
// stack's samples less its samples in `before`, stacks left with none dropped, every loss less
// its count in `before`; the time span is the one between the two snapshots. Stacks are matched
// by process, thread, name, stack states and each frame's kind and address, never by the
// profiles' table indices or names (a frame named in one snapshot and not in the other is the
// same frame). A `before` that is empty or from another session (another start) counts for
// nothing: the whole of `now` is the period.
Profile profile_delta(const Profile& now, const Profile& before);

// The samples at `indices` (in that order) with only the mappings, functions and locations they
// use, renumbered; the time span and settings of `p`, no losses.
Profile profile_subset(const Profile& p, std::span<const size_t> indices);

// One profile per process (ascending PID), each holding only what its samples use; the losses
// stay with the whole (a loss is not known by process).
std::vector<Profile> split_by_process(const Profile& p);

struct StackCap {
  uint64_t stacks_dropped = 0;
  uint64_t samples_dropped = 0;
};

// The loss cap_stacks() records.
inline constexpr const char* kStacksOverLimit = "stacks_over_limit";

// Keeps the `max_stacks` stacks with the most samples (the earlier first among equals), drops the
// rest and adds their samples to p.losses as kStacksOverLimit (present, maybe 0, whenever a cap
// was applied), so that a period's memory and size stay bounded and what was cut is counted.
StackCap cap_stacks(Profile& p, size_t max_stacks);

}  // namespace uscope
