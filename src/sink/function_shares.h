#pragma once
// The samples of a profile by function, as the top tables read them (`uscope profile`'s Text
// format, `uscope top`): SELF counts samples whose leaf is the function; TOTAL counts samples with
// the function anywhere on the stack, once per sample however deep it recurses. A function is a
// (frame label, module) pair; a sample without any frame counts as "[no stack]", so that the
// shares add up.
#include <cstdint>
#include <string>
#include <vector>

#include "model/profile.h"

namespace uscope {

struct FunctionShare {
  std::string function, module;
  uint64_t self = 0, total = 0;
};

// One entry per function of `profile`, in no particular order.
std::vector<FunctionShare> function_shares(const Profile& profile);

// n of total as a percentage rounded down to the 0.1 shown: a function on all but a few samples
// never reads 100.0%. 0 when total is 0.
double share_percent(uint64_t n, uint64_t total);

}  // namespace uscope
