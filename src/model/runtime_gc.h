#pragma once
// A managed runtime's collections as `uscope gc` sees them (bcc's ugc): each begin probe paired
// with the next end probe of the same phase on the same thread, with what each said; totals by
// kind; what could not be paired counted, never guessed.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace uscope {

struct GcCollection {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string phase;      // "" for a whole collection; "mark", "sweep" for a runtime's phases
  std::string kind;       // what the begin probe said ("generation 2", "full"), or the phase
  std::string said;       // what the end probe said ("14 collected"); "" when nothing
  uint64_t begin_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  uint64_t duration_ns() const { return end_ns - begin_ns; }
};

struct GcKindTotal {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
};

class GcPairing {
 public:
  // A begin: held until the end of the same phase on the same thread. A second begin before it
  // replaces it, counted (unmatched_begins).
  void begin(uint32_t pid, uint32_t tid, const std::string& phase, uint64_t ns, std::string kind);
  // An end: the collection it closes, added to the totals; nullopt for an end whose begin was not
  // seen (the collection had begun before the probes went in), counted.
  std::optional<GcCollection> end(uint32_t pid, uint32_t tid, const std::string& phase, uint64_t ns,
                                  std::string said);

  // By kind, in name order.
  const std::map<std::string, GcKindTotal>& totals() const { return totals_; }
  uint64_t collections() const;
  uint64_t unmatched_ends() const { return unmatched_ends_; }
  uint64_t unmatched_begins() const { return unmatched_begins_; }
  // Begun and not ended when the session stopped.
  size_t open() const { return open_.size(); }

 private:
  struct Key {
    uint32_t pid, tid;
    std::string phase;
    auto operator<=>(const Key&) const = default;
  };
  struct Begun {
    uint64_t ns;
    std::string kind;
  };
  std::map<Key, Begun> open_;
  std::map<std::string, GcKindTotal> totals_;
  uint64_t unmatched_ends_ = 0, unmatched_begins_ = 0;
};

}  // namespace uscope
