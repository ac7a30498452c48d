#pragma once
// What a managed runtime's cheap probes count (bcc's ustat): collections and the time they take,
// threads started and ended, classes loaded, exceptions. `uscope stat` prints it per interval, the
// agent exports it as counters. Collections pair begin and end per thread and phase (GcPairing);
// a runtime's phases nest (Ruby sweeps inside a mark), so GC time is the time any phase of a
// thread is open, counted once.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "model/runtime_gc.h"
#include "plan/runtime.h"

namespace uscope {

struct RuntimeCounts {
  uint64_t gcs = 0, gc_ns = 0, threads_started = 0, threads_ended = 0, classes = 0, exceptions = 0;
  void add(const RuntimeCounts& o);
};

class RuntimeCounter {
 public:
  // The phase a collection is counted at (Ruby's "mark": it marks once per collection and sweeps
  // lazily in several steps); "" when the probes mark whole collections.
  explicit RuntimeCounter(std::string gc_unit) : gc_unit_(std::move(gc_unit)) {}
  // The phase `plan`'s runtime counts collections at.
  static std::string gc_unit_of(const RuntimePlan& plan);

  // A probe of `event` (its phase) fired on thread (pid, tid) at `ns` (CLOCK_MONOTONIC).
  void add(RuntimeEvent event, std::string_view phase, uint32_t pid, uint32_t tid, uint64_t ns);
  // An event of `plan`'s probes; false for one of no probe of it (left out).
  bool add(const RuntimePlan& plan, const DecodedEvent& ev);
  // What was counted since the last take(), and from then on the next interval.
  RuntimeCounts take();
  // Everything counted, this interval included.
  RuntimeCounts total() const;
  const GcPairing& gc() const { return gc_; }

 private:
  struct Open {
    uint32_t depth = 0;
    uint64_t since = 0;
  };
  std::string gc_unit_;
  GcPairing gc_;
  std::map<uint64_t, Open> open_;  // per thread (pid << 32 | tid): GC phases open
  RuntimeCounts now_, taken_;
};

}  // namespace uscope
