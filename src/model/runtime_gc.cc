#include "model/runtime_gc.h"

#include <algorithm>

namespace uscope {

void GcPairing::begin(uint32_t pid, uint32_t tid, const std::string& phase, uint64_t ns,
                      std::string kind) {
  auto [it, fresh] = open_.try_emplace(Key{pid, tid, phase}, Begun{ns, std::move(kind)});
  if (!fresh) {
    ++unmatched_begins_;
    it->second = Begun{ns, std::move(kind)};
  }
}

std::optional<GcCollection> GcPairing::end(uint32_t pid, uint32_t tid, const std::string& phase,
                                           uint64_t ns, std::string said) {
  auto it = open_.find(Key{pid, tid, phase});
  if (it == open_.end() || ns < it->second.ns) {
    ++unmatched_ends_;
    return std::nullopt;
  }
  GcCollection c;
  c.pid = pid;
  c.tid = tid;
  c.phase = phase;
  c.kind = it->second.kind.empty() ? (phase.empty() ? "collection" : phase) : it->second.kind;
  c.said = std::move(said);
  c.begin_ns = it->second.ns;
  c.end_ns = ns;
  open_.erase(it);
  GcKindTotal& t = totals_[c.kind];
  ++t.count;
  t.total_ns += c.duration_ns();
  t.max_ns = std::max(t.max_ns, c.duration_ns());
  return c;
}

uint64_t GcPairing::collections() const {
  uint64_t n = 0;
  for (const auto& [kind, t] : totals_) n += t.count;
  return n;
}

}  // namespace uscope
