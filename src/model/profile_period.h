#pragma once
// A continuous profile's periods (ProfileSession::period(), from the kernel's cumulative counts
// by collect/stack_samples.h's StackPeriods): a subset of a profile's samples, one process's
// share of it, and a cap on how many stacks a period keeps.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/profile.h"

namespace uscope {

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
