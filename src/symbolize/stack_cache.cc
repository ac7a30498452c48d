#include "symbolize/stack_cache.h"

#include <algorithm>
#include <cstring>

namespace uscope {
namespace {

// Names that can change while the process runs are not kept: JIT code (a perf map names it, and
// the same address holds other code once the JIT reuses it) and memory no file backs that has no
// name yet (its perf-map line may be written later). Files' names and misses do not change.
bool may_change(const Frame& f) {
  if (f.origin == SymbolOrigin::PerfMap) return true;
  return f.miss == FrameMiss::NoSymbols && (f.object.empty() || f.object.front() != '/');
}

}  // namespace

const std::vector<Frame>& StackSymbolCache::frames(Symbolizer& symbolizer, pid_t pid,
                                                   std::span<const uint64_t> addresses) {
  std::string key(sizeof pid + addresses.size_bytes(), '\0');
  std::memcpy(key.data(), &pid, sizeof pid);
  if (!addresses.empty())
    std::memcpy(key.data() + sizeof pid, addresses.data(), addresses.size_bytes());
  if (auto it = stacks_.find(key); it != stacks_.end()) return it->second;
  std::vector<Frame> frames = symbolizer.symbolize(pid, addresses, true);
  if (std::any_of(frames.begin(), frames.end(), may_change)) {
    uncached_ = std::move(frames);
    return uncached_;
  }
  if (stacks_.size() >= max_stacks_) stacks_.clear();
  return stacks_.emplace(std::move(key), std::move(frames)).first->second;
}

}  // namespace uscope
