#pragma once
// User stacks symbolized once each: trace -U sees the same few call paths in event after event,
// so a stack's frames are kept by (pid, addresses) and a repeat costs one hash lookup.
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "symbolize/symbolizer.h"

namespace uscope {

class StackSymbolCache {
 public:
  // Beyond `max_stacks` distinct stacks the cache starts over, which bounds its memory.
  explicit StackSymbolCache(size_t max_stacks = 16384) : max_stacks_(max_stacks) {}

  // The frames of a user stack (the IP first, then return addresses), symbolized through
  // `symbolizer` the first time the stack is seen. Valid until the next call.
  const std::vector<Frame>& frames(Symbolizer& symbolizer, pid_t pid,
                                   std::span<const uint64_t> addresses);
  size_t size() const { return stacks_.size(); }

 private:
  size_t max_stacks_;
  std::unordered_map<std::string, std::vector<Frame>> stacks_;  // pid + addresses, as bytes
  std::vector<Frame> uncached_;
};

}  // namespace uscope
