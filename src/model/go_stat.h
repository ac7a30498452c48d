#pragma once
// `uscope stat`'s model of a Go program's runtime: goroutines created and exited, GC cycles and
// stop-the-world pauses, per interval and in total. Pure: the counts come from the kernel's
// counters (plan/go_stat_plan.h), the pauses from the times of the stop and start events, the
// live goroutines from a census of the target's memory (collect/go_goroutines.h).
#include <cstdint>
#include <map>
#include <optional>

#include "model/duration_histogram.h"

namespace uscope {

struct GoroutineCount {
  uint64_t user = 0;    // what runtime.NumGoroutine() says
  uint64_t system = 0;  // the runtime's own (GC workers, sweeper, scavenger, finalizers...)
};

// What the kernel has counted since the probes went in.
struct GoRuntimeCounts {
  uint64_t created = 0;    // goroutines (runtime.newproc1)
  uint64_t exited = 0;     // goroutines (runtime.goexit0)
  uint64_t gc_cycles = 0;  // completed (runtime.gcMarkTermination)
};

// One interval.
struct GoStatInterval {
  double seconds = 0;
  GoRuntimeCounts counts;  // within the interval
  uint64_t pauses = 0;     // stop-the-world pauses that ended within it
  uint64_t pause_ns = 0;   // their total
  uint64_t pause_max_ns = 0;
  std::optional<GoroutineCount> live;  // at its end; nullopt when unknown
};

// What the session lost or could not pair, each on its own.
struct GoStatLosses {
  uint64_t ring_lost = 0;         // stop/start events the ring buffer had no room for
  uint64_t unmatched_starts = 0;  // a start without its stop (the pause began before the probes)
  uint64_t open_pauses = 0;       // a stop without its start at the end (a pause in progress)
  uint64_t census_failures = 0;   // intervals whose live goroutines could not be read
  uint64_t malformed = 0;         // events that did not decode
  uint64_t unread = 0;            // events written but not read by the end
};

class GoRuntimeStats {
 public:
  // The world of process `tgid` stopped (entry of stopTheWorldWithSema) / restarted (entry of
  // startTheWorldWithSema) at `ts_ns`. A pause is the time from one to the other.
  void world_stopped(uint32_t tgid, uint64_t ts_ns);
  void world_started(uint32_t tgid, uint64_t ts_ns);
  // Ends an interval of `seconds`: `total` is the kernel's counts since the start.
  GoStatInterval end_interval(const GoRuntimeCounts& total, std::optional<GoroutineCount> live,
                              double seconds);

  const GoRuntimeCounts& totals() const { return totals_; }
  const DurationHistogram& pauses() const { return pauses_; }
  double seconds() const { return seconds_; }
  const std::optional<GoroutineCount>& first_live() const { return first_live_; }
  const std::optional<GoroutineCount>& last_live() const { return last_live_; }
  // Pauses still open now (stops without a start).
  uint64_t open_pauses() const { return stopped_at_.size(); }
  uint64_t unmatched_starts() const { return unmatched_starts_; }

 private:
  std::map<uint32_t, uint64_t> stopped_at_;  // tgid -> ts of the stop
  DurationHistogram pauses_;
  uint64_t unmatched_starts_ = 0;
  // The pauses since the last interval ended.
  uint64_t interval_pauses_ = 0, interval_pause_ns_ = 0, interval_pause_max_ns_ = 0;
  GoRuntimeCounts totals_;
  double seconds_ = 0;
  std::optional<GoroutineCount> first_live_, last_live_;
};

}  // namespace uscope
